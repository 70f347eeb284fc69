"""One relevance scale (pool-independent) and zero-config proximities."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from grapher_core import AdjacentChunks, Candidate, ForeignKeys, GraphReranker, SharedEntities
from grapher_core.edges.detect import detect_proximities
from grapher_core.ranking.calibration import relevance_scores


def _pool() -> list[Candidate]:
    return [
        Candidate("orders", score=0.62, metadata={"foreign_keys": ["customers"]}),
        Candidate("customers", score=0.40, metadata={"foreign_keys": ["orders"]}),
        Candidate("products", score=0.35),
    ]


def test_relevance_does_not_move_when_the_pool_gains_negative_cosines() -> None:
    reranker = GraphReranker([ForeignKeys()], seed_transform="auto")
    before = {r.id: r.relevance for r in reranker.rerank(_pool())}
    grown = _pool() + [Candidate(f"far{i}", score=-0.1 * (i + 1)) for i in range(4)]
    after = {r.id: r.relevance for r in reranker.rerank(grown)}
    for key, value in before.items():
        assert after[key] == pytest.approx(value, abs=1e-12)
    assert before["products"] == pytest.approx(0.35)  # no graph support: its cosine
    assert all(0.0 <= r.relevance <= 1.0 for r in reranker.rerank(grown))  # type: ignore[operator]


def test_rank_seeds_keep_relevance_when_the_pool_gains_a_tail() -> None:
    """The default seeds come from rank: candidates appended below the pool, linked to
    nothing, leave every earlier candidate's relevance where it was."""
    reranker = GraphReranker([ForeignKeys()])
    before = {r.id: r.relevance for r in reranker.rerank(_pool())}
    grown = _pool() + [Candidate(f"far{i}", score=-0.1 * (i + 1)) for i in range(4)]
    after = {r.id: r.relevance for r in reranker.rerank(grown)}
    for key, value in before.items():
        assert after[key] == pytest.approx(value, abs=1e-12)
    assert before["products"] == pytest.approx(1 / 3)  # no graph support: its rank seed


def test_raw_score_is_kept_beside_the_relevance() -> None:
    ranked = GraphReranker([ForeignKeys()], ranker="ppr", seed_transform="auto").rerank(_pool())
    for r in ranked:
        assert r.relevance == pytest.approx(r.score * (0.62 + 0.40 + 0.35))
    ranked = GraphReranker([ForeignKeys()], ranker="ppr").rerank(_pool())
    for r in ranked:  # rank seeds: 1, 1/2, 1/3
        assert r.relevance == pytest.approx(r.score * (1 + 1 / 2 + 1 / 3))


def test_logit_rankers_map_into_zero_one() -> None:
    class Logits:
        name = "gat"

    scores = np.array([-40.0, -2.0, 0.0, 3.0])
    out = relevance_scores(Logits(), scores, np.ones(4))
    assert np.all((out >= 0) & (out <= 1)) and np.all(np.diff(out) > 0)
    assert out[2] == pytest.approx(0.5)


def test_detects_foreign_keys_entities_and_chunks() -> None:
    candidates = [
        Candidate(
            "a",
            metadata={"foreign_keys": ["b"], "entities": ["x"], "doc_id": "d", "chunk_index": 0},
        ),
        Candidate("b", metadata={"doc_id": "d", "chunk_index": 1}),
    ]
    found = detect_proximities(candidates)
    assert ForeignKeys("foreign_keys") in found
    assert SharedEntities("entities") in found
    assert AdjacentChunks() in found


def test_detects_the_target_field_of_links_to_names() -> None:
    """LlamaIndex schema documents: node ids are UUIDs, links name table ids."""
    candidates = [
        Candidate(
            f"9f1c-{i}",
            score=1.0 - i / 10,
            metadata={"table_id": f"shop.t{i}", "foreign_keys": [f"shop.t{i + 1}"]},
        )
        for i in range(4)
    ]
    assert detect_proximities(candidates) == [ForeignKeys("foreign_keys", target_field="table_id")]
    ranked = GraphReranker(strict=True).run(candidates)
    assert ranked.edges == {"structural": 6}


def test_mentions_resolve_against_titles() -> None:
    candidates = [
        Candidate("p1", metadata={"title": "Ada Lovelace", "mentions": ["Babbage"]}),
        Candidate("p2", metadata={"title": "Babbage"}),
    ]
    assert detect_proximities(candidates) == [ForeignKeys("mentions", target_field="title")]


def test_the_choice_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    reranker = GraphReranker()
    with caplog.at_level(logging.INFO, logger="grapher"):
        for _ in range(3):
            reranker.rerank(_pool())
    detected = [r for r in caplog.records if "detected" in r.getMessage()]
    assert len(detected) == 1 and "ForeignKeys('foreign_keys')" in detected[0].getMessage()


def test_explicit_proximities_are_not_extended() -> None:
    reranker = GraphReranker([SharedEntities()])
    assert reranker.proximities_for(_pool()) == (SharedEntities(),)
    assert GraphReranker([]).proximities_for(_pool()) == ()
