"""The tables of a real database as LlamaIndex documents, one per table, with their foreign keys.

A thin reader over :func:`grapher_core.enrich.schema.read_schema` (SQLAlchemy's inspector), so a
table
looks the same here as in the core, the benchmarks and the LangChain loader. Rerank retrieved
tables with::

    GraphERPostprocessor(proximities=[ForeignKeys("foreign_keys", target_field="table_id")])

``target_field="table_id"`` matches foreign keys against the table id kept in metadata, which
still works after a node parser has given the nodes new ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document

from grapher_core.enrich.schema import read_schema
from llama_index_grapher.extractors import ListFormat, encode_list, list_format_name

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["LIST_FIELDS", "TABLE_ID_FIELD", "GraphERSchemaReader"]

TABLE_ID_FIELD = "table_id"
# List-valued metadata of a table: edges and column lists, never part of the embedded text
# (the text already names the columns and their types).
LIST_FIELDS = ("foreign_keys", "columns", "column_types", "primary_keys", "fk_pairs")


class GraphERSchemaReader(BaseReader):
    """``load_data(database)`` -> one ``Document`` per table (id ``"<db_id>.<table>"``).

    ``list_format="json"`` (default, like the extractors) writes list fields as JSON strings,
    which every LlamaIndex vector store keeps (Chroma's flat-metadata default rejects lists);
    ``"list"`` writes lists (empty lists omitted, nested ``fk_pairs`` as JSON) for stores that
    keep them, ``"delimited"`` ``"a|b"`` strings (``"native"``: deprecated name of ``"list"``).
    The core reads every shape.
    """

    def __init__(self, list_format: ListFormat = "json") -> None:
        self.list_format: ListFormat = cast(ListFormat, list_format_name(list_format))

    def lazy_load_data(
        self,
        database: str | Engine,
        *,
        db_id: str | None = None,
        schema: str | None = None,
        **_: Any,
    ) -> Iterable[Document]:
        """Read the schema of ``database`` (a SQLAlchemy URL or Engine)."""
        for obj in read_schema(database, db_id=db_id, schema=schema):
            metadata: dict[str, Any] = {TABLE_ID_FIELD: obj.id}
            for key, value in obj.metadata.items():
                if key in LIST_FIELDS:
                    encoded = encode_list(value, self.list_format)
                    if encoded is not None:
                        metadata[key] = encoded
                else:
                    metadata[key] = value
            hidden = [TABLE_ID_FIELD, *LIST_FIELDS]
            yield Document(
                id_=obj.id,
                text=obj.text,
                metadata=metadata,
                excluded_embed_metadata_keys=list(hidden),
                excluded_llm_metadata_keys=list(hidden),
            )
