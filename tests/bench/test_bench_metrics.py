"""Metrics against hand-computed values, ties included (G-RAG eq. 11-12)."""

from __future__ import annotations

import math

import pytest

from grapher_bench.metrics import (
    aggregate,
    evaluate_query,
    first_reciprocal_rank,
    mean_reciprocal_rank,
    mhits_at_k,
    mtrr,
    perfect_recall_at_k,
    recall_at_k,
    tmhits_at_k,
)

IDS = ["a", "b", "c", "d", "e"]


def test_perfect_recall_needs_every_gold() -> None:
    assert perfect_recall_at_k(IDS, ["a", "c"], 3) == 1.0
    assert perfect_recall_at_k(IDS, ["a", "d"], 3) == 0.0
    assert perfect_recall_at_k(IDS, ["zz"], 5) == 0.0


def test_recall_and_reciprocal_rank() -> None:
    assert recall_at_k(IDS, ["a", "d"], 3) == 0.5
    assert first_reciprocal_rank(IDS, ["c", "e"]) == pytest.approx(1 / 3)
    assert first_reciprocal_rank(IDS, ["zz"]) == 0.0


def test_paper_mrr_and_mhits_average_over_the_gold_objects() -> None:
    # G-RAG 4.1.1: mean over positives of 1/rank, and of 1(rank <= 10)
    assert mean_reciprocal_rank(IDS, ["c", "e"]) == pytest.approx((1 / 3 + 1 / 5) / 2)
    assert mean_reciprocal_rank(IDS, ["a", "zz"]) == pytest.approx(0.5)  # missing counts 0
    ids = [f"x{i}" for i in range(12)]
    assert mhits_at_k(ids, ["x0", "x9", "x10", "nope"], 10) == pytest.approx(2 / 4)
    assert mhits_at_k(ids, ["x3"], 3) == 0.0 and mhits_at_k(ids, ["x2"], 3) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_tie_aware_metrics_equal_paper_metrics_without_ties(seed: int) -> None:
    # the identities G-RAG states: MTRR = MRR and TMHits@10 = MHits@10 when no score is tied
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = [f"d{i}" for i in range(30)]
    scores = np.sort(rng.permutation(30).astype(float))[::-1]  # distinct, best first
    gold = [ids[i] for i in rng.choice(30, size=4, replace=False)] + ["absent"]
    assert mtrr(ids, scores, gold) == pytest.approx(mean_reciprocal_rank(ids, gold))
    assert tmhits_at_k(ids, scores, gold, 10) == pytest.approx(mhits_at_k(ids, gold, 10))
    # with ties they differ: every candidate tied, the first one is rank 1 for MRR only
    assert mean_reciprocal_rank(ids, ["d0"]) == 1.0
    assert mtrr(ids, np.ones(30), ["d0"]) == pytest.approx(2 / (2 + 30 - 1))


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="k must be"):
        perfect_recall_at_k(IDS, ["a"], 0)
    with pytest.raises(ValueError, match="gold"):
        recall_at_k(IDS, [], 3)
    with pytest.raises(ValueError, match="scores"):
        mtrr(IDS, [1.0, 2.0], ["a"])


def test_mtrr_equals_mean_reciprocal_rank_without_ties() -> None:
    scores = [5.0, 4.0, 3.0, 2.0, 1.0]
    assert mtrr(IDS, scores, ["b", "d"]) == pytest.approx((1 / 2 + 1 / 4) / 2)


def test_mtrr_averages_optimistic_and_pessimistic_rank() -> None:
    # b, c, d tied at rank 2..4: a gold among them gets 2 / (2*2 + 3 - 1) = 1/3
    scores = [5.0, 3.0, 3.0, 3.0, 1.0]
    assert mtrr(IDS, scores, ["c"]) == pytest.approx(1 / 3)
    assert mtrr(IDS, scores, ["c", "zz"]) == pytest.approx(1 / 6)  # missing gold counts 0


def test_tmhits_divides_hits_by_tie_size() -> None:
    ids = [f"x{i}" for i in range(15)]
    # 8 above, then a tie group of 4 at ranks 9..12: only 2 of the 4 slots fit in the top 10
    scores = [20.0 - i for i in range(8)] + [5.0] * 4 + [1.0, 0.5, 0.2]
    assert tmhits_at_k(ids, scores, ["x9"]) == pytest.approx(2 / 4)
    # every candidate tied: 10 / 15
    assert tmhits_at_k(ids, [1.0] * 15, ["x3"]) == pytest.approx(10 / 15)
    # 10 strictly above: a miss; untied inside the top 10: a hit
    assert tmhits_at_k(ids, [20.0 - i for i in range(15)], ["x10"]) == 0.0
    assert tmhits_at_k(ids, [20.0 - i for i in range(15)], ["x2"]) == 1.0


def test_evaluate_and_aggregate_split_multi_gold() -> None:
    scores = [5.0, 4.0, 3.0, 2.0, 1.0]
    single = evaluate_query(IDS, scores, ["a"])
    multi = evaluate_query(IDS, scores, ["a", "e"])
    assert single["PR@1"] == 1.0 and multi["PR@5"] == 1.0 and multi["PR@1"] == 0.0
    summary = aggregate([single, multi], [False, True])
    assert summary["PR@1"] == 0.5
    assert summary["PR@5>1"] == 1.0 and summary["PR@10>1"] == 1.0
    assert math.isnan(aggregate([single], [False])["PR@10>1"])
    with pytest.raises(ValueError, match="rows"):
        aggregate([], None)


def test_pr_at_k_gold_at_k_and_first_rr_are_the_cores() -> None:
    """One definition: the bench reports what ``grapher eval`` reports."""
    from grapher_bench import metrics
    from grapher_core.evaluation import metrics as core

    assert metrics.perfect_recall_at_k is core.perfect_recall_at_k
    assert metrics.gold_in_top_k is core.gold_in_top_k
    assert metrics.first_reciprocal_rank is core.first_reciprocal_rank
    # recall@K is gold@K over the distinct gold ids
    assert recall_at_k(IDS, ["a", "a", "d", "zz"], 4) == pytest.approx(2 / 3)


def test_the_docs_tables_print_fractions_one_way() -> None:
    from grapher_bench.sections import pct

    assert pct(0.4567) == "45.7" and pct(1) == "100.0"
    assert pct(None) == "–" and pct(float("nan")) == "–"
