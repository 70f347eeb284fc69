"""``langchain_community`` ``FAISS``: vectors reconstructed from the FAISS index in one call.

The docstore keeps metadata as Python objects. A document's row in the index is found through
``index_to_docstore_id`` (row -> id), inverted once and checked on every read, so a store that
grew or was rebuilt since is re-read, never answered from a stale map.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from grapher_core.request.stores import StoreCapabilities
from langchain_grapher.stores.base import StoreAdapterBase

__all__ = ["FAISSAdapter", "faiss_rows"]


def faiss_rows(index: Any, rows: list[int]) -> np.ndarray | None:
    """Rows of a FAISS index in one call, or ``None`` where the index cannot give them back
    (an IVF index without a direct map, a compressed one)."""
    try:
        return np.asarray(index.reconstruct_batch(np.asarray(rows, dtype=np.int64)))
    except RuntimeError:
        return None


class FAISSAdapter(StoreAdapterBase):
    capabilities = StoreCapabilities("FAISS", vectors=True)

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self._rows: dict[str, int] = {}

    def _row_of(self, ids: list[str]) -> dict[str, int]:
        by_row = self.store.index_to_docstore_id
        if any(by_row.get(self._rows.get(i, -1)) != i for i in ids):
            self._rows = {str(doc_id): row for row, doc_id in by_row.items()}
        return {i: self._rows[i] for i in ids if i in self._rows}

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        rows = self._row_of(ids)
        if not rows:
            return ()
        vectors = faiss_rows(self.store.index, list(rows.values()))
        return () if vectors is None else zip(rows, vectors, strict=True)
