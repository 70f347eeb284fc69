"""LlamaIndex's ``ChromaVectorStore``: vectors by the collection's batched ``get``.

With ``flat_metadata=True`` (its default) LlamaIndex refuses lists at ingestion; with
``flat_metadata=False`` Chroma keeps non-empty same-typed lists, and refuses empty lists and
dicts. GraphER's extractors write ``list_format="json"`` by default, which every setting keeps.

Scores: the store returns ``exp(-distance)``, where the other LlamaIndex stores return the
cosine similarity; :meth:`ChromaAdapter.relevance` maps it back (cosine and inner-product
spaces: ``1 - d``; L2: ``1 - d / 2``, the cosine of unit vectors), so score seeds are the same
whichever store ranked the nodes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
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

    def _space(self) -> str:
        collection = self.store._collection
        configuration = getattr(collection, "configuration", None) or {}
        hnsw = configuration.get("hnsw") if isinstance(configuration, dict) else None
        if isinstance(hnsw, dict) and hnsw.get("space"):
            return str(hnsw["space"])
        return str((getattr(collection, "metadata", None) or {}).get("hnsw:space", "l2"))

    def relevance(self, scores: Sequence[float | None]) -> list[float | None]:
        """The store's ``exp(-distance)`` scores on the cosine scale."""
        half = self._space() == "l2"
        out: list[float | None] = []
        for score in scores:
            if score is None or score <= 0:
                out.append(score)
                continue
            distance = -math.log(score)
            out.append(1.0 - (distance / 2 if half else distance))
        return out
