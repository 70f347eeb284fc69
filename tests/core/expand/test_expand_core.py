"""Expansion in the core: link keys, the in-memory source, one fetch per hop, seed scores,
pruning, and ranking of the enlarged set."""

from __future__ import annotations

import numpy as np
import pytest

from grapher_core import AdjacentChunks, Candidate, CorpusObject, ForeignKeys, GraphReranker
from grapher_core.edges.base import link_value
from grapher_core.edges.entities import SharedEntities
from grapher_core.expand import (
    ExpandingReranker,
    Expansion,
    GraphExpander,
    InMemorySource,
    NeighbourSource,
    check_keys,
    field_values,
)

MENTIONS = ForeignKeys("mentions", target_field="title")


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return v / np.linalg.norm(v)


def passage(
    title: str, mentions: list[str], vector: np.ndarray | None = None, score: float | None = None
) -> Candidate:
    return Candidate(
        title, f"{title}\nabout {title}", score, {"title": title, "mentions": mentions}, vector
    )


class CountingSource:
    """Wraps a real InMemorySource and records every key batch (for call counting)."""

    def __init__(self, inner: InMemorySource) -> None:
        self.inner = inner
        self.batches: list[list[tuple]] = []

    def fetch(self, keys):  # type: ignore[no-untyped-def]
        self.batches.append(list(keys))
        return self.inner.fetch(keys)


@pytest.fixture
def corpus() -> list[Candidate]:
    return [
        passage("Film", ["Director"], unit(1, 0.2, 0)),
        passage("Director", ["Mother"], unit(0.6, 1, 0)),
        passage("Mother", [], unit(0.5, 0, 1)),
        passage("Noise", ["Film"], unit(-1, 0, 0.1)),
        passage("Other", [], unit(0.9, 0.1, 0.1)),
    ]


def test_link_value_canonical_forms() -> None:
    assert link_value(3) == link_value(3.0) == link_value(" 3 ") == "3"
    assert link_value(True) == "True"


def test_proximity_link_keys() -> None:
    c = passage("Film", ["Director", "Mother"])
    assert MENTIONS.link_keys(c) == [(("title", "Director"),), (("title", "Mother"),)]
    assert MENTIONS.own_keys(c) == [(("title", "Film"),)]
    assert MENTIONS.reverse_keys(c) == [(("mentions", "Film"),)]
    fk = ForeignKeys()
    table = Candidate("db.a", metadata={"foreign_keys": ["db.b"]})
    assert fk.link_keys(table) == [((None, "db.b"),)]
    assert fk.own_keys(table) == [((None, "db.a"),)]
    chunks = AdjacentChunks()
    first = Candidate("d#0", metadata={"doc_id": "d", "chunk_index": 0})
    middle = Candidate("d#2", metadata={"doc_id": "d", "chunk_index": "2"})
    assert chunks.link_keys(first) == [(("doc_id", "d"), ("chunk_index", "1"))]
    assert chunks.link_keys(middle) == [
        (("doc_id", "d"), ("chunk_index", "1")),
        (("doc_id", "d"), ("chunk_index", "3")),
    ]
    assert chunks.link_keys(Candidate("x", metadata={"doc_id": "d"})) == []


def test_field_values_keeps_whole_titles_with_commas() -> None:
    values = field_values("x", {"title": "Paris, Texas"}, "title")
    assert values[0] == "Paris, Texas"
    assert field_values("x", {}, None) == ["x"]
    assert field_values("x", {"mentions": ["A", "B"]}, "mentions") == ["A", "B"]


def test_in_memory_source_fetches_by_id_field_and_composite_key() -> None:
    objects = [
        CorpusObject("d#0", "zero", {"doc_id": "d", "chunk_index": 0, "title": "D"}),
        CorpusObject("d#1", "one", {"doc_id": "d", "chunk_index": 1, "title": "D"}),
        CorpusObject("e#0", "other", {"doc_id": "e", "chunk_index": 0, "title": "E"}),
    ]
    source = InMemorySource(objects)
    assert isinstance(source, NeighbourSource)
    got = source.fetch(
        [((None, "e#0"),), (("title", "D"),), (("chunk_index", "1"), ("doc_id", "d"))]
    )
    assert [c.id for c in got] == ["e#0", "d#0", "d#1"]
    assert source.calls == 1
    assert all(c.score is None and c.embedding is None for c in got)
    assert source.fetch([(("title", "missing"),)]) == []


def test_in_memory_source_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="duplicate object ids"):
        InMemorySource([CorpusObject("a", ""), CorpusObject("a", "")])
    with pytest.raises(ValueError, match="embeddings"):
        InMemorySource([CorpusObject("a", "")], embeddings=np.zeros((2, 3)))
    with pytest.raises(TypeError, match="CorpusObject"):
        InMemorySource(["a"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="link key"):
        check_keys([("title", "x")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not a string"):
        check_keys("title")  # type: ignore[arg-type]


def test_expansion_fetches_missing_link_target_in_one_call_per_hop(corpus) -> None:
    source = CountingSource(InMemorySource(corpus))
    film = corpus[0]
    candidates = [
        Candidate(film.id, film.text, 0.9, film.metadata, film.embedding),
        Candidate("Other", "Other", 0.5, {"title": "Other"}, corpus[4].embedding),
    ]
    expander = GraphExpander([MENTIONS], source, Expansion(seeds=2, hops=2, budget=10))
    result = expander.expand(candidates, query_embedding=unit(1, 0, 0))
    assert result.added == ("Director", "Mother")  # hop 1 then hop 2
    assert result.fetch_calls == len(source.batches) == 2
    assert source.batches[0] == [(("title", "Director"),)]
    assert source.batches[1] == [(("title", "Mother"),)]
    assert [c.id for c in result.candidates[:2]] == ["Film", "Other"]  # originals first
    assert all(c.score is not None for c in result.candidates)


def test_expansion_skips_links_already_among_candidates(corpus) -> None:
    source = CountingSource(InMemorySource(corpus))
    candidates = [
        Candidate(c.id, c.text, 1.0 - i / 10, c.metadata, c.embedding)
        for i, c in enumerate(corpus[:2])
    ]
    result = GraphExpander([MENTIONS], source, Expansion(seeds=1, hops=1)).expand(
        candidates, query_embedding=unit(1, 0, 0)
    )
    assert result.added == () and result.fetch_calls == 0  # Director is a candidate already


def test_one_fetch_per_hop_however_many_edges() -> None:
    objects = [passage(f"T{i}", []) for i in range(50)]
    hub = passage("Hub", [f"T{i}" for i in range(50)], score=1.0)
    source = CountingSource(InMemorySource([*objects, hub]))
    result = GraphExpander([MENTIONS], source, Expansion(seeds=1, hops=1, budget=100)).expand([hub])
    assert len(result.added) == 50
    assert result.fetch_calls == 1 and len(source.batches) == 1


def test_budget_keeps_most_query_similar() -> None:
    q = unit(1, 0)
    objects = [passage(f"T{i}", [], unit(1, i)) for i in range(5)]  # T0 most similar
    hub = passage("Hub", [f"T{i}" for i in range(5)][::-1], unit(1, 0), score=1.0)
    result = GraphExpander(
        [MENTIONS], InMemorySource([*objects, hub]), Expansion(seeds=1, budget=2)
    ).expand([hub], query_embedding=q)
    assert result.added == ("T0", "T1")


def test_prune_threshold_drops_dissimilar_neighbours() -> None:
    q = unit(1, 0)
    near, far = passage("Near", [], unit(1, 0.1)), passage("Far", [], unit(0, 1))
    hub = passage("Hub", ["Far", "Near"], unit(1, 0), score=1.0)
    result = GraphExpander(
        [MENTIONS], InMemorySource([near, far, hub]), Expansion(seeds=1, prune_threshold=0.5)
    ).expand([hub], query_embedding=q)
    assert result.added == ("Near",)
    assert result.similarities["Near"] == pytest.approx(float(unit(1, 0.1) @ q))


def test_seed_scores_calibrated_to_candidate_scale() -> None:
    q = unit(1, 0)
    # Candidate scores are exactly 2 * cosine + 1: the fitted line must give that back.
    vectors = [unit(1, t) for t in (0.0, 0.5, 1.0, 2.0)]
    candidates = [
        Candidate(
            f"c{i}",
            "",
            float(2 * (v @ q) + 1),
            {"title": f"c{i}", "mentions": ["New"] if i == 0 else []},
            v,
        )
        for i, v in enumerate(vectors)
    ]
    new = passage("New", [], unit(1, 1.5))
    result = GraphExpander([MENTIONS], InMemorySource([new]), Expansion(seeds=1)).expand(
        candidates, query_embedding=q
    )
    assert result.candidates[-1].score == pytest.approx(2 * float(unit(1, 1.5) @ q) + 1)


def test_fallback_scores_without_embeddings_and_without_scores() -> None:
    new = passage("New", [])
    scored = [passage("A", ["New"], score=0.9), passage("B", [], score=0.2)]
    result = GraphExpander([MENTIONS], InMemorySource([new]), Expansion(seeds=1)).expand(scored)
    assert result.candidates[-1].score == 0.2  # the lowest candidate score
    unscored = [passage("A", ["New"]), passage("B", [])]
    result = GraphExpander([MENTIONS], InMemorySource([new]), Expansion(seeds=1)).expand(unscored)
    assert result.candidates[-1].score is None


def test_embedder_embeds_fetched_objects_without_vectors() -> None:
    class Fixed:
        calls = 0

        def embed_documents(self, texts: list[str]) -> np.ndarray:
            Fixed.calls += 1
            return np.tile(unit(1, 0.3), (len(texts), 1))

    hub = passage("Hub", ["New"], unit(1, 0), score=1.0)
    other = passage("Other", [], unit(0, 1), score=0.1)
    result = GraphExpander(
        [MENTIONS], InMemorySource([passage("New", [])]), Expansion(seeds=1), embedder=Fixed()
    ).expand([hub, other], query_embedding=unit(1, 0))
    assert Fixed.calls == 1
    assert "New" in result.similarities


def test_expander_validates_configuration(corpus) -> None:
    source = InMemorySource(corpus)
    with pytest.raises(ValueError, match="link fields"):
        GraphExpander([SharedEntities()], source)
    with pytest.raises(ValueError, match="seeds"):
        GraphExpander([MENTIONS], source, Expansion(seeds=0))
    with pytest.raises(ValueError, match="prune_threshold"):
        GraphExpander([MENTIONS], source, Expansion(prune_threshold=2.0))
    with pytest.raises(TypeError, match="neighbour source"):
        GraphExpander([MENTIONS], object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="duplicate"):
        GraphExpander([MENTIONS], source).expand([corpus[0], corpus[0]])


def test_expanding_reranker_lifts_fetched_link_target_into_top(corpus) -> None:
    q = unit(1, 0, 0)
    film = corpus[0]
    candidates = [Candidate("Film", film.text, 0.9, film.metadata, film.embedding)] + [
        Candidate(f"filler{i}", "x", 0.5 - i / 100, {"title": f"filler{i}"}, unit(0.5, 0, 1))
        for i in range(8)
    ]
    plain = GraphReranker([MENTIONS]).rerank(candidates, query_embedding=q)
    assert "Director" not in [r.id for r in plain]
    reranker = ExpandingReranker(
        GraphReranker([MENTIONS]), InMemorySource(corpus), Expansion(seeds=3)
    )
    ranked, expansion = reranker.rerank_with_expansion(candidates, query_embedding=q, top_n=3)
    assert expansion.added == ("Director",)
    assert [r.id for r in ranked][:2] == ["Film", "Director"]
    director = ranked[1]
    assert director.original_rank == len(candidates) + 1
    assert director.expanded and not any(r.expanded for r in ranked if r.id != "Director")
    assert reranker.needs_embeddings
    assert director.explanation and director.explanation[0].neighbour_id == "Film"
    # the input list is untouched and a plain rerank is unchanged by the wrapper
    assert len(candidates) == 9 and candidates[0].id == "Film"


def test_chunk_expansion_fetches_previous_and_next() -> None:
    objects = [
        CorpusObject(f"d#{k}", f"chunk {k}", {"doc_id": "d", "chunk_index": k}) for k in range(5)
    ]
    source = InMemorySource(objects)
    hit = Candidate("d#2", "chunk 2", 1.0, {"doc_id": "d", "chunk_index": 2})
    result = GraphExpander([AdjacentChunks()], source, Expansion(seeds=1, hops=1)).expand([hit])
    assert set(result.added) == {"d#1", "d#3"}
    assert source.calls == 1


def test_unscored_candidates_get_rank_seeds_and_fetched_are_placed_by_similarity() -> None:
    q = unit(1, 0)
    candidates = [
        passage("A", ["New"], unit(1, 0.1)),
        passage("B", [], unit(1, 1)),
        passage("C", [], unit(0, 1)),
    ]
    new = passage("New", [], unit(1, 0.2))
    result = GraphExpander([MENTIONS], InMemorySource([new]), Expansion(seeds=1)).expand(
        candidates, query_embedding=q
    )
    scores = [c.score for c in result.candidates]
    assert scores[:3] == [1.0, 0.5, pytest.approx(1 / 3)]  # the rank seeds, now explicit
    assert scores[2] <= scores[3] <= 1.0  # as similar as A: calibrated near the top
    assert [c.id for c in candidates] == ["A", "B", "C"] and candidates[0].score is None
