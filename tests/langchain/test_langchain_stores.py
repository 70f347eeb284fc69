"""Scores from every store, stored vectors reused, no leaked warnings, a trace event."""

from __future__ import annotations

import uuid
import warnings
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from test_langchain_embeddings_path import GraphRecorder, RecordingEmbeddings

from grapher_core import SemanticKNN
from grapher_core.conventions import RETRIEVAL_SCORE_KEY
from langchain_grapher import GraphERReranker, GraphERRetriever
from langchain_grapher.retriever import RERANK_EVENT
from langchain_grapher.stores import relevance_scores, stored_vectors

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray

TEXTS = [
    f"table {name}"
    for name in (
        "orders",
        "customers",
        "products",
        "stock",
        "suppliers",
        "invoices",
        "payments",
        "cities",
        "stores",
        "staff",
    )
]


def _documents() -> list[Document]:
    return [
        Document(id=f"t{i}", page_content=t, metadata={"foreign_keys": [f"t{(i + 1) % 10}"]})
        for i, t in enumerate(TEXTS)
    ]


def _memory(embeddings: Any) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embeddings)
    store.add_documents(_documents())
    return store


def test_in_memory_store_gets_retrieval_scores_without_any_warning() -> None:
    retriever = GraphERRetriever(
        base_retriever=_memory(RecordingEmbeddings()).as_retriever(), k=3, fetch_k=10
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = retriever.batch(["orders?", "customers?", "stock?"])
    assert not [w for w in caught if "between 0 and 1" in str(w.message)]
    for out in batches:
        assert len(out) == 3
        assert all(isinstance(d.metadata[RETRIEVAL_SCORE_KEY], float) for d in out)
        assert all(0.0 <= d.metadata["relevance_score"] <= 1.0 for d in out)


def test_distances_and_relevance_functions_are_converted() -> None:
    class Distances:
        def _select_relevance_score_fn(self) -> Any:
            raise NotImplementedError

    class Euclid:
        def _select_relevance_score_fn(self) -> Any:
            return lambda d: 1.0 - d / 2

    assert relevance_scores(Distances(), [0.9, 0.5, 0.1]) == [0.9, 0.5, 0.1]  # similarities
    assert relevance_scores(Distances(), [0.0, 1.0, 3.0]) == [1.0, 0.5, 0.25]  # 1 / (1 + d)
    assert relevance_scores(Euclid(), [0.0, 1.0]) == [1.0, 0.5]  # the store's own function


def test_stored_vectors_are_reused_from_the_in_memory_store() -> None:
    embeddings = RecordingEmbeddings()
    store = _memory(embeddings)
    embeddings.calls.clear()
    ranker = GraphRecorder()
    reranker = GraphERReranker(
        ranker=ranker, embeddings=embeddings, proximities=[SemanticKNN(k=2, threshold=-1.0)]
    )
    retriever = GraphERRetriever(
        base_retriever=store.as_retriever(), reranker=reranker, k=3, fetch_k=10
    )
    retriever.invoke("orders?")
    assert ("docs", 10) not in embeddings.calls  # the store's vectors, not re-embedded
    assert ranker.graphs[-1].by_kind["semantic"].nnz >= 10
    first = stored_vectors(store, _documents()[:2])[0]
    assert first is not None
    assert first.tolist() == pytest.approx(store.store["t0"]["vector"], rel=1e-6)


def test_vectors_of_another_model_are_not_reused() -> None:
    store = _memory(RecordingEmbeddings(size=8))
    mine = RecordingEmbeddings(size=8)
    reranker = GraphERReranker(
        ranker=GraphRecorder(), embeddings=mine, proximities=[SemanticKNN(k=2, threshold=-1.0)]
    )
    GraphERRetriever(base_retriever=store.as_retriever(), reranker=reranker, fetch_k=10).invoke(
        "orders?"
    )
    assert ("docs", 10) in mine.calls  # embedded with the reranker's model (then cached)


def test_chroma_vectors_are_reused() -> None:
    chromadb = pytest.importorskip("chromadb")
    langchain_chroma = pytest.importorskip("langchain_chroma")
    embeddings = RecordingEmbeddings()
    store = langchain_chroma.Chroma(
        collection_name=f"v-{uuid.uuid4().hex[:8]}",
        embedding_function=embeddings,
        client=chromadb.EphemeralClient(),
        collection_metadata={"hnsw:space": "cosine"},
    )
    store.add_documents(_documents())
    embeddings.calls.clear()
    reranker = GraphERReranker(
        ranker=GraphRecorder(),
        embeddings=embeddings,
        proximities=[SemanticKNN(k=2, threshold=-1.0)],
    )
    out = GraphERRetriever(
        base_retriever=store.as_retriever(), reranker=reranker, k=3, fetch_k=10
    ).invoke("orders?")
    assert ("docs", 10) not in embeddings.calls
    vectors = stored_vectors(store, _documents())
    assert vectors is not None and all(v is not None and len(v) == 8 for v in vectors)
    assert all(RETRIEVAL_SCORE_KEY in d.metadata for d in out)


def test_rerank_event_reaches_callbacks() -> None:
    class Events(BaseCallbackHandler):
        def __init__(self) -> None:
            self.seen: list[tuple[str, Any]] = []

        def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
            self.seen.append((name, data))

    handler = Events()
    retriever = GraphERRetriever(
        base_retriever=_memory(RecordingEmbeddings()).as_retriever(), k=3, fetch_k=10
    )
    retriever.invoke("orders?", config={"callbacks": [handler]})
    assert [name for name, _ in handler.seen] == [RERANK_EVENT]
    data = handler.seen[0][1]
    assert data["n_candidates"] == 10 and data["n_returned"] == 3
    assert data["edges"]["structural"] == 20


def test_graph_er_embeddings_embed_a_repeated_query_once() -> None:
    import numpy as np

    from langchain_grapher import GraphEREmbeddings

    class Counting:
        name = "counting"
        calls = 0

        def embed_documents(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 4))

        def embed_query(self, text: str) -> np.ndarray:
            Counting.calls += 1
            return np.full(4, float(len(text)))

    embeddings = GraphEREmbeddings(Counting(), query_cache_size=2)
    first = embeddings.embed_query("orders?")
    assert embeddings.embed_query("orders?") == first and Counting.calls == 1
    embeddings.embed_query("a")
    embeddings.embed_query("b")  # "orders?" falls out of the two-query cache
    embeddings.embed_query("orders?")
    assert Counting.calls == 4


def test_retriever_seeds_from_rank_by_default_and_from_scores_when_asked() -> None:
    store = _memory(RecordingEmbeddings())
    by_rank = GraphERRetriever(
        base_retriever=store.as_retriever(),
        fetch_k=10,
        k=3,
        reranker=GraphERReranker(ranker="baseline"),
    ).invoke("orders?")
    assert [d.metadata["relevance_score"] for d in by_rank] == pytest.approx([1, 1 / 2, 1 / 3])
    by_score = GraphERRetriever(
        base_retriever=store.as_retriever(),
        fetch_k=10,
        k=3,
        seeds="score",
        reranker=GraphERReranker(ranker="baseline"),
    ).invoke("orders?")
    assert [d.metadata["relevance_score"] for d in by_score] == pytest.approx(
        [max(d.metadata[RETRIEVAL_SCORE_KEY], 0.0) for d in by_score]
    )
