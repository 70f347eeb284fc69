"""The compressor reuses the vectors the store already holds (``vector_store=``): a ranker
that reads vectors costs no embedding of the pool per query. Without them, the call says once
what it pays and how to avoid it."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest

pytest.importorskip("langchain_core", reason="needs the langchain extra (langchain-core)")

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from grapher_core import ForeignKeys, SemanticKNN
from grapher_core.diagnostics import GraphERWarning
from langchain_grapher import GraphERReranker


class Counting(Embeddings):
    def __init__(self) -> None:
        self.documents = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).normal(size=8)
        return (v / np.linalg.norm(v)).tolist()


def corpus() -> list[Document]:
    return [
        Document(id=f"t{i}", page_content=f"table {i} words {i % 3}",
                 metadata={"foreign_keys": [f"t{(i + 1) % 14}"]})
        for i in range(14)
    ]  # fmt: skip


def reranker(model: Counting, **fields: object) -> GraphERReranker:
    return GraphERReranker(
        proximities=[ForeignKeys(), SemanticKNN(k=2, threshold=-1.0)],
        embeddings=model,
        top_n=5,
        **fields,
    )


def test_the_stores_vectors_are_read_not_embedded_again() -> None:
    model = Counting()
    store = InMemoryVectorStore(model)
    store.add_documents(corpus(), ids=[d.id for d in corpus()])
    embedded_by_the_store = model.documents
    retrieved = [d for d, _s in store.similarity_search_with_score("table words", k=14)]
    with_store = reranker(model, vector_store=store).compress_documents(retrieved, "q")
    assert model.documents == embedded_by_the_store  # not one text embedded again
    fresh = Counting()
    embedded = reranker(fresh).compress_documents(retrieved, "q")
    assert fresh.documents == 14
    assert [d.id for d in with_store] == [d.id for d in embedded]
    assert [d.metadata["relevance_score"] for d in with_store] == pytest.approx(
        [d.metadata["relevance_score"] for d in embedded]
    )


def test_embedding_the_pool_per_query_is_said_once_with_the_fix() -> None:
    compressor = reranker(Counting())
    with pytest.warns(GraphERWarning, match=r"embeds 14 candidate texts.*vector_store=store"):
        compressor.compress_documents(corpus(), "q")
    other = [Document(id=f"o{i}", page_content=f"other {i}") for i in range(14)]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        compressor.compress_documents(other, "q")
    assert not [w for w in said if "candidate texts" in str(w.message)]  # once
