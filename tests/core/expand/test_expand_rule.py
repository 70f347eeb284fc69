"""The expansion rule's parts: entity links with the hub cap, floor seeds, soft pruning, and
the ego-graph index (build, search, sidecar round trip, joining the candidates)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grapher_core import Candidate, ForeignKeys, GraphReranker, SharedEntities
from grapher_core.expand import (
    CosinePruner,
    EgoGraphIndex,
    EntityLinks,
    ExpandingReranker,
    Expansion,
    GraphExpander,
    InMemorySource,
    corpus_links,
    linkable,
)

MENTIONS = ForeignKeys("mentions", target_field="title")


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return v / np.linalg.norm(v)


def obj(
    title: str,
    vector: np.ndarray,
    score: float | None = None,
    mentions: tuple = (),
    entities: tuple = (),
) -> Candidate:
    return Candidate(
        title,
        f"{title}\nabout {title}",
        score,
        {"title": title, "mentions": list(mentions), "entities": list(entities)},
        vector,
    )


def test_entity_links_skip_hubs_and_are_followed_only_on_request() -> None:
    cands = [obj(f"c{i}", unit(1, i), 1.0 - i / 10, entities=("hub", f"e{i}")) for i in range(4)]
    links = EntityLinks(max_share=0.5).for_candidates(cands)
    assert links.hubs == frozenset({"hub"})  # 4 of 4 candidates hold it
    assert links.link_keys(cands[0]) == [(("entities", "e0"),)]
    assert linkable([SharedEntities()]) == []
    followed = linkable([SharedEntities(max_holders=3), MENTIONS], entities=True)
    assert isinstance(followed[0], EntityLinks) and followed[0].max_share == 3
    with pytest.raises(ValueError, match="follow_entities"):
        GraphExpander([SharedEntities()], InMemorySource([]))


def test_expansion_follows_entities_and_floor_seeds() -> None:
    cands = [obj("A", unit(1, 0), 0.9, entities=("Nolan",)), obj("B", unit(0.9, 0.4), 0.5)]
    corpus = [
        *cands,
        obj("C", unit(1, 0.05), entities=("Nolan",)),
        obj("D", unit(0, 1), entities=("other",)),
    ]
    source = InMemorySource(corpus)
    q = unit(1, 0)
    expander = GraphExpander(
        [SharedEntities(max_share=0.9)], source, Expansion(follow_entities=True)
    )
    result = expander.expand(cands, query_embedding=q)
    assert result.added == ("C",)
    calibrated = result.candidates[-1].score
    assert calibrated is not None and calibrated > 0.5  # very query-similar: high seed
    floor = GraphExpander(
        [SharedEntities(max_share=0.9)], source, Expansion(follow_entities=True, seed_rule="floor")
    ).expand(cands, query_embedding=q)
    assert floor.candidates[-1].score == pytest.approx(0.5)  # the lowest candidate score
    with pytest.raises(ValueError, match="seed_rule"):
        GraphExpander([MENTIONS], source, Expansion(seed_rule="nope"))


def test_soft_pruning_scales_and_drops_fetched_objects() -> None:
    cands = [obj("A", unit(1, 0), 0.9, mentions=("Good", "Bad")), obj("B", unit(0.7, 0.7), 0.4)]
    corpus = [*cands, obj("Good", unit(0.95, 0.3)), obj("Bad", unit(-0.2, 1))]
    q = unit(1, 0)
    plain = ExpandingReranker(GraphReranker([MENTIONS]), InMemorySource(corpus))
    assert {r.id for r in plain.rerank(cands, query_embedding=q)} == {"A", "B", "Good", "Bad"}

    class Half:
        def alphas(self, query: np.ndarray, objects: np.ndarray) -> np.ndarray:
            return np.full(len(objects), 0.5)

    unpruned = {r.id: r.score for r in plain.rerank(cands, query_embedding=q)}
    halved = ExpandingReranker(
        GraphReranker([MENTIONS]), InMemorySource(corpus), pruner=Half()
    ).rerank(cands, query_embedding=q)
    scores = {r.id: r.score for r in halved}
    assert scores["Good"] == pytest.approx(unpruned["Good"] / 2)
    assert scores["A"] == pytest.approx(unpruned["A"])
    assert [r.rank for r in halved] == list(range(1, 5))
    assert [r.score for r in halved] == sorted(scores.values(), reverse=True)
    cosine = ExpandingReranker(
        GraphReranker([MENTIONS]), InMemorySource(corpus), pruner=CosinePruner(0.5)
    )
    ranked, expansion = cosine.rerank_with_expansion(cands, query_embedding=q, top_n=3)
    assert set(expansion.added) == {"Good", "Bad"}
    assert "Bad" not in {r.id for r in ranked} and len(ranked) == 3
    with pytest.raises(TypeError, match="alphas"):
        ExpandingReranker(GraphReranker([MENTIONS]), InMemorySource(corpus), pruner=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold"):
        CosinePruner(2.0)


def test_ego_graph_index_build_search_save_and_join(tmp_path: Path) -> None:
    # chain A -> B -> C, and D alone; vectors put the query near C's neighbourhood
    corpus = [
        obj("A", unit(1, 0, 0), mentions=("B",)),
        obj("B", unit(0, 1, 0), mentions=("C",)),
        obj("C", unit(0, 0, 1)),
        obj("D", unit(1, 1, 0)),
    ]
    assert corpus_links(corpus, [MENTIONS]) == [[1], [0, 2], [1], []]
    one = EgoGraphIndex.build(corpus, np.vstack([c.embedding for c in corpus]), [MENTIONS])
    two = EgoGraphIndex.build(corpus, np.vstack([c.embedding for c in corpus]), [MENTIONS], hops=2)
    assert one.group(0) == ["A", "B"] and two.group(0) == ["A", "B", "C"]
    assert np.allclose(one.vectors[3], unit(1, 1, 0))  # alone: its own vector
    expected = unit(*(np.asarray(unit(0, 1, 0)) + unit(0, 0, 1)))
    assert np.allclose(one.vectors[2], expected)  # mean of C and B
    best = one.search(unit(0, 0.5, 1), 1)
    assert best[0][0] == 2
    path = tmp_path / "ego.npz"
    one.save(path)
    loaded = EgoGraphIndex.load(path)
    assert loaded.ids == one.ids and np.allclose(loaded.vectors, one.vectors)
    assert loaded.group(1) == one.group(1) and loaded.hops == 1

    class Words:
        def embed_documents(self, texts: list[str]) -> np.ndarray:
            assert set(texts) == {"A", "B", "C", "mentions"}  # labels and phrases, once each
            return np.tile(unit(1, 1, 1), (len(texts), 1))

    with_edges = EgoGraphIndex.build(
        corpus, np.vstack([c.embedding for c in corpus]), [MENTIONS], edge_embedder=Words()
    )
    assert not np.allclose(with_edges.vectors[0], one.vectors[0])
    cands = [obj("D", unit(1, 1, 0), 0.8)]
    reranker = one.reranker(GraphReranker([MENTIONS]), InMemorySource(corpus), n=1)
    joined = reranker.join(cands, unit(0, 0.5, 1))
    assert set(joined.added) == {"B", "C"}
    assert all(c.score == pytest.approx(0.8) for c in joined.candidates[1:])  # floor seeds
    assert {r.id for r in reranker.rerank(cands, query_embedding=unit(0, 0.5, 1))} == {
        "B",
        "C",
        "D",
    }
    with pytest.raises(ValueError, match="hops"):
        EgoGraphIndex.build(corpus, np.eye(4, 3), [MENTIONS], hops=0)
    with pytest.raises(ValueError, match="link fields"):
        EgoGraphIndex.build(corpus, np.eye(4, 3), [SharedEntities()])


def test_keep_candidate_scores_never_reorders_candidates() -> None:
    # A links to the fetched hub F; in the enlarged graph F dilutes A's lift to B
    cands = [
        obj("A", unit(1, 0), 0.9, mentions=("B", "F")),
        obj("B", unit(0.8, 0.6), 0.3),
        obj("C", unit(0.6, 0.8), 0.35),
    ]
    corpus = [*cands, obj("F", unit(0.9, 0.1), mentions=("A",))]
    q = unit(1, 0)
    reranker = GraphReranker([MENTIONS])
    own = [r.id for r in reranker.rerank(cands, query_embedding=q)]
    kept = ExpandingReranker(reranker, InMemorySource(corpus), keep_candidate_scores=True)
    ranked = kept.rerank(cands, query_embedding=q)
    assert [r.id for r in ranked if r.id != "F"] == own
    assert [r.rank for r in ranked] == [1, 2, 3, 4] and {r.id for r in ranked} == {*own, "F"}
    fetched = next(r for r in ranked if r.id == "F")
    assert fetched.expanded and not any(r.expanded for r in ranked if r.id != "F")
    assert len(kept.rerank(cands, query_embedding=q, top_n=2)) == 2
