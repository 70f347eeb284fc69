"""``langchain_postgres.PGVector``: Postgres with pgvector; metadata in a JSONB column.

JSONB keeps lists, empty lists and dicts. Vectors are one ``SELECT id, vector_send(embedding)
... WHERE id IN (...)`` in the store's collection, through the store's own session: the binary
form, not the text one the driver would parse float by float.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grapher_core.request.stores import StoreCapabilities, pgvector_from_send
from langchain_grapher.stores.base import StoreAdapterBase

__all__ = ["PGVectorAdapter"]


class PGVectorAdapter(StoreAdapterBase):
    capabilities = StoreCapabilities("PGVector (Postgres + pgvector)", vectors=True)

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        from sqlalchemy import func, select  # langchain-postgres brings SQLAlchemy

        store = self.store
        table, collections = store.EmbeddingStore, store.CollectionStore
        collection = (
            select(collections.uuid)
            .where(collections.name == store.collection_name)
            .scalar_subquery()
        )
        statement = select(table.id, func.vector_send(table.embedding)).where(
            table.id.in_(ids), table.collection_id == collection
        )
        with store._make_sync_session() as session:  # one round trip: the collection inside
            return [(i, pgvector_from_send(sent)) for i, sent in session.execute(statement)]
