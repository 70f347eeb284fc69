"""LlamaIndex vector stores: one adapter per store behind one protocol.

Shipped adapters: ``SimpleVectorStore`` (:mod:`.simple`), Chroma (:mod:`.chroma`),
``PGVectorStore`` (:mod:`.pgvector`), Qdrant (:mod:`.qdrant`), FAISS through its index
(:mod:`.faiss`, :mod:`.index`); any other store through :func:`register_store_adapter`.
"""

from llama_index_grapher.stores.base import NodeStoreAdapter, NodeStoreAdapterBase
from llama_index_grapher.stores.registry import (
    adapter_for,
    node_vectors,
    register_store_adapter,
    relevance_nodes,
    store_capabilities,
    store_ready,
)

__all__ = [
    "NodeStoreAdapter",
    "NodeStoreAdapterBase",
    "adapter_for",
    "node_vectors",
    "register_store_adapter",
    "relevance_nodes",
    "store_capabilities",
    "store_ready",
]
