"""The vectors a call asks for: given > stored > cached > missing, nothing asked for when nothing
reads vectors, float32 throughout, wrong shapes refused with the counts and dimensions named."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from grapher_core import Candidate, ForeignKeys, GraphReranker, SemanticKNN
from grapher_core.edges.graph import CandidateGraph
from grapher_core.errors import InputError
from grapher_core.expand import ExpandingReranker, InMemorySource
from grapher_core.ranking.base import RankContext
from grapher_core.request import Call, Embed, Embedded, ReadStored
from grapher_core.vectors import (
    VectorCache,
    check_batch,
    check_vector,
    fill_plan,
    model_key,
    plan_vectors,
)

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


def plan(
    reranker: Any,
    candidates: list[Candidate],
    *,
    query: str | None = "q",
    query_embedding: Any = None,
    embedder: Any = None,
    stored: Any = None,
    needed: bool | None = None,
) -> tuple[list[Any], Call[Any]]:
    """The vector steps of one call run to their first :class:`Embed` (stored vectors answered
    by ``stored``): the needs seen, and the call, waiting for the embedding answer."""
    core = reranker.reranker if isinstance(reranker, ExpandingReranker) else reranker
    steps = core.vector_steps(
        candidates,
        query=query,
        query_embedding=query_embedding,
        embedder=embedder,
        needed=True if isinstance(reranker, ExpandingReranker) else needed,
    )
    call: Call[Any] = Call(steps)
    needs: list[Any] = []
    need = call.start()
    while need is not None and not isinstance(need, Embed):
        needs.append(need)
        need = call.send(None if stored is None else stored(list(need.ids)))
    if need is not None:
        needs.append(need)
    return needs, call


def test_given_then_stored_then_cached_then_missing() -> None:
    reranker, model = semantic(), Named()
    reranker.vector_cache.put_many(model_key(model), ["text c"], [np.full(DIM, 3.0)])

    def stored(ids: list[str]) -> list[Any]:
        return [np.full(DIM, 2.0) if i == "b" else None for i in ids]

    needs, call = plan(reranker, pool(), embedder=model, stored=stored)
    assert model_key(model).endswith("Named:fake-4")
    assert needs[0] == ReadStored(("b", "c", "d"))  # only those without a vector
    assert needs[1] == Embed(("text d",), "q")  # b stored, c cached: d and the query missing
    call.send(Embedded(np.full((1, DIM), 4.0), np.ones(DIM)))
    candidates, query = call.result()
    assert [float(c.embedding[0]) for c in candidates] == [0.0, 2.0, 3.0, 4.0]
    assert all(c.embedding.dtype == np.float32 for c in candidates)
    assert query.dtype == np.float32
    needs, call = plan(reranker, pool(), query_embedding=np.ones(DIM))
    assert needs[-1].query is None  # given: not embedded again


def test_nothing_is_asked_for_when_nothing_reads_vectors() -> None:
    def stored(ids: list[str]) -> list[Any]:
        raise AssertionError("no vector is read when none is needed")

    reranker = GraphReranker([ForeignKeys()], "gcs")
    needs, call = plan(reranker, pool(), embedder=Named(), stored=stored)
    assert needs == [] and call.result()[0] == pool()
    assert reranker.embedding_model is None
    assert plan(semantic(), [])[0] == []  # no candidates: nothing either
    assert plan(reranker, pool())[1].result() == (pool(), None)


def test_filled_vectors_are_float32_cached_and_ranked() -> None:
    ranker = OwnEmbedder()
    reranker, model = GraphReranker([ForeignKeys()], ranker), Named()
    call = reranker.call(pool(), query="q", embedder=model, top_n=2)
    assert call.start() == ReadStored(("b", "c", "d"))
    need = call.send(None)
    assert ranker.looked_up == 0  # the caller's model: the ranker's own is never built
    assert need == Embed(("text b", "text c", "text d"), "q")
    embedded = [[1.0, 2.0, 3.0, 4.0]] * 3  # lists of Python floats, as frameworks return
    call.send(Embedded(embedded, [0.5] * DIM))
    assert [r.id for r in call.result().ranked] == ["a", "b"]
    context = ranker.contexts[-1]
    assert context.query_embedding is not None and context.query_embedding.dtype == np.float32
    assert {c.embedding.dtype for c in context.candidates if c.embedding is not None} == {
        np.dtype(np.float32)
    }
    assert all(c.embedding is not None for c in context.candidates)
    needs, _ = plan(reranker, pool(), embedder=model)
    assert needs[-1].texts == ()  # every text is cached now


def test_without_a_caller_model_the_rankers_own_embedder_is_named_and_caches() -> None:
    ranker = OwnEmbedder()
    reranker = GraphReranker([ForeignKeys()], ranker)
    assert reranker.embedding_model is ranker._embedder
    reranker.run(pool(), query="q")  # the core's own door: no model but the ranker's
    assert ranker._embedder.calls == [["text b", "text c", "text d"]]
    assert plan(reranker, pool())[0][-1].texts == ()
    needs, _ = plan(reranker, pool())
    assert needs[-1].fallback is ranker._embedder  # the model a door without one uses
    uncached = GraphReranker([ForeignKeys()], OwnEmbedder())
    uncached.vector_cache.max_items = 0  # nothing kept: every call embeds again
    uncached.run(pool(), query="q")
    assert plan(uncached, pool())[0][-1].texts == ("text b", "text c", "text d")


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
    _, call = plan(reranker, pool(), embedder=Named())
    with pytest.raises(InputError, match=message):
        call.send(Embedded(embedded, query))
    assert len(reranker.vector_cache) == 0  # nothing wrong was cached


def test_vectors_for_a_plan_without_missing_texts_are_refused() -> None:
    planned = plan_vectors(
        [Candidate("a", "x", embedding=np.ones(DIM))], needed=True, embedder=Named()
    )
    with pytest.raises(InputError, match="no text to embed"):
        fill_plan(planned, np.ones((1, DIM)))


def test_a_store_answering_the_wrong_count_is_named() -> None:
    with pytest.raises(InputError, match="vector store returned 1 vectors for 3 ids"):
        plan(semantic(), pool(), stored=lambda ids: [None])


def test_expansion_always_asks_in_the_wrapped_rerankers_space() -> None:
    inner = GraphReranker([ForeignKeys("mentions", target_field="title")], "gcs")
    expanding = ExpandingReranker(inner, InMemorySource([]))
    needs, call = plan(expanding, pool(), embedder=Named())
    assert needs[-1].texts == ("text b", "text c", "text d")
    call.send(Embedded(np.ones((3, DIM)), np.ones(DIM)))
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


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (np.ones((2, DIM)), r"shape \(2, 4\).*never flattened"),
        (np.ones((1, 1, DIM)), r"shape \(1, 1, 4\)"),
        (np.float32(1.0), r"shape \(\)"),
        (["x"] * DIM, "list of text"),
        (["0.5"] * DIM, "list of text"),
        ([None] * DIM, "list of objects"),
        ([True] * DIM, "list of booleans"),
        ([[1.0, 2.0], [3.0]], "not a vector of numbers"),
        (np.zeros(0), "is empty"),
        (np.array([1.0, np.inf, 0.0, 0.0]), "NaN or inf"),
        (np.array([1e300, 0.0, 0.0, 0.0]), "NaN or inf"),
    ],
)
def test_check_vector_refuses_what_is_not_one_finite_vector(value: Any, message: str) -> None:
    with pytest.raises(InputError, match=f"the thing {message}|the thing .*{message}"):
        check_vector(value, "the thing")


def test_check_vector_takes_d_and_1_by_d_and_keeps_a_float32_vector_as_it_is() -> None:
    vector = np.arange(DIM, dtype=np.float32)
    assert check_vector(vector, "v") is vector  # no copy on the common path
    assert check_vector(vector[None, :], "v").shape == (DIM,)
    assert check_vector([1, 2, 3, 4], "v").dtype == np.float32


def test_a_given_vector_of_another_dimension_names_both_candidates() -> None:
    mixed = [Candidate("a", "x", 1.0, {}, np.ones(DIM)), Candidate("b", "y", 0.5, {}, np.ones(3))]
    with pytest.raises(InputError, match="candidate 'b' has a 3-d vector, candidate 'a' a 4-d"):
        plan_vectors(mixed, needed=True, embedder=Named())


def test_a_nan_batch_blames_the_model_names_the_texts_and_is_never_cached() -> None:
    reranker = semantic()
    _, call = plan(reranker, pool(), embedder=Named())
    rows = np.ones((3, DIM))
    rows[1, 2] = np.nan
    with pytest.raises(InputError, match=r"model .*returned NaN or inf for 1 of 3 texts \('c'\)"):
        call.send(Embedded(rows, None))
    assert len(reranker.vector_cache) == 0


def test_check_batch_refuses_text_and_keeps_finite_rows() -> None:
    with pytest.raises(InputError, match="returned text, not numbers"):
        check_batch([["a"] * DIM], 1)
    assert check_batch(np.ones((2, DIM)), 2, DIM).dtype == np.float32


def test_the_vector_cache_never_keeps_a_non_finite_or_misshapen_row() -> None:
    """The bypass: a caller that skipped check_batch still cannot plant a NaN row."""
    cache = VectorCache()
    cache.put_many("m", ["nan", "2d", "ok"], [np.full(DIM, np.nan), np.ones((2, 2)), np.ones(DIM)])
    found = cache.get_many("m", ["nan", "2d", "ok"])
    assert found[0] is None and found[1] is None and found[2] is not None


def test_missing_texts_are_cleaned_before_the_model_and_the_candidates_keep_theirs() -> None:
    odd = [Candidate("odd-plan", "x \ud800 y"), Candidate("b", "fine")]
    with pytest.warns(UserWarning, match="lone surrogates.*'odd-plan'"):
        planned = plan_vectors(odd, needed=True, embedder=Named(), query="q \udfff")
    assert planned.missing_texts == ("x \ufffd y", "fine")
    assert planned.query_text == "q \ufffd"
    assert planned.candidates[0].text == "x \ud800 y"


def test_stacked_rows_equals_np_stack_and_refuses_what_it_cannot_stack() -> None:
    """The pool is stacked by one concatenate: the same array as ``np.stack`` for 1-D numpy
    vectors of one length, ``None`` (the callers' per-candidate checks then name the culprit)
    for anything else."""
    from grapher_core.vectors import stacked_rows

    rng = np.random.default_rng(0)
    pool = [rng.random(6).astype(np.float32) for _ in range(5)]
    stacked = stacked_rows(pool)
    assert stacked is not None and stacked.dtype == np.float32
    np.testing.assert_array_equal(stacked, np.stack(pool))
    assert stacked_rows([*pool, rng.random(5).astype(np.float32)]) is None  # ragged
    assert stacked_rows([*pool[:-1], rng.random(6).tolist()]) is None  # a list among them
    assert stacked_rows([v.reshape(1, 6) for v in pool]) is None  # rows, not vectors
    assert stacked_rows([]) is None
