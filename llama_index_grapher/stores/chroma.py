"""LlamaIndex's ``ChromaVectorStore``: vectors by the collection's batched ``get``.

With ``flat_metadata=True`` (its default) LlamaIndex refuses lists at ingestion; with
``flat_metadata=False`` Chroma keeps non-empty same-typed lists, and refuses empty lists and
dicts. GraphER's extractors write ``list_format="json"`` by default, which every setting keeps.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grapher_core.request.stores import StoreCapabilities
from llama_index_grapher.stores.base import NodeStoreAdapterBase, flat_capabilities

__all__ = ["ChromaAdapter"]


class ChromaAdapter(NodeStoreAdapterBase):
    @property
    def capabilities(self) -> StoreCapabilities:
        return flat_capabilities("ChromaVectorStore", self.store, empty_lists=False, nested=False)

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        result = self.store._collection.get(ids=ids, include=["embeddings"])
        embeddings = result.get("embeddings")
        if embeddings is None:
            return ()
        return zip(result.get("ids") or [], embeddings, strict=False)
