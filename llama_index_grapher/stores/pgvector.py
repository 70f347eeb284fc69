"""LlamaIndex's ``PGVectorStore`` (llama-index-vector-stores-postgres): metadata in JSONB.

Vectors are one ``SELECT node_id, vector_send(embedding) ... WHERE node_id IN (...)`` through the
store's own session: the binary form (``halfvec_send`` for ``use_halfvec=True``), not the text
one the driver would parse float by float. ``flat_metadata=False`` (its default) keeps lists,
empty lists and dicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grapher_core.request.stores import StoreCapabilities, pgvector_from_send
from llama_index_grapher.stores.base import NodeStoreAdapterBase, flat_capabilities

__all__ = ["PGVectorAdapter"]


class PGVectorAdapter(NodeStoreAdapterBase):
    @property
    def capabilities(self) -> StoreCapabilities:
        return flat_capabilities("PGVectorStore (Postgres + pgvector)", self.store)

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        from sqlalchemy import func, select  # the store's package brings SQLAlchemy

        store = self.store
        store._initialize()
        table = store._table_class
        half = bool(getattr(store, "use_halfvec", False))
        sent = (func.halfvec_send if half else func.vector_send)(table.embedding)
        statement = select(table.node_id, sent).where(table.node_id.in_(ids))
        with store._session() as session, session.begin():
            return [(i, pgvector_from_send(v, half)) for i, v in session.execute(statement)]
