"""Each supported vector store in the pipeline its README section shows, for both wrappers.

LangChain: the store built by its integration's usual constructor, filled with
``store.add_documents(store_ready(store, documents))``, searched by
``GraphERRetriever(base_retriever=store.as_retriever(), reranker=GraphERReranker(...,
embeddings=embeddings), fetch_k=...)``. LlamaIndex: ``VectorStoreIndex(nodes,
storage_context=StorageContext.from_defaults(vector_store=store), embed_model=...)``, its
retriever (``similarity_top_k``), then ``GraphERPostprocessor(vector_store=...)``: the index's
vector store, or the index itself for FAISS (whose rows are not node ids).

:class:`CountingEmbedder` answers the corpus's texts from vectors computed once (no second
embedding pass at ingestion) and counts every text it embeds after :meth:`reset`: the
candidates' vectors must come from the store, so the count stays 0 while queries run.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

import numpy as np

__all__ = [
    "LANGCHAIN_STORES",
    "LLAMAINDEX_STORES",
    "CountingEmbedder",
    "langchain_pipeline",
    "llamaindex_pipeline",
    "uuid_ids",
]

LANGCHAIN_STORES = ("in_memory", "chroma", "faiss", "qdrant", "pgvector")
LLAMAINDEX_STORES = ("simple", "chroma", "faiss", "qdrant", "pgvector")
ID_NAMESPACE = uuid.UUID("6f1c2e0a-7d4b-5e9a-9a51-2f0c6b1d3e47")


def uuid_ids(ids: Sequence[str]) -> dict[str, str]:
    """Each id as a UUID (Qdrant accepts no other string ids): one data set for every store."""
    return {i: str(uuid.uuid5(ID_NAMESPACE, i)) for i in ids}


class CountingEmbedder:
    """A core embedder: known texts from ``known`` (queries from ``known_queries``), the rest
    from ``inner``; counts the texts embedded (``documents``) and the queries (``queries``)
    since :meth:`reset`."""

    def __init__(
        self,
        inner: Any,
        known: Mapping[str, Any],
        known_queries: Mapping[str, Any] | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.known = {text: np.asarray(v, dtype=np.float32) for text, v in known.items()}
        self.known_queries = {
            text: np.asarray(v, dtype=np.float32) for text, v in (known_queries or {}).items()
        }
        self.documents = 0
        self.queries = 0

    def reset(self) -> None:
        self.documents = self.queries = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.documents += len(texts)
        missing = [t for t in texts if t not in self.known]
        if missing:
            self.known.update(
                zip(missing, np.asarray(self.inner.embed_documents(missing)), strict=True)
            )
        return np.stack([self.known[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries += 1
        known = self.known_queries.get(text)
        if known is not None:
            return known
        return np.asarray(self.inner.embed_query(text), dtype=np.float32)


def _langchain_store(kind: str, embeddings: Any, postgres: Callable[[], Any], dim: int) -> Any:
    name = f"grapher_{uuid.uuid4().hex[:10]}"
    if kind == "in_memory":
        from langchain_core.vectorstores import InMemoryVectorStore

        return InMemoryVectorStore(embeddings)
    if kind == "chroma":
        import chromadb
        from langchain_chroma import Chroma

        return Chroma(
            name,
            embeddings,
            client=chromadb.EphemeralClient(),
            collection_metadata={"hnsw:space": "cosine"},
        )
    if kind == "faiss":
        import faiss
        from langchain_community.docstore.in_memory import InMemoryDocstore
        from langchain_community.vectorstores import FAISS

        return FAISS(embeddings, faiss.IndexFlatL2(dim), InMemoryDocstore(), {})
    if kind == "qdrant":
        from langchain_qdrant import QdrantVectorStore
        from qdrant_client import QdrantClient
        from qdrant_client.models import Distance, VectorParams

        client = QdrantClient(location=":memory:")
        client.create_collection(
            name, vectors_config=VectorParams(size=dim, distance=Distance.COSINE)
        )
        return QdrantVectorStore(client=client, collection_name=name, embedding=embeddings)
    if kind == "pgvector":
        from langchain_postgres import PGVector

        server = postgres()
        return PGVector(
            embeddings,
            connection=server.sqlalchemy_url("psycopg"),
            collection_name=name,
            use_jsonb=True,
        )
    raise ValueError(f"unknown store {kind!r}; one of {LANGCHAIN_STORES}")


def langchain_pipeline(
    kind: str,
    documents: Sequence[Any],
    embeddings: Any,
    postgres: Callable[[], Any],
    *,
    fetch_k: int,
    k: int = 5,
    **reranker: Any,
) -> tuple[Callable[[str], Any], Any]:
    """(``retriever.invoke``, the store) for ``kind``, filled with ``documents``."""
    from langchain_grapher import GraphERReranker, GraphERRetriever
    from langchain_grapher.stores import store_ready

    dim = len(embeddings.embed_query("dimension"))
    store = _langchain_store(kind, embeddings, postgres, dim)
    store.add_documents(store_ready(store, documents))
    retriever = GraphERRetriever(
        base_retriever=store.as_retriever(),
        reranker=GraphERReranker(embeddings=embeddings, **reranker),
        k=k,
        fetch_k=fetch_k,
    )
    return retriever.invoke, store


def _llama_store(kind: str, postgres: Callable[[], Any], dim: int) -> Any:
    name = f"grapher_{uuid.uuid4().hex[:10]}"
    if kind == "simple":
        from llama_index.core.vector_stores import SimpleVectorStore

        return SimpleVectorStore()
    if kind == "chroma":
        import chromadb
        from llama_index.vector_stores.chroma import ChromaVectorStore

        collection = chromadb.EphemeralClient().create_collection(
            name, metadata={"hnsw:space": "cosine"}
        )
        return ChromaVectorStore(chroma_collection=collection)
    if kind == "faiss":
        import faiss
        from llama_index.vector_stores.faiss import FaissVectorStore

        return FaissVectorStore(faiss_index=faiss.IndexFlatIP(dim))
    if kind == "qdrant":
        from llama_index.vector_stores.qdrant import QdrantVectorStore
        from qdrant_client import QdrantClient

        return QdrantVectorStore(client=QdrantClient(location=":memory:"), collection_name=name)
    if kind == "pgvector":
        from llama_index.vector_stores.postgres import PGVectorStore

        server = postgres()
        return PGVectorStore.from_params(
            host=server.host,
            port=str(server.port),
            database=server.database,
            user=server.user,
            password=server.password,
            table_name=name,
            embed_dim=dim,
        )
    raise ValueError(f"unknown store {kind!r}; one of {LLAMAINDEX_STORES}")


def llamaindex_pipeline(
    kind: str,
    nodes: Sequence[Any],
    embed_model: Any,
    postgres: Callable[[], Any],
    *,
    fetch_k: int,
    top_n: int = 5,
    **postprocessor: Any,
) -> tuple[Callable[[str], Any], Any]:
    """(query -> reranked nodes, the index) for ``kind``, indexed from ``nodes``."""
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.schema import QueryBundle

    from llama_index_grapher import GraphERPostprocessor
    from llama_index_grapher.stores import store_ready

    dim = len(embed_model.get_query_embedding("dimension"))
    store = _llama_store(kind, postgres, dim)
    index = VectorStoreIndex(
        store_ready(store, nodes),
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=embed_model,
    )
    retriever = index.as_retriever(similarity_top_k=fetch_k)
    post = GraphERPostprocessor(
        top_n=top_n,
        embed_model=embed_model,
        vector_store=index if kind == "faiss" else index.vector_store,
        **postprocessor,
    )

    def query(text: str) -> Any:
        bundle = QueryBundle(text, embedding=embed_model.get_query_embedding(text))
        return post.postprocess_nodes(retriever.retrieve(bundle), query_bundle=bundle)

    return query, index


def lazy_postgres(stack: ExitStack, url: str | None) -> Callable[[], Any]:
    """A function giving a fresh database on ``url``'s server, or on a throwaway cluster
    started on first use (stopped when ``stack`` closes)."""
    from grapher_bench.latency.pg_server import (
        embedded_bin_folder,
        given_postgres,
        throwaway_postgres,
    )

    held: list[Any] = []

    def server() -> Any:
        if not held:
            held.append(
                given_postgres(url)
                if url
                else stack.enter_context(throwaway_postgres(embedded_bin_folder()))
            )
        return held[0].fresh_database()

    return server


def iter_kinds(frameworks: Sequence[str]) -> Iterator[tuple[str, str]]:
    for framework in frameworks:
        for kind in LANGCHAIN_STORES if framework == "LangChain" else LLAMAINDEX_STORES:
            yield framework, kind
