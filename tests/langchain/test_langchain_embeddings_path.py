"""One prepare path: the compressor, its async twin and GraphERRetriever embed the same way, and
only when the core says vectors are needed (the retriever once ignored ``embeddings``)."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from grapher_core import ForeignKeys, SemanticKNN
from grapher_core.conventions import EXPLANATION_KEY, RELEVANCE_SCORE_KEY
from grapher_core.edges.graph import CandidateGraph
from grapher_core.ranking.base import RankContext
from langchain_grapher import GraphERReranker, GraphERRetriever

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray


class RecordingEmbeddings(Embeddings):
    """Deterministic vectors; records every call as (kind, number of texts)."""

    def __init__(self, size: int = 8) -> None:
        self.inner = DeterministicFakeEmbedding(size=size)
        self.calls: list[tuple[str, int]] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(("docs", len(texts)))
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.calls.append(("query", 1))
        return self.inner.embed_query(text)


class GraphRecorder:
    """A core ranker that keeps the graphs and contexts it was given (no vectors needed)."""

    name = "graph-recorder"

    def __init__(self) -> None:
        self.graphs: list[CandidateGraph] = []
        self.contexts: list[RankContext] = []

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        self.graphs.append(graph)
        self.contexts.append(context)
        return np.asarray(seeds, dtype=np.float64)


TEXTS = ["orders table", "customers table", "products table", "stock table", "suppliers table"]


def _store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    store.add_documents(
        [
            Document(id=f"t{i}", page_content=t, metadata={"foreign_keys": [f"t{(i + 1) % 5}"]})
            for i, t in enumerate(TEXTS)
        ]
    )
    return store


async def test_retriever_gives_semantic_knn_its_vectors() -> None:
    embeddings, ranker = RecordingEmbeddings(), GraphRecorder()
    reranker = GraphERReranker(
        ranker=ranker, embeddings=embeddings, proximities=[SemanticKNN(k=2, threshold=-1.0)]
    )
    assert reranker.needs_embeddings
    retriever = GraphERRetriever(
        base_retriever=_store().as_retriever(), reranker=reranker, k=3, fetch_k=5
    )
    out = retriever.invoke("which customers?")
    assert embeddings.calls == [("query", 1), ("docs", 5)]
    graph = ranker.graphs[-1]
    assert graph.by_kind["semantic"].nnz >= 5  # semantic edges were built from the vectors
    assert ranker.contexts[-1].query_embedding is not None
    assert len(out) == 3
    await retriever.ainvoke("which customers?")
    assert embeddings.calls[2:] == [("query", 1)]  # the documents' vectors come from the cache
    assert ranker.graphs[-1].by_kind["semantic"].nnz == graph.by_kind["semantic"].nnz
    # the compressor takes the same path (and the same cache)
    reranker.compress_documents(
        [d for d, _ in _store().similarity_search_with_score("x", k=5)], "which customers?"
    )
    assert embeddings.calls[3:] == [("query", 1)]


def test_nothing_is_embedded_when_nothing_reads_vectors() -> None:
    embeddings = RecordingEmbeddings()
    reranker = GraphERReranker(proximities=[ForeignKeys()], embeddings=embeddings, explain=True)
    assert not reranker.needs_embeddings
    retriever = GraphERRetriever(
        base_retriever=_store().as_retriever(), reranker=reranker, k=5, fetch_k=5
    )
    out = retriever.invoke("which customers?")
    assert embeddings.calls == []
    assert all(RELEVANCE_SCORE_KEY in d.metadata for d in out)
    lifted = [d for d in out if d.metadata.get(EXPLANATION_KEY)]
    assert lifted and set(lifted[0].metadata[EXPLANATION_KEY][0]) == {
        "neighbour_id",
        "kinds",
        "edge_weight",
        "contribution",
    }


def test_retriever_gives_the_gat_the_users_embeddings() -> None:
    pytest.importorskip("torch")
    embeddings = RecordingEmbeddings(size=384)
    reranker = GraphERReranker(ranker="gat", proximities=[ForeignKeys()], embeddings=embeddings)
    assert reranker.needs_embeddings
    retriever = GraphERRetriever(
        base_retriever=_store().as_retriever(), reranker=reranker, k=5, fetch_k=5
    )
    out = retriever.invoke("which customers?")
    assert embeddings.calls == [("query", 1), ("docs", 5)]
    # the GAT scored with the given vectors: it never built its packaged MiniLM fallback
    assert reranker.core.ranker._embedder is None
    assert len(out) == 5
