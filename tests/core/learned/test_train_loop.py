"""The shared training loop with a model it knows nothing about: losses, split, early stopping,
best-state restore, determinism, and the generic checkpoint files."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grapher_core.errors import CheckpointError, GraphERError  # noqa: E402
from grapher_core.learned.loop import (  # noqa: E402
    LoopConfig,
    fit,
    pr_at_k,
    predict,
    ranking_loss,
    split_examples,
    targets_for,
)
from grapher_core.learned.weights import load_state, read_weights, write_weights  # noqa: E402


@dataclass(frozen=True)
class Toy:
    """A candidate list whose gold items carry a signal in feature 0 (hidden by noise)."""

    group: str
    features: np.ndarray  # (n, 3)
    labels: np.ndarray  # (n,)
    n_gold: int


class ToyAdapter:
    def collate(self, examples: Sequence[Toy], device: str) -> Any:
        return torch.from_numpy(np.concatenate([e.features for e in examples])).to(device)

    def forward(self, model: Any, batch: Any) -> Any:
        return model(batch).squeeze(-1)


def _toys(n_queries: int = 40, n: int = 8, seed: int = 0) -> list[Toy]:
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n_queries):
        labels = np.zeros(n, dtype=np.float32)
        gold = rng.choice(n, size=2, replace=False)
        labels[gold] = 1.0
        features = rng.normal(size=(n, 3)).astype(np.float32)
        features[:, 0] += 2.0 * labels  # learnable, but the untrained order is random
        out.append(Toy(f"g{q % 10}", features, labels, 2))
    return out


def _logits(values: list[list[float]]) -> torch.Tensor:
    return torch.tensor([v for row in values for v in row], dtype=torch.float32)


def _toy_labels(rows: list[list[float]]) -> list[Toy]:
    return [
        Toy("g", np.zeros((len(r), 3), np.float32), np.asarray(r, np.float32), int(sum(r)))
        for r in rows
    ]


def test_listwise_loss_is_softmax_cross_entropy_per_query() -> None:
    scores = [[2.0, 0.5, -1.0], [0.0, 1.0], [0.3, 0.1, 0.2, 0.0]]
    labels = [[1.0, 0.0, 1.0], [0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]
    loss = ranking_loss("listwise", _logits(scores), targets_for(_toy_labels(labels), "cpu"))
    expected = 0.0
    for s, y in zip(scores, labels, strict=True):
        log_p = np.asarray(s) - math.log(np.exp(s).sum())
        expected -= float(np.dot(y, log_p))
    assert float(loss) == pytest.approx(expected / 3, rel=1e-6)


def test_pairwise_loss_weighs_every_query_the_same() -> None:
    scores = [[2.0, 0.5, -1.0], [0.0, 1.0]]
    labels = [[1.0, 0.0, 0.0], [1.0, 0.0]]
    loss = ranking_loss("pairwise", _logits(scores), targets_for(_toy_labels(labels), "cpu"))
    first = (max(0, 1 - (2.0 - 0.5)) + max(0, 1 - (2.0 + 1.0))) / 2
    second = max(0, 1 - (0.0 - 1.0))
    assert float(loss) == pytest.approx((first + second) / 2)
    with pytest.raises(ValueError, match="loss must be one of"):
        ranking_loss("hinge", _logits(scores), targets_for(_toy_labels(labels), "cpu"))
    with pytest.raises(ValueError, match="1-D logits for 5"):
        ranking_loss("bce", torch.zeros(4), targets_for(_toy_labels(labels), "cpu"))


def test_split_holds_out_whole_groups() -> None:
    toys = _toys()
    train, val = split_examples(toys, 0.2, 0)
    assert {toys[i].group for i in train}.isdisjoint({toys[i].group for i in val})
    assert sorted(train + val) == list(range(len(toys)))
    with pytest.raises(ValueError, match="at least 2 queries"):
        split_examples(toys[:1], 0.2, 0)


@pytest.mark.parametrize("loss", ["bce", "pairwise", "listwise"])
def test_fit_learns_and_keeps_the_best_epoch(loss: str) -> None:
    toys = _toys()
    config = LoopConfig(
        loss=loss, epochs=6, patience=6, lr=0.05, batch_size=8, device="cpu", metric="PR@2"
    )
    untrained = pr_at_k(toys, [e.features[:, 1] for e in toys], ks=(2,))
    result = fit(
        lambda: torch.nn.Linear(3, 1),
        ToyAdapter(),
        toys,
        config,
        metric=lambda ex, s: pr_at_k(ex, s, ks=(2,)),
    )
    val = [toys[i] for i in result.val_indices]
    again = pr_at_k(val, predict(result.model, ToyAdapter(), val, "cpu"), ks=(2,))
    assert again == result.best_metrics  # the restored weights are the best epoch's
    assert result.best_metrics["PR@2"] == max(row["PR@2"] for row in result.history)
    assert result.best_metrics["PR@2"] > untrained["PR@2"] + 0.3
    assert not result.model.training


def test_fit_stops_early_and_is_deterministic() -> None:
    toys = _toys()
    config = LoopConfig(epochs=10, patience=2, lr=1e-9, batch_size=8, device="cpu", seed=3)
    first = fit(lambda: torch.nn.Linear(3, 1), ToyAdapter(), toys, config)
    assert len(first.history) == 3  # lr ~0: the metric never improves after epoch 1
    second = fit(lambda: torch.nn.Linear(3, 1), ToyAdapter(), toys, config)
    assert torch.equal(first.model.weight, second.model.weight)
    with pytest.raises(ValueError, match="not among"):
        fit(
            lambda: torch.nn.Linear(3, 1),
            ToyAdapter(),
            toys,
            LoopConfig(epochs=1, device="cpu", metric="MRR"),
        )
    with pytest.raises(ValueError, match="loss must be one of"):
        LoopConfig(loss="hinge")


def test_weights_round_trip_and_refuse_other_shapes(tmp_path: Path) -> None:
    model = torch.nn.Linear(3, 1)
    write_weights(model.state_dict(), {"kind": "toy", "in": 3}, tmp_path / "toy")
    state, config = read_weights(tmp_path / "toy.json")
    assert config == {"kind": "toy", "in": 3}
    other = torch.nn.Linear(3, 1)
    load_state(other, state, "toy")
    assert torch.equal(other.weight, model.weight)
    with pytest.raises(CheckpointError, match="toy") as caught:
        load_state(torch.nn.Linear(4, 1), state, "toy")
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, GraphERError)
    with pytest.raises(CheckpointError, match="unexpected"):
        load_state(torch.nn.Linear(3, 1, bias=False), state, "toy")
    (tmp_path / "toy.json").write_text("[1]")
    with pytest.raises(CheckpointError, match="JSON object"):
        read_weights(tmp_path / "toy")


def test_the_untrained_model_is_the_incumbent() -> None:
    """Epoch 0 is scored before any step; a run whose epochs all score worse returns the
    untrained weights (best_epoch 0), never a model worse than its starting point."""
    toys = _toys()
    calls = {"n": 0}

    def metric(val: Sequence[Any], scores: Sequence[np.ndarray]) -> dict[str, float]:
        calls["n"] += 1
        return {"PR@10": 1.0 if calls["n"] == 1 else 0.5}  # epoch 0 best, every later worse

    config = LoopConfig(epochs=3, patience=5, lr=0.1, seed=1, metric="PR@10")
    model = torch.nn.Linear(3, 1)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    result = fit(lambda: model, ToyAdapter(), toys, config, metric=metric)
    assert result.best_epoch == 0
    assert [row["epoch"] for row in result.history] == [0.0, 1.0, 2.0, 3.0]
    for name, value in result.model.state_dict().items():
        assert torch.equal(value.cpu(), start[name])  # trained on "auto": CUDA where there is one


def test_epoch_lines_leave_out_a_metric_no_question_can_have() -> None:
    """Without a multi-gold validation question ``PR@5>1`` is NaN: the line leaves it out."""
    from grapher_core.learned.loop import _epoch_line

    metrics = {"PR@5": 0.8, "PR@5>1": float("nan"), "PR@10": 0.9}
    line = _epoch_line(1, {"loss": 0.5, "seconds": 1.0}, metrics, "PR@5")
    assert "nan" not in line and "PR@5>1" not in line and "PR@10 0.900" in line
