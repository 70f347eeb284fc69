"""LlamaIndex's ``QdrantVectorStore`` (a server, or ``qdrant-client``'s local mode).

Qdrant keeps any JSON payload; its point ids are UUIDs (LlamaIndex's node ids already are).
Vectors are one ``retrieve(ids, with_vectors=True)``; a store with named vectors gives its
dense one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grapher_core.request.stores import StoreCapabilities, qdrant_dense, qdrant_point_id
from llama_index_grapher.stores.base import NodeStoreAdapterBase

__all__ = ["QdrantAdapter"]


class QdrantAdapter(NodeStoreAdapterBase):
    @property
    def capabilities(self) -> StoreCapabilities:
        return StoreCapabilities("QdrantVectorStore", vectors=True, uuid_ids=True)

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        ids = [i for i in ids if qdrant_point_id(i)]  # no other id can be held there
        if not ids:
            return ()
        store = self.store
        points = store.client.retrieve(
            store.collection_name, ids=ids, with_payload=False, with_vectors=True
        )
        name = getattr(store, "dense_vector_name", None)
        return ((str(p.id), qdrant_dense(p.vector, name)) for p in points)
