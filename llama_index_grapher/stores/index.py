"""A ``VectorStoreIndex`` given as the store: its vector store's adapter, with node ids mapped
to the ids the vector store holds (``index_struct.nodes_dict``: FAISS rows, for instance)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from grapher_core.request.stores import StoreCapabilities
from llama_index_grapher.stores.base import NodeStoreAdapter

__all__ = ["IndexAdapter"]


class IndexAdapter:
    def __init__(self, index: Any, inner: NodeStoreAdapter) -> None:
        self.index = index
        self.inner = inner
        self._held: dict[str, str] = {}

    @property
    def capabilities(self) -> StoreCapabilities:
        return self.inner.capabilities

    def _vector_ids(self, ids: Sequence[str]) -> list[str]:
        """Checked on every read, so an index that grew or was rebuilt is re-read."""
        by_vector = getattr(self.index.index_struct, "nodes_dict", {})
        if any(by_vector.get(self._held.get(i, "")) != i for i in ids):
            self._held = {str(node): str(vector) for vector, node in by_vector.items()}
        return [self._held.get(i, i) for i in ids]

    def vectors(self, ids: Sequence[str]) -> list[np.ndarray | None]:
        return self.inner.vectors(self._vector_ids(ids))

    def relevance(self, scores: Sequence[float | None]) -> list[float | None]:
        """The vector store's scores on the cosine scale (its adapter's ``relevance``)."""
        relevance = getattr(self.inner, "relevance", None)
        return list(scores) if relevance is None else relevance(scores)
