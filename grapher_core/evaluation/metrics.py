"""The one definition of the retrieval metrics every evaluation reports, so ``grapher eval`` and
the benchmark tooling can never disagree on what a number means.

Per question: the 1-based rank of each gold object in a ranking (``None`` when it is absent),
then gold@K (how many gold objects are in the top K), PR@K (perfect recall: *all* of them are)
and the reciprocal rank of the first gold object (its mean is MRR). The id-level functions
validate their arguments; the rank-level ones are what a caller measuring many cut-offs
computes once per question.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from grapher_core.errors import InputError

__all__ = [
    "GoldRanks",
    "all_in_top",
    "check_cutoff",
    "first_gold_reciprocal",
    "first_reciprocal_rank",
    "found_in_top",
    "gold_in_top_k",
    "gold_ranks",
    "pct",
    "perfect_recall_at_k",
]

GoldRanks = tuple[int | None, ...]
"""Per gold object, its 1-based rank in a ranking, or ``None`` when the ranking lacks it."""


def gold_ranks(ranked_ids: Sequence[str], gold: Iterable[str]) -> GoldRanks:
    """Each gold id's rank (its first place in ``ranked_ids``), a gold id listed twice once;
    no gold at all is an error (nothing would be measured)."""
    wanted = dict.fromkeys(gold)
    if not wanted:
        raise InputError("gold must name at least one object")
    position: dict[str, int] = {}
    for rank, object_id in enumerate(ranked_ids, start=1):
        if object_id in wanted and object_id not in position:
            position[object_id] = rank
    return tuple(position.get(object_id) for object_id in wanted)


def found_in_top(ranks: GoldRanks, k: int) -> int:
    """How many gold objects are ranked in the top ``k`` (gold@K's count for one question)."""
    return sum(1 for rank in ranks if rank is not None and rank <= k)


def all_in_top(ranks: GoldRanks, k: int) -> bool:
    """Whether every gold object is ranked in the top ``k`` (PR@K for one question)."""
    return all(rank is not None and rank <= k for rank in ranks)


def first_gold_reciprocal(ranks: GoldRanks) -> float:
    """1 / the rank of the best-ranked gold object, 0.0 when none is ranked (MRR's term)."""
    return max((1.0 / rank for rank in ranks if rank is not None), default=0.0)


def perfect_recall_at_k(ranked_ids: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1.0 when *every* gold id is in the top ``k`` of ``ranked_ids``, else 0.0 (the paper's
    PR@K; a mean of these over questions is the reported number)."""
    check_cutoff(k)
    return 1.0 if all_in_top(gold_ranks(ranked_ids[:k], gold), k) else 0.0


def gold_in_top_k(ranked_ids: Sequence[str], gold: Iterable[str], k: int) -> int:
    """How many gold ids are in the top ``k`` (summed over questions and divided by all gold
    ids: gold@K)."""
    check_cutoff(k)
    return found_in_top(gold_ranks(ranked_ids[:k], gold), k)


def first_reciprocal_rank(ranked_ids: Sequence[str], gold: Iterable[str]) -> float:
    """1 / rank of the first gold id in ``ranked_ids`` (0.0 when none is ranked)."""
    return first_gold_reciprocal(gold_ranks(ranked_ids, gold))


def check_cutoff(k: int) -> None:
    """Refuse a cut-off K that is not a positive integer."""
    if not isinstance(k, int) or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}")


def pct(value: float) -> str:
    """A fraction as the tables print it: percent, one decimal."""
    return f"{100 * value:.1f}"
