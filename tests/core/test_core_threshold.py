"""``score_threshold`` over rank seeds cuts a relative score: the top result scores 1.0 for any
query. The core says so once when the seeds come from the order (or are scaled to the pool),
and stays silent when they are the retriever's or an upstream reranker's absolute scores."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence

import numpy as np
import pytest

from grapher_core import Candidate, ForeignKeys, GraphReranker
from grapher_core.diagnostics import GraphERWarning
from grapher_core.edges.graph import CandidateGraph
from grapher_core.ranking.base import RankContext


def _pool(scores: Sequence[float] | None = None, n: int = 10) -> list[Candidate]:
    """Tables linked in a chain, given in the retriever's order; ``scores`` when it has them."""
    return [
        Candidate(
            f"t{i}",
            text=f"table {i}",
            score=None if scores is None else scores[i],
            metadata={"foreign_keys": [f"t{i + 1}"] if i + 1 < n else []},
        )
        for i in range(n)
    ]


# A nonsense query: an absolute scorer finds every candidate poor.
POOR = [0.09, 0.08, 0.07, 0.06, 0.05, 0.04, 0.03, 0.02, 0.015, 0.01]


def _said(reranker: GraphReranker, pool: list[Candidate], calls: int = 3) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(calls):
            reranker.rerank(pool, top_n=5)
    return [str(w.message) for w in caught if issubclass(w.category, GraphERWarning)]


def _relative(said: list[str]) -> list[str]:
    return [m for m in said if "relative score" in m]


def test_rank_seeds_keep_the_top_of_a_nonsense_query_and_it_is_said_once() -> None:
    reranker = GraphReranker([ForeignKeys()], score_threshold=0.3)
    said = _relative(_said(reranker, _pool()))
    assert len(said) == 1  # three calls, one note
    assert "score_threshold=0.3" in said[0]
    assert "seed_transform='raw'" in said[0] and "score_key" in said[0]
    assert "GraphERRetriever(seeds='score')" in said[0]
    kept = reranker.rerank(_pool(), top_n=5)
    assert kept and kept[0].relevance == pytest.approx(1.0)  # whatever the query


def test_scores_ignored_by_the_default_policy_still_seed_from_rank() -> None:
    reranker = GraphReranker([ForeignKeys()], score_threshold=0.3)
    assert reranker.seed_policy == "rank"
    assert len(_relative(_said(reranker, _pool(POOR)))) == 1
    assert reranker.rerank(_pool(POOR), top_n=5)  # the poor scores were never read


def test_raw_scores_make_the_cut_absolute_and_silent() -> None:
    reranker = GraphReranker([ForeignKeys()], seed_transform="raw", score_threshold=0.3)
    assert _relative(_said(reranker, _pool(POOR))) == []
    assert reranker.rerank(_pool(POOR), top_n=5) == []  # nothing relevant: nothing kept
    good = [0.9, 0.8, 0.2, 0.1, 0.05, 0.04, 0.03, 0.02, 0.015, 0.01]
    kept = reranker.rerank(_pool(good), top_n=5)
    assert [r.id for r in kept][:2] == ["t0", "t1"]
    assert all(r.relevance is not None and r.relevance >= 0.3 for r in kept)


def test_raw_without_any_score_seeds_from_rank_and_says_so() -> None:
    reranker = GraphReranker([ForeignKeys()], seed_transform="raw", score_threshold=0.3)
    said = _relative(_said(reranker, _pool()))
    assert len(said) == 1 and "rank seeds" in said[0]


def test_minmax_seeds_are_relative_too() -> None:
    reranker = GraphReranker([ForeignKeys()], seed_transform="minmax", score_threshold=0.3)
    said = _relative(_said(reranker, _pool(POOR)))
    assert len(said) == 1 and "minmax seeds" in said[0]


def test_no_threshold_no_note() -> None:
    assert _relative(_said(GraphReranker([ForeignKeys()]), _pool())) == []


def test_a_new_threshold_is_said_again_once() -> None:
    reranker = GraphReranker([ForeignKeys()], score_threshold=0.3)
    first = _relative(_said(reranker, _pool()))
    reranker.score_threshold = 0.5
    second = _relative(_said(reranker, _pool()))
    assert len(first) == len(second) == 1 and "score_threshold=0.5" in second[0]


def test_strict_warns_but_does_not_raise(caplog: pytest.LogCaptureFixture) -> None:
    """A relative cut can be meant; strict=True raises on silent no-ops, and this is not one."""
    reranker = GraphReranker([ForeignKeys()], score_threshold=0.3, strict=True)
    with caplog.at_level(logging.WARNING, logger="grapher"):
        said = _relative(_said(reranker, _pool()))
    assert len(said) == 1
    assert any("relative score" in r.getMessage() for r in caplog.records)


class _Logits:
    """A learned-style ranker: its relevance is sigmoid(logit), not a smoothed seed."""

    name = "logits"
    score_scale = "logit"

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        return np.linspace(2.0, -2.0, seeds.shape[0])


def test_a_probability_scale_ranker_is_not_told() -> None:
    reranker = GraphReranker([ForeignKeys()], ranker=_Logits(), score_threshold=0.3)
    assert _relative(_said(reranker, _pool())) == []
