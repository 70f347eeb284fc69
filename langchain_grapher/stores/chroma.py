"""``langchain_chroma.Chroma``: vectors by ``get(ids=..., include=["embeddings"])``.

Chroma (>= 1.5) keeps non-empty lists of one scalar type; it refuses empty lists, dicts and
lists of lists at ingestion. GraphER's writers with ``list_format="list"`` leave empty lists
out and write nested ones as JSON, which the readers accept.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grapher_core.request.stores import StoreCapabilities
from langchain_grapher.stores.base import StoreAdapterBase

__all__ = ["ChromaAdapter"]


class ChromaAdapter(StoreAdapterBase):
    capabilities = StoreCapabilities("Chroma", vectors=True, empty_lists=False, nested=False)

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        result = self.store.get(ids=ids, include=["embeddings"])
        embeddings = result.get("embeddings")
        if embeddings is None:
            return ()
        return zip(result.get("ids") or [], embeddings, strict=False)
