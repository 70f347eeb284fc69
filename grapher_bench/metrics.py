"""Retrieval metrics: perfect recall@K (the paper's PR@K), recall@K, first-gold reciprocal rank,
and G-RAG's metrics (the G-RAG paper 4.1.1): MRR and MHits@10 (means over the gold objects), and
their tie-aware forms MTRR / TMHits@10 (eq. 11-12).

Naming: ``MRR`` is G-RAG's -- the mean over the gold objects of 1/rank, averaged over queries.
The usual "1 / rank of the first gold" is ``FirstRR`` (its mean is what many papers call MRR;
on single-gold queries the two agree).

All functions take the ranked ids best first (and, for the tie-aware ones, their scores) and
the gold ids; a gold object missing from the ranking counts as not retrieved. PR@K, gold@K and
FirstRR are the core's (:mod:`grapher_core.evaluation.metrics`), the definitions ``grapher
eval`` reports, so the benchmark and the command can never disagree; this module adds G-RAG's
metrics and the per-query rows of a bench run. Framework-free so the LangChain and LlamaIndex
notebooks can import them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from grapher_core.errors import InputError
from grapher_core.evaluation.metrics import (
    check_cutoff,
    first_reciprocal_rank,
    gold_in_top_k,
    gold_ranks,
    perfect_recall_at_k,
)

__all__ = [
    "aggregate",
    "evaluate_query",
    "first_reciprocal_rank",
    "gold_in_top_k",
    "mean_reciprocal_rank",
    "mhits_at_k",
    "mtrr",
    "perfect_recall_at_k",
    "recall_at_k",
    "tmhits_at_k",
]


def recall_at_k(ranked_ids: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Fraction of the gold ids found in the top ``k``."""
    wanted = list(dict.fromkeys(gold))
    return gold_in_top_k(ranked_ids, wanted, k) / len(wanted)


def mean_reciprocal_rank(ranked_ids: Sequence[str], gold: Iterable[str]) -> float:
    """G-RAG's MRR term of one query: the mean over the gold ids of 1/rank (0 when unranked);
    ranks are positions in ``ranked_ids`` (ties broken by that order; see :func:`mtrr`)."""
    return float(np.mean([0.0 if r is None else 1.0 / r for r in gold_ranks(ranked_ids, gold)]))


def mhits_at_k(ranked_ids: Sequence[str], gold: Iterable[str], k: int = 10) -> float:
    """G-RAG's MHits@K term of one query: the fraction of the gold ids ranked in the top ``k``
    (differs from :func:`recall_at_k` only for gold ids listed twice)."""
    check_cutoff(k)
    return float(np.mean([r is not None and r <= k for r in gold_ranks(ranked_ids, gold)]))


def _tie_ranks(
    ranked_ids: Sequence[str], scores: Sequence[float] | np.ndarray, gold: Iterable[str]
) -> list[tuple[int, int] | None]:
    """For each gold id: (number of candidates scored strictly higher, size of its tie group),
    or None when the gold id is not among the candidates."""
    values = np.asarray(scores, dtype=np.float64).ravel()
    if values.size != len(ranked_ids):
        raise InputError(f"{len(ranked_ids)} ids but {values.size} scores")
    position = {object_id: i for i, object_id in enumerate(ranked_ids)}
    out: list[tuple[int, int] | None] = []
    for object_id in dict.fromkeys(gold):
        i = position.get(object_id)
        if i is None:
            out.append(None)
            continue
        score = values[i]
        out.append((int(np.sum(values > score)), int(np.sum(values == score))))
    if not out:
        raise InputError("gold must name at least one object")
    return out


def mtrr(
    ranked_ids: Sequence[str], scores: Sequence[float] | np.ndarray, gold: Iterable[str]
) -> float:
    """Tied reciprocal rank averaged over the gold ids (G-RAG eq. 11).

    A gold id tied with ``t - 1`` others at optimistic rank ``r`` scores ``2 / (2r + t - 1)``
    (the reciprocal of the mean of its optimistic and pessimistic ranks); ``1 / r`` when untied.
    Without ties this is G-RAG's MRR (mean over the gold ids of 1/rank).
    """
    terms = []
    for tie in _tie_ranks(ranked_ids, scores, gold):
        if tie is None:
            terms.append(0.0)
            continue
        above, t = tie
        r = above + 1
        terms.append(1.0 / r if t == 1 else 2.0 / (2 * r + t - 1))
    return float(np.mean(terms))


def tmhits_at_k(
    ranked_ids: Sequence[str],
    scores: Sequence[float] | np.ndarray,
    gold: Iterable[str],
    k: int = 10,
) -> float:
    """Tie-aware hits@K averaged over the gold ids (G-RAG eq. 12, TMHits@10 for k=10).

    A gold id with ``h`` candidates scored strictly above it and a tie group of size ``tau``
    counts ``min(1, max(0, k - h) / tau)``: the chance it lands in the top ``k`` when ties are
    broken at random. This is eq. 12's four cases, with the (10 - h) / tau case capped at 1
    and h = k counted as a miss (the equation leaves both boundaries ambiguous).
    """
    check_cutoff(k)
    terms = []
    for tie in _tie_ranks(ranked_ids, scores, gold):
        if tie is None:
            terms.append(0.0)
            continue
        above, tau = tie
        terms.append(min(1.0, max(0, k - above) / tau))
    return float(np.mean(terms))


def evaluate_query(
    ranked_ids: Sequence[str],
    scores: Sequence[float] | np.ndarray,
    gold: Sequence[str],
    ks: Iterable[int] = (5, 10),
    curve_max_k: int = 20,
) -> dict[str, float]:
    """Every metric of one query, keyed like ``results.json`` (``PR@5``, ``recall@10``,
    ``FirstRR``, ``MRR``, ``MHits@10``, ``MTRR``, ``TMHits@10``) plus ``PR@1..PR@curve_max_k``
    for the PR@K plot."""
    row: dict[str, float] = {}
    for k in sorted(set(ks) | set(range(1, curve_max_k + 1))):
        row[f"PR@{k}"] = perfect_recall_at_k(ranked_ids, gold, k)
    for k in sorted(set(ks) | {10}):
        row[f"recall@{k}"] = recall_at_k(ranked_ids, gold, k)
    row["FirstRR"] = first_reciprocal_rank(ranked_ids, gold)
    row["MRR"] = mean_reciprocal_rank(ranked_ids, gold)
    row["MHits@10"] = mhits_at_k(ranked_ids, gold, 10)
    row["MTRR"] = mtrr(ranked_ids, scores, gold)
    row["TMHits@10"] = tmhits_at_k(ranked_ids, scores, gold, 10)
    return row


def aggregate(
    rows: Sequence[Mapping[str, float]],
    multi: Sequence[bool] | None = None,
    ks: Iterable[int] = (5, 10),
) -> dict[str, float]:
    """Mean of each metric over queries; with ``multi`` (one flag per row: more than one gold)
    also ``PR@K>1`` over the multi-gold queries only (NaN when there are none)."""
    if not rows:
        raise InputError("no per-query rows to aggregate")
    keys = list(rows[0])
    out = {key: float(np.mean([row[key] for row in rows])) for key in keys}
    if multi is not None:
        if len(multi) != len(rows):
            raise InputError(f"{len(rows)} rows but {len(multi)} multi flags")
        chosen = [row for row, flag in zip(rows, multi, strict=True) if flag]
        for k in ks:
            key = f"PR@{k}"
            out[f"{key}>1"] = (
                float(np.mean([row[key] for row in chosen])) if chosen else float("nan")
            )
    return out
