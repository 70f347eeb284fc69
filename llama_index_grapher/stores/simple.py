"""LlamaIndex's ``SimpleVectorStore``: vectors in a dict; nodes (and metadata) in the docstore."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grapher_core.request.stores import StoreCapabilities
from llama_index_grapher.stores.base import NodeStoreAdapterBase

__all__ = ["SimpleAdapter"]


class SimpleAdapter(NodeStoreAdapterBase):
    @property
    def capabilities(self) -> StoreCapabilities:
        return StoreCapabilities("SimpleVectorStore", vectors=True, filters=True)

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        held = self.store.data.embedding_dict
        return ((i, held.get(i)) for i in ids)
