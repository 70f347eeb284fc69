"""``langchain_qdrant.QdrantVectorStore`` (a server, or ``qdrant-client``'s local mode).

Qdrant keeps any JSON payload. Its point ids are UUIDs (or integers): GraphER's ids there are
UUIDs too (``StoreCapabilities.uuid_ids``), and ids of another form are never asked for (Qdrant
answers them with an error). Its search returns the id only in ``metadata["_id"]``;
:meth:`QdrantAdapter.documents` puts it back on ``Document.id``, where the reranker reads ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.documents import Document

from grapher_core.request.stores import StoreCapabilities, qdrant_dense, qdrant_point_id
from langchain_grapher.stores.base import StoreAdapterBase

__all__ = ["QDRANT_ID_KEY", "QdrantAdapter"]

QDRANT_ID_KEY = "_id"


class QdrantAdapter(StoreAdapterBase):
    capabilities = StoreCapabilities("Qdrant", vectors=True, uuid_ids=True)

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        ids = [i for i in ids if qdrant_point_id(i)]  # no other id can be held there
        if not ids:
            return ()
        points = self.store.client.retrieve(
            self.store.collection_name, ids=ids, with_payload=False, with_vectors=True
        )
        name = getattr(self.store, "vector_name", None)
        return ((str(p.id), qdrant_dense(p.vector, name)) for p in points)

    def documents(self, documents: Sequence[Document]) -> list[Document]:
        out = []
        for document in documents:
            point = document.metadata.get(QDRANT_ID_KEY)
            if document.id is None and point is not None:  # a copy (validated fields reused)
                document = Document.model_construct(
                    id=str(point),
                    page_content=document.page_content,
                    metadata=document.metadata,
                    type=document.type,
                )
            out.append(document)
        return out
