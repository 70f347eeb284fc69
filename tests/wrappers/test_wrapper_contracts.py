"""The frameworks' contracts, honoured on every path: LlamaIndex instrumentation spans (async
too), ``to_dict``/``from_dict`` with an embedding model, pickling, and warnings that point at
the user's line through LlamaIndex's dispatcher and LangChain's runnables."""

from __future__ import annotations

import logging
import pickle
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core.bridge.pydantic import Field
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.schema import NodeWithScore, TextNode

from grapher_core import ForeignKeys, SharedEntities
from grapher_core.conventions import RELEVANCE_SCORE_KEY
from grapher_core.diagnostics import GraphERWarning
from langchain_grapher import GraphEREmbeddings, GraphERReranker, GraphERRetriever
from llama_index_grapher import GraphERLlamaEmbedding, GraphERPostprocessor

LINKS = [["t1", "t3"], [], ["t4"], ["t0", "t2"], [], ["t2"], ["t0"], ["t1"], [], ["t8"]]
ENTITIES = [["a"], ["b"], ["a", "c"], ["c"], ["b"], [], ["a"], ["d"], ["d"], []]


def documents() -> list[Document]:
    return [
        Document(
            id=f"t{i}",
            page_content=f"table {i}: rows about topic {i % 3}",
            metadata={"foreign_keys": links, "entities": ENTITIES[i], "score": 1.0 - i / 20},
        )
        for i, links in enumerate(LINKS)
    ]


def nodes() -> list[NodeWithScore]:
    return [
        NodeWithScore(
            node=TextNode(id_=d.id, text=d.page_content, metadata=dict(d.metadata)),
            score=d.metadata["score"],
        )
        for d in documents()
    ]


def ranking_of_documents(out: list[Document]) -> list[tuple[str | None, float]]:
    return [(d.id, round(d.metadata[RELEVANCE_SCORE_KEY], 12)) for d in out]


def ranking_of_nodes(out: list[NodeWithScore]) -> list[tuple[str, float]]:
    return [(n.node.node_id, round(float(n.score or 0.0), 12)) for n in out]


# -- LlamaIndex instrumentation: the rerank events belong to the call's span ---------------------
class Recorder(BaseEventHandler):
    """Keeps the events it is sent."""

    events: list[BaseEvent] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "Recorder"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.events.append(event)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    root = get_dispatcher()
    handler = Recorder()
    root.add_event_handler(handler)
    try:
        yield handler
    finally:
        root.event_handlers.remove(handler)


def rerank_events(recorder: Recorder) -> tuple[BaseEvent, BaseEvent]:
    (start,) = [e for e in recorder.events if isinstance(e, ReRankStartEvent)]
    (end,) = [e for e in recorder.events if isinstance(e, ReRankEndEvent)]
    return start, end


def test_sync_rerank_events_carry_the_span(recorder: Recorder) -> None:
    GraphERPostprocessor(proximities=[ForeignKeys()], top_n=3).postprocess_nodes(
        nodes(), query_str="q"
    )
    start, end = rerank_events(recorder)
    assert start.span_id is not None and start.span_id == end.span_id
    assert start.span_id.startswith("GraphERPostprocessor._postprocess_nodes-")


async def test_async_rerank_events_carry_the_span(recorder: Recorder) -> None:
    await GraphERPostprocessor(proximities=[ForeignKeys()], top_n=3).apostprocess_nodes(
        nodes(), query_str="q"
    )
    start, end = rerank_events(recorder)
    assert start.span_id is not None and start.span_id == end.span_id
    assert start.span_id.startswith("GraphERPostprocessor._apostprocess_nodes-")


# -- to_dict / from_dict with an embedding model -------------------------------------------------
@pytest.mark.parametrize(
    "model",
    [
        lambda: GraphERLlamaEmbedding(embed_batch_size=32),
        lambda: MockEmbedding(embed_dim=8),
    ],
    ids=["grapher", "mock"],
)
def test_from_dict_round_trip_keeps_the_embed_model(model: Callable[[], Any]) -> None:
    given = model()
    post = GraphERPostprocessor(
        proximities=[ForeignKeys(), SharedEntities()], top_n=4, embed_model=given
    )
    data = post.to_dict()
    assert data["embed_model"]["class_name"] == given.class_name()
    back = GraphERPostprocessor.from_dict(data)
    assert type(back.embed_model) is type(given)
    assert back.embed_model.to_dict() == given.to_dict()  # every field, not BaseEmbedding's only
    assert back.to_dict() == data
    assert GraphERPostprocessor.from_json(post.to_json()).to_dict() == data
    assert ranking_of_nodes(back.postprocess_nodes(nodes(), query_str="q")) == ranking_of_nodes(
        post.postprocess_nodes(nodes(), query_str="q")
    )


def test_from_dict_names_an_unknown_embedding_class() -> None:
    data = GraphERPostprocessor(embed_model=MockEmbedding(embed_dim=8)).to_dict()
    data["embed_model"]["class_name"] = "NoSuchEmbedding"
    with pytest.raises(ValueError, match="NoSuchEmbedding"):
        GraphERPostprocessor.from_dict(data)
    model = MockEmbedding(embed_dim=4)  # the live model can always be handed over
    assert GraphERPostprocessor.from_dict(data, embed_model=model).embed_model is model


# -- pickling -------------------------------------------------------------------------------------
class HashedEmbedder:
    """A picklable core embedder (module level) with a deterministic vector per text."""

    name = "hashed"

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.embed_query(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        v = np.random.default_rng(sum(map(ord, text))).normal(size=8)
        return (v / np.linalg.norm(v)).astype(np.float32)


def test_pickled_langchain_reranker_ranks_the_same() -> None:
    reranker = GraphERReranker(
        proximities=[ForeignKeys(), SharedEntities()],
        top_n=5,
        score_key="score",
        embeddings=GraphEREmbeddings(HashedEmbedder()),
    )
    before = ranking_of_documents(reranker.compress_documents(documents(), "q"))
    reranker.embeddings.embed_query("q")  # type: ignore[union-attr]  # something cached
    back = pickle.loads(pickle.dumps(reranker))
    assert back.top_n == 5 and back.core is not reranker.core
    assert len(back.core.vector_cache) == 0  # vectors and locks stay behind
    assert ranking_of_documents(back.compress_documents(documents(), "q")) == before
    assert back.embeddings.embed_query("q") == reranker.embeddings.embed_query("q")  # type: ignore[union-attr]


def test_pickled_llamaindex_postprocessor_ranks_the_same(caplog: pytest.LogCaptureFixture) -> None:
    post = GraphERPostprocessor(
        proximities=[ForeignKeys(), SharedEntities()],
        top_n=5,
        embed_model=GraphERLlamaEmbedding(HashedEmbedder()),
    )
    before = ranking_of_nodes(post.postprocess_nodes(nodes(), query_str="q"))
    with caplog.at_level(logging.WARNING):
        back = pickle.loads(pickle.dumps(post))
    assert "unpickleable" not in caplog.text  # nothing was silently dropped
    assert ranking_of_nodes(back.postprocess_nodes(nodes(), query_str="q")) == before


@pytest.mark.integration  # loads the packaged GAT checkpoint
def test_the_cores_pickle_with_a_learned_ranker() -> None:
    pytest.importorskip("torch")
    reranker = GraphERReranker(ranker="gat", proximities=[ForeignKeys()], embeddings=None)
    back = pickle.loads(pickle.dumps(reranker))
    assert back.core.ranker.name == "gat"


# -- warnings point at the user's line, whatever framework called GraphER ----------------------
def _graph_warnings(caught: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    found = [w for w in caught if issubclass(w.category, GraphERWarning)]
    assert found, "GraphER said nothing"
    return found


MISSPELLED = [ForeignKeys("foreign_kys")]  # no document has the field: GraphER says so


def test_postprocess_nodes_warns_at_the_callers_line() -> None:
    post = GraphERPostprocessor(proximities=MISSPELLED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        post.postprocess_nodes(nodes(), query_str="q")
    assert {w.filename for w in _graph_warnings(caught)} == {__file__}


async def test_apostprocess_nodes_warns_at_the_callers_line() -> None:
    post = GraphERPostprocessor(proximities=MISSPELLED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await post.apostprocess_nodes(nodes(), query_str="q")
    assert {w.filename for w in _graph_warnings(caught)} == {__file__}


def test_compress_documents_warns_at_the_callers_line() -> None:
    reranker = GraphERReranker(proximities=MISSPELLED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reranker.compress_documents(documents(), "q")
    assert {w.filename for w in _graph_warnings(caught)} == {__file__}


async def test_acompress_documents_warns_at_the_callers_line() -> None:
    reranker = GraphERReranker(proximities=MISSPELLED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await reranker.acompress_documents(documents(), "q")
    assert {w.filename for w in _graph_warnings(caught)} == {__file__}


def _store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    store.add_documents(documents())
    return store


def test_retriever_invoke_warns_at_the_callers_line() -> None:
    retriever = GraphERRetriever(
        base_retriever=_store().as_retriever(),
        reranker=GraphERReranker(proximities=MISSPELLED),
        fetch_k=10,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        retriever.invoke("q")
    assert {w.filename for w in _graph_warnings(caught)} == {__file__}


async def test_retriever_ainvoke_warns_at_the_callers_line() -> None:
    retriever = GraphERRetriever(
        base_retriever=_store().as_retriever(),
        reranker=GraphERReranker(proximities=MISSPELLED),
        fetch_k=10,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await retriever.ainvoke("q")
    assert {w.filename for w in _graph_warnings(caught)} == {__file__}


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_compression_retriever_invoke_warns_at_the_callers_line(mode: str) -> None:
    classic = pytest.importorskip("langchain_classic.retrievers")
    retriever = classic.ContextualCompressionRetriever(
        base_compressor=GraphERReranker(proximities=MISSPELLED),
        base_retriever=_store().as_retriever(search_kwargs={"k": 10}),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if mode == "sync":
            retriever.invoke("q")
        else:
            await retriever.ainvoke("q")
    assert {w.filename for w in _graph_warnings(caught)} == {__file__}
