"""LlamaIndex's ``PGVectorStore`` (llama-index-vector-stores-postgres): metadata in JSONB.

Vectors are one ``SELECT node_id, embedding ... WHERE node_id IN (...)`` through the store's own
session. ``flat_metadata=False`` (its default) keeps lists, empty lists and dicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grapher_core.request.stores import StoreCapabilities
from llama_index_grapher.stores.base import NodeStoreAdapterBase, flat_capabilities

__all__ = ["PGVectorAdapter"]


class PGVectorAdapter(NodeStoreAdapterBase):
    @property
    def capabilities(self) -> StoreCapabilities:
        return flat_capabilities("PGVectorStore (Postgres + pgvector)", self.store)

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        from sqlalchemy import select  # the store's package brings SQLAlchemy

        store = self.store
        store._initialize()
        table = store._table_class
        statement = select(table.node_id, table.embedding).where(table.node_id.in_(ids))
        with store._session() as session, session.begin():
            return [(row.node_id, row.embedding) for row in session.execute(statement)]
