"""Soft pruning of fetched objects (GRAG section 4.1, "Textual Subgraph Soft Pruning").

A pruner gives every fetched object a relevance factor ``alpha`` in [0, 1] from its embedding
and the query's. Expansion multiplies the object's ranked score by ``alpha`` (GRAG scales both
a node and the messages into it, Eq. 9; on a fetched object's final score that is the same
factor) and drops objects whose ``alpha`` is below ``drop_below``.

* :class:`CosinePruner` -- today's fixed rule: ``alpha = 1`` when the query cosine reaches a
  threshold, else 0 (the object is dropped);
* the learned ``alpha = sigmoid(MLP(|z_node - z_query|))`` lives in
  :mod:`grapher_core.learned.pruner` (it needs torch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from grapher_core.errors import ConfigError

__all__ = ["CosinePruner", "SoftPruner", "unit_rows"]


@runtime_checkable
class SoftPruner(Protocol):
    """``alphas(query, objects)``: one factor in [0, 1] per row of ``objects`` (n x d)."""

    def alphas(self, query: np.ndarray, objects: np.ndarray) -> np.ndarray: ...


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    m = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / np.where(norms == 0, 1.0, norms)


@dataclass(frozen=True)
class CosinePruner:
    """Keep (alpha 1) fetched objects whose query cosine is at least ``threshold``."""

    threshold: float = 0.3

    def __post_init__(self) -> None:
        if not -1.0 <= float(self.threshold) <= 1.0:
            raise ConfigError(f"threshold is a cosine in [-1, 1], got {self.threshold!r}")

    def alphas(self, query: np.ndarray, objects: np.ndarray) -> np.ndarray:
        cos = unit_rows(objects) @ unit_rows(np.asarray(query).reshape(1, -1)).ravel()
        return (cos >= self.threshold).astype(np.float64)
