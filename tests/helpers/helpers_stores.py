"""The store compliance suite's data and stores: every metadata shape GraphER writes or reads,
and each supported store built the way its own framework integration documents it.

Ids are UUIDs (Qdrant accepts no other string ids) so one data set runs through every store.
Embeddings are deterministic (a hash of the text): the stores and their searches are real.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers_extras import needs

DIM = 16
N_DOCS = 6


def doc_id(i: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"grapher-store-suite/{i}"))


def shapes(i: int) -> dict[str, Any]:
    """Document ``i``'s metadata: the shapes GraphER writes or reads, values differing by ``i``."""
    return {
        "foreign_keys": [doc_id((i + 1) % N_DOCS), doc_id((i + 2) % N_DOCS)],
        "links": [f"https://docs.example.org/page-{i + 1}.html#intro", f"page-{i + 2}.html"],
        "anchors": ["intro", f"section-{i}"],
        "entities": ["Zürich", "東京", f"Łódź {i}", "naïve café"],
        "mentions": [f"Page {i + 1}"],
        "chunk_id": f"doc-{i // 2}#{i % 2}",
        "chunk_index": i % 2,
        "doc_id": f"doc-{i // 2}",
        "table": f"table_{i}",
        "concepts": [],
        "source": {"page": i, "section": {"title": f"Intro {i}", "level": 2}},
        "fk_pairs": [[f"t{i}.customer_id", "customers.id"]],
    }


LIST_FIELDS = ("foreign_keys", "links", "anchors", "entities", "mentions", "concepts")
SCALAR_FIELDS = ("chunk_id", "chunk_index", "doc_id", "table")
NESTED_FIELDS = ("source", "fk_pairs")


def text(i: int) -> str:
    return f"Document {i} about table_{i} and the orders of Zürich customers, part {i % 2}."


def vector_of(content: str) -> list[float]:
    """A deterministic unit vector for a text (sha256-seeded)."""
    seed = int.from_bytes(hashlib.sha256(content.encode("utf-8")).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(DIM)
    return [float(x) for x in v / np.linalg.norm(v)]


def unit(vector: Any) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float64)
    return v / np.linalg.norm(v)


# -- LangChain ---------------------------------------------------------------------------------
LANGCHAIN_STORES = ("in_memory", "chroma", "faiss", "qdrant", "pgvector")


def langchain_embeddings(calls: list[int] | None = None) -> Any:
    """A LangChain ``Embeddings`` over :func:`vector_of`; ``calls`` counts texts embedded."""
    from langchain_core.embeddings import Embeddings

    class HashEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            if calls is not None:
                calls.append(len(texts))
            return [vector_of(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return vector_of(text)

    return HashEmbeddings()


def langchain_store(kind: str, embeddings: Any, postgres: Callable[[], Any]) -> Any:
    """An empty store of ``kind``, as its integration's docs build one (skips naming the
    missing package)."""
    name = f"grapher_{uuid.uuid4().hex[:10]}"
    if kind == "in_memory":
        from langchain_core.vectorstores import InMemoryVectorStore

        return InMemoryVectorStore(embeddings)
    if kind == "chroma":
        needs("dev", "langchain_chroma")
        chromadb = needs("dev", "chromadb")
        from langchain_chroma import Chroma

        return Chroma(name, embeddings, client=chromadb.EphemeralClient())
    if kind == "faiss":
        faiss = needs("dev", "faiss")
        needs("dev", "langchain_community")
        from langchain_community.docstore.in_memory import InMemoryDocstore
        from langchain_community.vectorstores import FAISS

        return FAISS(embeddings, faiss.IndexFlatL2(DIM), InMemoryDocstore(), {})
    if kind == "qdrant":
        needs("dev", "qdrant_client")
        needs("dev", "langchain_qdrant")
        from langchain_qdrant import QdrantVectorStore
        from qdrant_client import QdrantClient
        from qdrant_client.models import Distance, VectorParams

        client = QdrantClient(location=":memory:")
        client.create_collection(
            name, vectors_config=VectorParams(size=DIM, distance=Distance.COSINE)
        )
        return QdrantVectorStore(client=client, collection_name=name, embedding=embeddings)
    if kind == "pgvector":
        needs("dev", "langchain_postgres")
        from langchain_postgres import PGVector

        server = postgres()
        return PGVector(
            embeddings,
            connection=server.sqlalchemy_url("psycopg"),
            collection_name=name,
            use_jsonb=True,
        )
    raise ValueError(kind)


def langchain_filter(kind: str) -> tuple[Any, set[str]]:
    """The store's usual filter selecting ``doc_id == "doc-1"`` (a GraphER field), and the
    ids it should return."""
    expected = {doc_id(2), doc_id(3)}
    if kind == "in_memory":
        return (lambda d: d.metadata.get("doc_id") == "doc-1"), expected
    if kind == "qdrant":
        from qdrant_client import models

        condition = models.FieldCondition(
            key="metadata.doc_id", match=models.MatchValue(value="doc-1")
        )
        return models.Filter(must=[condition]), expected
    if kind == "pgvector":
        return {"doc_id": {"$eq": "doc-1"}}, expected
    return {"doc_id": "doc-1"}, expected


# -- LlamaIndex --------------------------------------------------------------------------------
LLAMAINDEX_STORES = ("simple", "chroma", "faiss", "qdrant", "pgvector")


def llama_embed_model(calls: list[int] | None = None) -> Any:
    """A LlamaIndex embedding model over :func:`vector_of`; ``calls`` counts texts embedded."""
    from llama_index.core.embeddings import BaseEmbedding

    class HashEmbedding(BaseEmbedding):
        def _get_text_embedding(self, text: str) -> list[float]:
            if calls is not None:
                calls.append(1)
            return vector_of(text)

        def _get_query_embedding(self, query: str) -> list[float]:
            return vector_of(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return vector_of(query)

    return HashEmbedding(model_name="hash", embed_batch_size=64)


def llama_store(kind: str, postgres: Callable[[], Any]) -> Any:
    """An empty LlamaIndex vector store of ``kind``, as its integration's docs build one."""
    name = f"grapher_{uuid.uuid4().hex[:10]}"
    if kind == "simple":
        from llama_index.core.vector_stores import SimpleVectorStore

        return SimpleVectorStore()
    if kind == "chroma":
        chromadb = needs("dev", "chromadb")
        needs("dev", "llama_index.vector_stores.chroma")
        from llama_index.vector_stores.chroma import ChromaVectorStore

        collection = chromadb.EphemeralClient().create_collection(name)
        return ChromaVectorStore(chroma_collection=collection)
    if kind == "faiss":
        faiss = needs("dev", "faiss")
        needs("dev", "llama_index.vector_stores.faiss")
        from llama_index.vector_stores.faiss import FaissVectorStore

        return FaissVectorStore(faiss_index=faiss.IndexFlatL2(DIM))
    if kind == "qdrant":
        qdrant_client = needs("dev", "qdrant_client")
        needs("dev", "llama_index.vector_stores.qdrant")
        from llama_index.vector_stores.qdrant import QdrantVectorStore

        client = qdrant_client.QdrantClient(location=":memory:")
        return QdrantVectorStore(client=client, collection_name=name)
    if kind == "pgvector":
        needs("dev", "llama_index.vector_stores.postgres")
        from llama_index.vector_stores.postgres import PGVectorStore

        server = postgres()
        return PGVectorStore.from_params(
            host=server.host,
            port=str(server.port),
            database=server.database,
            user=server.user,
            password=server.password,
            table_name=name,
            embed_dim=DIM,
        )
    raise ValueError(kind)


def postgres_or_skip(request: pytest.FixtureRequest) -> Callable[[], Any]:
    """A fresh database on the session's Postgres, started on first use (only the pgvector
    cases pay for it)."""
    return lambda: request.getfixturevalue("postgres_server").fresh_database()
