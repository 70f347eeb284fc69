"""Seed scores for fetched objects: the query cosine on the candidates' score scale.

A least-squares line ``score ~ a * cosine + b`` fitted on the candidates with vectors maps a
fetched object's cosine onto the retriever's scale (see :mod:`grapher_core.expand.expansion`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.errors import InputError

__all__ = ["calibration", "cosines", "seed_scores", "unit"]


def unit(vector: np.ndarray | None) -> np.ndarray | None:
    """The unit vector of ``vector`` (``None`` for none or zero)."""
    if vector is None:
        return None
    v = np.asarray(vector, dtype=np.float64).ravel()
    norm = float(np.linalg.norm(v))
    if not np.isfinite(norm):
        raise InputError("query_embedding has non-finite values")
    return v / norm if norm > 0 else None


def cosines(objects: Sequence[Candidate], query: np.ndarray | None) -> np.ndarray | None:
    """Query cosine of every object, or ``None`` when any vector is missing or mis-sized."""
    if query is None or not objects or any(o.embedding is None for o in objects):
        return None
    matrix = np.vstack([np.asarray(o.embedding, dtype=np.float64).ravel() for o in objects])
    if matrix.shape[1] != query.shape[0]:
        raise InputError(
            f"object embeddings have {matrix.shape[1]} dimensions, the query "
            f"embedding {query.shape[0]}"
        )
    norms = np.linalg.norm(matrix, axis=1)
    return (matrix @ query) / np.where(norms == 0, 1.0, norms)


def seed_scores(
    items: Sequence[Candidate],
    scores: np.ndarray | None,
    added: Sequence[Candidate],
    similarity: dict[str, float],
    query: np.ndarray | None,
    *,
    floor: bool = False,
) -> list[Candidate]:
    """Give fetched objects scores on the candidates' scale (see the module docstring);
    ``floor``: every fetched object at the lowest candidate score."""
    if not added:
        return []
    if scores is None:
        return [Candidate(c.id, c.text, None, c.metadata, c.embedding) for c in added]
    low, high = float(scores.min()), float(scores.max())
    predicted: list[float] | None = None
    if not floor and all(c.id in similarity for c in added):
        line = calibration(items, scores, query)
        if line is not None:
            slope, intercept = line
            predicted = [
                float(np.clip(slope * similarity[c.id] + intercept, low, high)) for c in added
            ]
    if predicted is None:
        predicted = [low] * len(added)
    return [
        Candidate(c.id, c.text, s, c.metadata, c.embedding)
        for c, s in zip(added, predicted, strict=True)
    ]


def calibration(
    items: Sequence[Candidate], scores: np.ndarray, query: np.ndarray | None
) -> tuple[float, float] | None:
    """Least-squares ``score ~ a * cosine + b`` over the candidates with embeddings; ``None``
    when it cannot be fitted or does not increase with the cosine."""
    with_vectors = [i for i, c in enumerate(items) if c.embedding is not None]
    if query is None or len(with_vectors) < 2:
        return None
    cos = cosines([items[i] for i in with_vectors], query)
    if cos is None or float(np.var(cos)) == 0.0:
        return None
    y = scores[with_vectors]
    slope, intercept = np.polyfit(cos, y, 1)
    if not np.isfinite(slope) or slope <= 0:
        return None
    return float(slope), float(intercept)
