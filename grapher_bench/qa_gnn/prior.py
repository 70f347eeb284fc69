"""``position-prior``: the trivial baseline the qa-gnn gain is measured against.

A logistic regression on two features per candidate, the per-query min-max scaled dense score
and "is the first sentence of its paragraph" (``chunk_index == 0``). On the sentence sets that
prior alone matched qa-gnn's only significant gain, so a learned ranker is credited only for
what it adds above it. It is fitted on exactly the training queries qa-gnn sees in each
protocol part and then scores the test queries, never the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grapher_core.errors import InputError
from grapher_core.learned.qa_gnn.features import fit_logistic
from grapher_core.ranking.seeds import minmax

__all__ = [
    "FEATURES",
    "PositionPrior",
    "first_sentence",
    "fit_logistic",
    "fit_position_prior",
    "position_features",
]

FEATURES = ("dense", "first sentence")


def first_sentence(candidate: Any) -> float:
    """1.0 when the candidate is the first chunk of its document (missing index: 0.0)."""
    metadata = getattr(candidate, "metadata", None) or {}
    value = metadata.get("chunk_index")
    try:
        return 1.0 if value is not None and int(value) == 0 else 0.0
    except (TypeError, ValueError):
        return 0.0


def position_features(seeds: np.ndarray, candidates: Sequence[Any]) -> np.ndarray:
    """``(n, 2)``: min-max scaled dense score and the first-sentence flag of one query."""
    seeds = np.asarray(seeds, dtype=np.float64)
    if seeds.shape != (len(candidates),):
        raise InputError(f"{seeds.shape[0]} scores for {len(candidates)} candidates")
    flags = np.array([first_sentence(c) for c in candidates], dtype=np.float64)
    return np.stack([minmax(seeds), flags], axis=1)


@dataclass(frozen=True)
class PositionPrior:
    """A fitted prior: weights on ``FEATURES`` and an intercept."""

    coef: tuple[float, float]
    intercept: float

    def scores(self, seeds: np.ndarray, candidates: Sequence[Any]) -> np.ndarray:
        """Probability of gold for each candidate of one query."""
        logit = position_features(seeds, candidates) @ np.asarray(self.coef) + self.intercept
        return 1.0 / (1.0 + np.exp(-logit))

    def as_dict(self) -> dict[str, Any]:
        return {"features": list(FEATURES), "coef": list(self.coef), "intercept": self.intercept}


def fit_position_prior(
    examples: Sequence[Any], candidates: Sequence[Sequence[Any]], l2: float = 1e-2
) -> PositionPrior:
    """The prior fitted on these queries' candidates (label 1 for gold)."""
    if len(examples) != len(candidates) or not examples:
        raise InputError(
            f"need one candidate list per example, got {len(examples)} and {len(candidates)}"
        )
    x = np.concatenate(
        [position_features(e.seeds, c) for e, c in zip(examples, candidates, strict=True)]
    )
    y = np.concatenate([np.asarray(e.labels, dtype=np.float64) for e in examples])
    coef, intercept = fit_logistic(x, y, l2=l2)
    return PositionPrior((float(coef[0]), float(coef[1])), intercept)
