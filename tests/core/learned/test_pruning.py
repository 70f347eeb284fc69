"""Learned soft pruning: trained through the shared loop on a retrieval label, saved as
safetensors + JSON, read back, and used by expansion as a SoftPruner."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from grapher_core.expand import SoftPruner
from grapher_core.learned.caveats import LEARNED_PRUNER_LOSES
from grapher_core.learned.pruner import (
    LearnedPruner,
    PruningExample,
    features,
    train_pruner,
)


def _examples(n_queries: int, seed: int) -> list[PruningExample]:
    """Gold fetched objects lie close to the query, others far: a learnable rule."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n_queries):
        q = rng.normal(size=16)
        gold = q + rng.normal(scale=0.3, size=(2, 16))
        other = rng.normal(size=(4, 16))
        objects = np.vstack([gold, other])
        out.append(
            PruningExample(
                f"q{k}",
                f"g{k % 10}",
                features(q, objects),
                np.array([1, 1, 0, 0, 0, 0], dtype=np.float32),
                2,
            )
        )
    return out


def test_pruner_learns_to_keep_gold_and_round_trips(tmp_path: Path) -> None:
    pruner, metrics = train_pruner(_examples(120, 0), epochs=30, hidden=16, lr=1e-2)
    assert metrics["auc"] > 0.9 and metrics["neg_bce"] > -0.5
    assert isinstance(pruner, SoftPruner)
    gold, other = [], []
    rng = np.random.default_rng(2)
    for _ in range(30):
        q = rng.normal(size=16)
        a = pruner.alphas(
            q, np.vstack([q + rng.normal(scale=0.3, size=(2, 16)), rng.normal(size=(4, 16))])
        )
        assert a.shape == (6,) and np.all((a >= 0) & (a <= 1))
        gold.extend(a[:2])
        other.extend(a[2:])
    assert np.mean(gold) > np.mean(other) + 0.2
    pruner.save(tmp_path / "p", trained_on="synthetic")
    from grapher_core.utils import callsite

    callsite._said.discard(LEARNED_PRUNER_LOSES)
    with pytest.warns(UserWarning, match="below expansion without pruning"):
        loaded = LearnedPruner(tmp_path / "p")  # loading says what it was measured to cost
    q, objs = np.ones(16), np.eye(16)[:3]
    assert np.allclose(loaded.alphas(q, objs), pruner.alphas(q, objs))
    assert loaded.meta["trained_on"] == "synthetic"
    with pytest.raises(ValueError, match="16-d"):
        loaded.alphas(np.ones(8), np.ones((2, 8)))
    with pytest.raises(ValueError, match="two queries"):
        train_pruner([])
