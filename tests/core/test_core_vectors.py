"""The core's vector plan: given > stored > cached > missing, nothing planned when nothing reads
vectors, float32 throughout, wrong shapes refused with the counts and dimensions named."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from grapher_core import Candidate, ForeignKeys, GraphReranker, SemanticKNN
from grapher_core.edges.graph import CandidateGraph
from grapher_core.errors import InputError
from grapher_core.expand import ExpandingReranker, InMemorySource
from grapher_core.ranking.base import RankContext
from grapher_core.vectors import fill_plan, model_key, plan_vectors

DIM = 4


class Named:
    """A stand-in embedding model: only its name is read by the plan."""

    name = "fake-4"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.ones((len(texts), DIM), dtype=np.float64)


class OwnEmbedder:
    """A learned-style ranker holding its own embedder (looked up only when asked)."""

    name = "own"
    needs_embeddings = True

    def __init__(self) -> None:
        self.looked_up = 0
        self._embedder = Named()
        self.contexts: list[RankContext] = []

    @property
    def embedder(self) -> Named:
        self.looked_up += 1
        return self._embedder

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        self.contexts.append(context)
        return np.asarray(seeds, dtype=np.float64)


def pool() -> list[Candidate]:
    given = np.arange(DIM, dtype=np.float64)
    return [
        Candidate("a", "text a", 0.9, {}, given),
        Candidate("b", "text b", 0.8),
        Candidate("c", "text c", 0.7),
        Candidate("d", "text d", 0.6),
    ]


def semantic() -> GraphReranker:
    return GraphReranker([SemanticKNN(k=1, threshold=-1.0)], "gcs")


def test_given_then_stored_then_cached_then_missing() -> None:
    reranker, model = semantic(), Named()
    reranker.vector_cache.put_many(model_key(model), ["text c"], [np.full(DIM, 3.0)])
    stored_asked: list[list[str]] = []

    def stored(ids: list[str]) -> list[Any]:
        stored_asked.append(ids)
        return [np.full(DIM, 2.0) if i == "b" else None for i in ids]

    plan = reranker.vector_plan(pool(), query="q", embedder=model, stored=stored)
    assert plan.needed and plan.model == model_key(model)
    assert plan.model.endswith("Named:fake-4")
    assert plan.origins == ("given", "stored", "cached", "missing")
    assert stored_asked == [["b", "c", "d"]]  # only those without a vector
    assert plan.missing == (3,) and plan.missing_texts == ("text d",)
    assert plan.query_text == "q"
    assert all(v.dtype == np.float32 for v in plan.vectors if v is not None)
    with_query = reranker.vector_plan(pool(), query="q", query_embedding=np.ones(DIM))
    assert with_query.query_text is None  # given: not embedded again
    assert with_query.query_embedding is not None
    assert with_query.query_embedding.dtype == np.float32


def test_nothing_is_planned_when_nothing_reads_vectors() -> None:
    def stored(ids: list[str]) -> list[Any]:
        raise AssertionError("no vector is read when none is needed")

    reranker = GraphReranker([ForeignKeys()], "gcs")
    plan = reranker.vector_plan(pool(), query="q", embedder=Named(), stored=stored)
    assert not plan.needed and plan.missing_texts == () and plan.query_text is None
    assert reranker.embedding_model is None
    assert not semantic().vector_plan([], query="q").needed  # no candidates: nothing either
    candidates, query = fill_plan(plan, None, None)
    assert candidates == pool() and query is None


def test_filled_vectors_are_float32_cached_and_ranked() -> None:
    ranker = OwnEmbedder()
    reranker, model = GraphReranker([ForeignKeys()], ranker), Named()
    plan = reranker.vector_plan(pool(), query="q", embedder=model)
    assert ranker.looked_up == 0  # the caller's model: the ranker's own is never built
    assert plan.missing_texts == ("text b", "text c", "text d")
    embedded = [[1.0, 2.0, 3.0, 4.0]] * 3  # lists of Python floats, as frameworks return
    result = reranker.run_plan(plan, embedded, [0.5] * DIM, top_n=2)
    assert [r.id for r in result.ranked] == ["a", "b"]
    context = ranker.contexts[-1]
    assert context.query_embedding is not None and context.query_embedding.dtype == np.float32
    assert {c.embedding.dtype for c in context.candidates if c.embedding is not None} == {
        np.dtype(np.float32)
    }
    assert all(c.embedding is not None for c in context.candidates)
    again = reranker.vector_plan(pool(), query="q", embedder=model)
    assert again.origins == ("given", "cached", "cached", "cached") and not again.missing_texts


def test_without_a_caller_model_the_rankers_own_embedder_fills_and_caches() -> None:
    ranker = OwnEmbedder()
    reranker = GraphReranker([ForeignKeys()], ranker)
    assert reranker.embedding_model is ranker._embedder
    plan = reranker.vector_plan(pool(), query="q")
    assert plan.model == model_key(ranker._embedder)
    reranker.run_plan(plan)
    assert ranker._embedder.calls == [["text b", "text c", "text d"]]
    assert reranker.vector_plan(pool(), query="q").missing_texts == ()
    uncached = GraphReranker([ForeignKeys()], OwnEmbedder())
    uncached.vector_cache.max_items = 0  # nothing kept: every call embeds again
    uncached.run_plan(uncached.vector_plan(pool(), query="q"))
    assert uncached.vector_plan(pool(), query="q").missing == (1, 2, 3)


@pytest.mark.parametrize(
    ("embedded", "query", "message"),
    [
        (np.ones((2, DIM)), None, "2 vectors .*for 3 texts"),
        (np.ones((3, DIM + 1)), None, f"dimension {DIM + 1}.* have {DIM}"),
        ([[1.0] * DIM, [1.0] * DIM, [1.0]], None, "different lengths for 3 texts"),
        (np.ones(3), None, "for 3 texts"),
        (np.ones((3, DIM)), np.ones(DIM + 2), f"query vector has dimension {DIM + 2}"),
    ],
)
def test_wrong_shapes_are_refused(embedded: Any, query: Any, message: str) -> None:
    reranker = semantic()
    plan = reranker.vector_plan(pool(), query="q", embedder=Named())
    with pytest.raises(InputError, match=message):
        reranker.run_plan(plan, embedded, query)
    assert len(reranker.vector_cache) == 0  # nothing wrong was cached


def test_vectors_for_a_plan_without_missing_texts_are_refused() -> None:
    plan = plan_vectors(
        [Candidate("a", "x", embedding=np.ones(DIM))], needed=True, embedder=Named()
    )
    with pytest.raises(InputError, match="no text to embed"):
        fill_plan(plan, np.ones((1, DIM)))


def test_a_store_answering_the_wrong_count_is_named() -> None:
    with pytest.raises(InputError, match="vector store returned 1 vectors for 3 ids"):
        semantic().vector_plan(pool(), stored=lambda ids: [None])


def test_expansion_always_plans_in_the_wrapped_rerankers_space() -> None:
    inner = GraphReranker([ForeignKeys("mentions", target_field="title")], "gcs")
    expanding = ExpandingReranker(inner, InMemorySource([]))
    plan = expanding.vector_plan(pool(), query="q", embedder=Named())
    assert plan.needed and plan.missing_texts == ("text b", "text c", "text d")
    expanding.run_plan(plan, np.ones((3, DIM)), np.ones(DIM))
    assert len(inner.vector_cache) == 3


def test_model_key_never_loads_a_model() -> None:
    class Lazy:
        name = "lazy"

        @property
        def model(self) -> str:
            raise AssertionError("a key must not load the network")

    assert model_key(Lazy()).endswith(":lazy")
    anonymous = object()
    assert model_key(anonymous) != model_key(object())  # unnamed: keyed by identity
