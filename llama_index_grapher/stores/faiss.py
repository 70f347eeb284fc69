"""LlamaIndex's ``FaissVectorStore``: vectors in a FAISS index, nodes in the docstore.

The FAISS store knows rows, not node ids: the index's ``index_struct`` maps them. So the vectors
are read through the index -- ``GraphERPostprocessor(vector_store=index)`` -- and given only the
store, no vector is read (said once, with that fix). FAISS keeps no metadata: the docstore keeps
it as Python objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from grapher_core.diagnostics import Diagnostics
from grapher_core.request.stores import StoreCapabilities
from llama_index_grapher.stores.base import NodeStoreAdapterBase

__all__ = ["FaissAdapter", "FaissRowsAdapter"]


class FaissAdapter(NodeStoreAdapterBase):
    """The store given alone: it declares what it keeps, and reads no vector (node ids are
    not its ids), saying once to pass the index instead."""

    def __init__(self, store: Any, diagnostics: Diagnostics) -> None:
        super().__init__(store)
        self.diagnostics = diagnostics

    @property
    def capabilities(self) -> StoreCapabilities:
        return StoreCapabilities("FaissVectorStore", vectors=False, filters=False)

    def vectors(self, ids: Sequence[str]) -> list[np.ndarray | None]:
        self.diagnostics.bound(
            ("faiss-without-index", id(self.store)),
            "FaissVectorStore holds FAISS rows, not node ids, so its vectors cannot be read "
            "by node id from the store alone: pass the index, "
            "GraphERPostprocessor(vector_store=index); until then each new pool's texts are "
            "embedded again",
        )
        return [None] * len(ids)


class FaissRowsAdapter(NodeStoreAdapterBase):
    """Reads rows: the ids it is given are FAISS row numbers (``"0"``, ``"1"``...) as the
    index's ``index_struct`` holds them (:class:`~llama_index_grapher.stores.index.IndexAdapter`
    maps node ids to them)."""

    @property
    def capabilities(self) -> StoreCapabilities:
        return StoreCapabilities("FaissVectorStore", vectors=True, filters=False)

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        rows = {i: int(i) for i in ids if i.isdigit()}
        if not rows:
            return ()
        index = self.store.client
        try:
            vectors = index.reconstruct_batch(np.asarray(list(rows.values()), dtype=np.int64))
        except RuntimeError:  # an index that cannot give rows back (IVF without a direct map)
            return ()
        return zip(rows, vectors, strict=True)
