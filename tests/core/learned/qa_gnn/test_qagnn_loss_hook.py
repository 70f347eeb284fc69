"""The shared loop's ``loss_fn`` hook (used by the query-aware GNN's two stages)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grapher_core.learned.loop import LoopConfig, fit  # noqa: E402


@dataclass(frozen=True)
class Row:
    group: str
    x: np.ndarray  # (n, 2)
    labels: np.ndarray
    n_gold: int


class Adapter:
    def collate(self, items: list[Row], device: str) -> Any:
        return torch.from_numpy(np.concatenate([r.x for r in items])).to(device)

    def forward(self, model: Any, batch: Any) -> Any:
        return model(batch).squeeze(-1)


def test_loss_fn_replaces_the_named_loss() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for q in range(20):
        x = rng.normal(size=(6, 2)).astype(np.float32)
        labels = np.zeros(6, np.float32)
        labels[0] = 1.0
        x[0, 0] += 3.0  # feature 0 finds the gold one
        rows.append(Row(f"g{q}", x, labels, 1))
    calls: list[int] = []

    def push_feature_one(logits: Any, items: list[Row], device: str) -> Any:
        calls.append(len(items))
        # reward the *second* feature's weight only: the named losses would learn feature 0
        return -logits.sum() * 0.0 + sum(-p[0, 1] for p in model_params())

    built: list[Any] = []

    def build() -> Any:
        built.append(torch.nn.Linear(2, 1))
        return built[-1]

    def model_params() -> list[Any]:
        return [built[-1].weight]

    config = LoopConfig(epochs=2, patience=2, lr=0.1, batch_size=5, device="cpu", metric="PR@10")
    result = fit(build, Adapter(), rows, config, loss_fn=push_feature_one)
    assert sum(calls) == 2 * result.n_train  # every training batch of both epochs
    weight = result.model.weight.detach()
    assert weight[0, 1] > weight[0, 0]  # the hook's objective was optimised, not bce/pairwise
