"""Score adjustment (query-aware GNN paper, Algorithm 9) by hand on the 4-chunk graph."""

from __future__ import annotations

import numpy as np
import pytest

from grapher_core import GraphReranker
from grapher_core.candidates import Candidate
from grapher_core.edges.graph import build_graph
from grapher_core.edges.keys import AdjacentChunks
from grapher_core.edges.semantic import SemanticKNN
from grapher_core.ranking.base import RankContext
from grapher_core.ranking.registry import make_ranker
from grapher_core.ranking.score_adjust import ScoreAdjustRanker

VECTORS = [(1.0, 0.0), (0.8, 0.6), (0.6, 0.8), (0.0, 1.0)]


def chunks(scores: tuple[float, ...] = (0.9, 0.5, 0.4, 0.85)) -> list[Candidate]:
    return [
        Candidate(
            f"c{i}", score=s, metadata={"doc_id": "a", "chunk_index": i}, embedding=np.array(v)
        )
        for i, (v, s) in enumerate(zip(VECTORS, scores, strict=True))
    ]


def test_mean_semantic_weight_mixed_with_the_seed() -> None:
    cands = chunks()
    graph = build_graph(cands, [SemanticKNN.paper(k=2, threshold=0.7)])
    seeds = np.array([c.score for c in cands])
    got = ScoreAdjustRanker(alpha=0.5).rank(graph, seeds, RankContext(cands))
    # out-edges: c0 {c1 .8}; c1 {c2 .96, c0 .8}; c2 {c1 .96, c3 .8}; c3 {c2 .8}
    support = np.array([0.8, (0.96 + 0.8) / 2, (0.96 + 0.8) / 2, 0.8])
    np.testing.assert_allclose(got, 0.5 * seeds + 0.5 * support)


def test_isolated_candidate_gets_zero_support_and_contextual_edges_do_not_count() -> None:
    cands = chunks()
    graph = build_graph(cands, [AdjacentChunks(), SemanticKNN.paper(k=1, threshold=0.9)])
    got = ScoreAdjustRanker(alpha=0.6).rank(graph, np.ones(4), RankContext(cands))
    # only c1 -> c2 and c2 -> c1 (.96) pass tau = .9; adjacency is ignored
    np.testing.assert_allclose(got, [0.6, 0.6 + 0.4 * 0.96, 0.6 + 0.4 * 0.96, 0.6])


def test_registered_name_reorders_through_the_reranker() -> None:
    assert isinstance(make_ranker("qa-adjust"), ScoreAdjustRanker)
    reranker = GraphReranker([SemanticKNN.paper(k=2, threshold=0.7)], ranker="qa-adjust", alpha=0.5)
    ranked = reranker.rerank(chunks((0.9, 0.5, 0.4, 0.85)))
    # c0 .45 + .4 = .85, c3 .425 + .4 = .825, c1 .25 + .44 = .69, c2 .2 + .44 = .64
    assert [r.id for r in ranked] == ["c0", "c3", "c1", "c2"]
    lifted = GraphReranker(
        [SemanticKNN.paper(k=2, threshold=0.7)], ranker="qa-adjust", alpha=0.3
    ).rerank(chunks((0.5, 0.52, 0.51, 0.53)))
    # support dominates: c1 and c2 (.88) overtake c3 (.8) although c3 has the best seed
    assert [r.id for r in lifted][:2] == ["c1", "c2"]


def test_missing_semantic_edges_warn_once_or_raise_when_strict() -> None:
    cands = chunks()
    graph = build_graph(cands, [AdjacentChunks()])
    with pytest.warns(UserWarning, match="no 'semantic' edges"):
        got = ScoreAdjustRanker(alpha=0.5, kind="semantic").rank(
            graph, np.ones(4), RankContext(cands)
        )
    np.testing.assert_allclose(got, 0.5)
    with pytest.raises(ValueError, match=r"SemanticKNN\.paper"):
        ScoreAdjustRanker(strict=True).rank(graph, np.ones(4), RankContext(cands))
    with pytest.raises(ValueError, match="alpha"):
        ScoreAdjustRanker(alpha=0.0)


def test_qa_adjust_says_what_it_loses_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured below the dense order wherever it ran: picking it says so, once."""
    import warnings

    from grapher_core.ranking.score_adjust import QA_ADJUST_LOSES
    from grapher_core.utils import callsite

    monkeypatch.setattr(callsite, "_said", set())
    with pytest.warns(UserWarning, match="not recommended on strong retrievers"):
        ScoreAdjustRanker()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ScoreAdjustRanker(alpha=0.5)  # said once per process
    assert "docs/qa_gnn.md" in QA_ADJUST_LOSES
