"""LangChain vector stores: one adapter per store behind one protocol, and search scores.

Shipped adapters: ``InMemoryVectorStore`` (:mod:`.in_memory`), Chroma (:mod:`.chroma`),
``PGVector`` (:mod:`.pgvector`), FAISS (:mod:`.faiss`), Qdrant (:mod:`.qdrant`); any other
store through :func:`register_store_adapter`.
"""

from langchain_grapher.stores.base import StoreAdapter, StoreAdapterBase
from langchain_grapher.stores.registry import (
    adapter_for,
    documents_with_ids,
    register_store_adapter,
    store_capabilities,
    store_ready,
    stored_vectors,
    vectors_by_id,
)
from langchain_grapher.stores.scores import ascored_search, relevance_scores, scored_search

__all__ = [
    "StoreAdapter",
    "StoreAdapterBase",
    "adapter_for",
    "ascored_search",
    "documents_with_ids",
    "register_store_adapter",
    "relevance_scores",
    "scored_search",
    "store_capabilities",
    "store_ready",
    "stored_vectors",
    "vectors_by_id",
]
