"""LangChain's ``InMemoryVectorStore``: a dict of ``{id: {"vector", "text", "metadata"}}``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grapher_core.request.stores import StoreCapabilities
from langchain_grapher.stores.base import StoreAdapterBase

__all__ = ["InMemoryAdapter"]


class InMemoryAdapter(StoreAdapterBase):
    """Vectors from the store's dict; metadata is kept as the Python objects given."""

    capabilities = StoreCapabilities("InMemoryVectorStore", vectors=True)

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        rows = self.store.store
        return ((i, row.get("vector")) for i in ids if isinstance(row := rows.get(i), dict))
