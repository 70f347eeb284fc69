"""The one PR@K, gold@K and first-gold reciprocal rank, and the paired comparison: the
definitions ``grapher eval`` and the benchmark both report."""

from __future__ import annotations

import pytest

from grapher_core.errors import InputError
from grapher_core.evaluation.metrics import (
    all_in_top,
    check_cutoff,
    first_gold_reciprocal,
    first_reciprocal_rank,
    found_in_top,
    gold_in_top_k,
    gold_ranks,
    perfect_recall_at_k,
)
from grapher_core.evaluation.paired import PairedComparison, compare_paired
from grapher_core.utils.stats import mcnemar_exact

RANKING = ["a", "b", "c", "d", "e"]


def test_gold_ranks_are_first_places_and_none_when_absent() -> None:
    assert gold_ranks(RANKING, ["c", "zz", "a"]) == (3, None, 1)
    assert gold_ranks(["a", "b", "a"], ["a"]) == (1,)  # an id listed twice ranks at its first
    assert gold_ranks(RANKING, ["b", "b"]) == (2,)  # a gold id listed twice counts once


def test_rank_level_metrics() -> None:
    ranks = (1, 4, None)
    assert found_in_top(ranks, 1) == 1 and found_in_top(ranks, 4) == 2
    assert not all_in_top(ranks, 5)
    assert all_in_top((2, 3), 3) and not all_in_top((2, 3), 2)
    assert first_gold_reciprocal(ranks) == 1.0
    assert first_gold_reciprocal((4, 2)) == 0.5
    assert first_gold_reciprocal((None,)) == 0.0


def test_pr_at_k_needs_every_gold_object() -> None:
    assert perfect_recall_at_k(RANKING, ["a", "c"], 3) == 1.0
    assert perfect_recall_at_k(RANKING, ["a", "d"], 3) == 0.0
    assert perfect_recall_at_k(RANKING, ["zz"], 5) == 0.0
    assert perfect_recall_at_k(RANKING, ["a"], 50) == 1.0  # K beyond the ranking


def test_gold_at_k_and_first_reciprocal_rank() -> None:
    assert gold_in_top_k(RANKING, ["a", "d", "zz"], 3) == 1
    assert gold_in_top_k(RANKING, ["a", "d", "zz"], 4) == 2
    assert first_reciprocal_rank(RANKING, ["e", "c"]) == pytest.approx(1 / 3)
    assert first_reciprocal_rank(RANKING, ["zz"]) == 0.0


@pytest.mark.parametrize("k", [0, -1, 2.0, "3"])
def test_a_bad_cutoff_is_named(k: object) -> None:
    with pytest.raises(InputError, match="k must be a positive integer"):
        check_cutoff(k)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="k must be"):
        perfect_recall_at_k(RANKING, ["a"], k)  # type: ignore[arg-type]


def test_no_gold_is_refused() -> None:
    with pytest.raises(InputError, match="gold must name at least one object"):
        gold_ranks(RANKING, [])
    with pytest.raises(InputError, match="gold"):
        gold_in_top_k(RANKING, [], 3)


def test_paired_comparison_counts_wins_and_losses_and_leaves_ties_out() -> None:
    result = compare_paired([1, 1, 0, 1, 0], [0, 0, 0, 1, 1])
    assert result == PairedComparison(2, 1, mcnemar_exact(2, 1))
    assert result.to_dict() == {"wins": 2, "losses": 1, "p": mcnemar_exact(2, 1)}
    assert compare_paired([], []) == PairedComparison(0, 0, 1.0)
    assert compare_paired([3.0, 1.0], [2.0, 1.0]).wins == 1  # counts, not only 0/1


def test_paired_values_must_cover_the_same_questions() -> None:
    with pytest.raises(InputError, match="same questions: 2 against 3"):
        compare_paired([1, 0], [1, 0, 1])
