"""Turning a base retriever's scores into seed scores for a graph ranker.

Real retrievers give cosine similarities in [-1, 1], distances (lower is better), relevance
scores in [0, 1], unbounded BM25 scores, fused scores, or nothing at all -- and LangChain's
compressors see no score at all. GCS and PPR are invariant to scaling the seeds by a positive
constant, but not to shifting them, and PPR needs non-negative seeds. The policies:

* ``"rank"`` (the default of both wrappers and the core, see :func:`seed_policy`): ``1 / rank`` from
  the input order, which is the retriever's order; scores are ignored. The only signal every
  retriever gives, so the same pool ranks the same through LangChain (no scores) and
  LlamaIndex (node scores of any kind), and a store's narrow band of cosines (0.31..0.36) or its
  distances cannot flatten or invert the seeds. Measured beside the score policy for three
  retrievers on every shared set (docs/benchmarks.md "Seeds").
* ``"auto"``: the scores, read in the direction the input order says (scores that *rise*
  along the retriever's order are distances: they are negated), negative ones raised to 0 (a
  cosine of -0.2 is no evidence of relevance); only when no score is then positive are they
  min-max scaled to [0, 1].
* ``"raw"``: as given (negative scores are then an error for PPR).
* ``"minmax"``: always min-max scaled to [0, 1] (all equal -> all 1), in the direction of
  ``"auto"``.

When *no* candidate has a score, every policy seeds from rank. A ranker that reads the seeds
as scores (declared ``reads_scores``: a GAT or MLP checkpoint trained on the bench's fused
scores, as the shipped MLP is -- the shipped GAT was trained on rank seeds and takes them; the
score fusions of the query-aware GNN) defaults to ``"auto"`` instead; with no scores it still
seeds from rank.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.errors import InputError
from grapher_core.ranking.base import reads_scores

SEED_TRANSFORMS: tuple[str, ...] = ("rank", "auto", "raw", "minmax")


def seed_policy(transform: str | None, ranker: object) -> str:
    """The policy a reranker uses: ``transform`` when given, else ``"auto"`` for a ranker that
    declared ``reads_scores`` and ``"rank"`` for every other -- decided here, once, for the
    core and both wrappers."""
    if transform is not None:
        return transform
    return "auto" if reads_scores(ranker) else "rank"


def rank_seeds(n: int) -> np.ndarray:
    """Reciprocal-rank seeds for candidates given in the retriever's order."""
    return 1.0 / np.arange(1, n + 1, dtype=np.float64)


def original_scores(candidates: Sequence[Candidate]) -> np.ndarray | None:
    """The candidates' scores as floats, or ``None`` when no candidate has one.

    Raises ``ValueError`` naming the offending ids when only some candidates have a score, or
    when a score is not a finite number.
    """
    raw = [c.score for c in candidates]
    if raw and all(type(s) is float for s in raw):  # the common case, checked in bulk
        scores = np.array(raw, dtype=np.float64)
        if np.all(np.isfinite(scores)):
            return scores
    missing = [c.id for c, s in zip(candidates, raw, strict=True) if s is None]
    if len(missing) == len(raw):
        return None
    if missing:
        raise InputError(f"some candidates have no score, others do: {_names(missing)}")
    bad = [c.id for c, s in zip(candidates, raw, strict=True) if not _is_finite_number(s)]
    if bad:
        raise InputError(f"candidate scores must be finite numbers; bad score for {_names(bad)}")
    return np.array(raw, dtype=np.float64)


def make_seeds(
    candidates: Sequence[Candidate], transform: str = "auto", scores: np.ndarray | None = None
) -> np.ndarray:
    """Seed scores for ``candidates`` under one of the documented policies.

    ``scores`` may pass the already validated :func:`original_scores` to avoid a second pass.
    """
    if transform not in SEED_TRANSFORMS:
        raise InputError(f"seed_transform must be one of {SEED_TRANSFORMS}, got {transform!r}")
    if scores is None:
        scores = original_scores(candidates)
    if scores is None or transform == "rank":
        return rank_seeds(len(candidates))
    if transform == "raw":
        return scores
    if ascending(scores):
        scores = -scores  # distances: the retriever put the smallest first
    if transform == "auto" and (scores.size == 0 or scores.min() >= 0):
        return scores
    if transform == "auto" and scores.max() > 0:
        return np.maximum(scores, 0.0)
    return minmax(scores)


def ascending(scores: np.ndarray) -> bool:
    """Whether scores rise along the input order and are not all equal: the retriever ranked
    by a distance (smaller = better), so the scores must be read the other way."""
    if scores.size < 2:
        return False
    before, after = scores[:-1], scores[1:]  # compared, not subtracted: 1e308 - -1e308 is inf
    return bool(np.all(after >= before) and np.any(after > before))


def minmax(scores: np.ndarray, *, constant: float = 1.0) -> np.ndarray:
    """Scale to [0, 1] -- the one min-max of the library. A constant vector becomes
    ``constant`` everywhere: 1 for seeds and features (every candidate equally good), 0 for a
    score that should then add nothing (the bench's hybrid BM25 part).

    Finite scores whose range itself overflows (``1e308`` beside ``-1e308``: the span is inf)
    are divided by their largest magnitude first, so every finite input gives finite output.
    """
    if scores.size == 0:
        return scores.copy()
    low, high = float(scores.min()), float(scores.max())
    if high == low:
        return np.full_like(scores, constant)
    span = high - low
    if math.isfinite(span):  # each scores - low is then at most span: no overflow below
        return (scores - low) / span
    if not (math.isfinite(low) and math.isfinite(high)):
        raise InputError(f"min-max scaling needs finite scores, got a range of [{low}, {high}]")
    magnitude = max(abs(low), abs(high))
    scaled_low, scaled_high = low / magnitude, high / magnitude
    out = (scores / magnitude - scaled_low) / (scaled_high - scaled_low)
    return np.clip(out, 0.0, 1.0, out=out)


def _is_finite_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    return math.isfinite(float(value))


def _names(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(repr(i) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
