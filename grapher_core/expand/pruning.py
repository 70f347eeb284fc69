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

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from grapher_core.errors import ConfigError, InputError

__all__ = ["CosinePruner", "SoftPruner", "pruner_inputs", "unit_rows"]


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
    """Keep (alpha 1) fetched objects whose query cosine is at least ``threshold``.

    ``threshold`` is checked when the pruner is made (a real number in [-1, 1]: not a string,
    a bool or NaN), so a bad setting fails where it is written, not at the first query."""

    threshold: float = 0.3

    def __post_init__(self) -> None:
        value = self.threshold
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise ConfigError(f"threshold is a cosine in [-1, 1], got {value!r}")
        if not math.isfinite(float(value)) or not -1.0 <= float(value) <= 1.0:
            raise ConfigError(f"threshold is a cosine in [-1, 1], got {value!r}")
        object.__setattr__(self, "threshold", float(value))

    def alphas(self, query: np.ndarray, objects: np.ndarray) -> np.ndarray:
        q, rows = pruner_inputs(query, objects)
        cos = unit_rows(rows) @ unit_rows(q.reshape(1, -1)).ravel()
        return (cos >= self.threshold).astype(np.float64)


def pruner_inputs(query: object, objects: object) -> tuple[np.ndarray, np.ndarray]:
    """``(query (d,), objects (n, d))`` as float arrays, or an error naming both shapes."""
    try:
        q = np.asarray(query, dtype=np.float64).reshape(-1)
        rows = np.asarray(objects, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InputError(f"pruner inputs are not numeric vectors ({error})") from None
    if rows.ndim != 2 or rows.shape[1] != q.size:
        raise InputError(
            f"a pruner needs objects of shape (n, {q.size}) for a {q.size}-d query, "
            f"got {rows.shape}"
        )
    return q, rows
