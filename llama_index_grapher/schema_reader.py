"""The tables of a real database as LlamaIndex documents or nodes, one per table, with their
foreign keys.

A thin reader over :func:`grapher_core.enrich.schema.read_schema` (SQLAlchemy's inspector), so a
table looks the same here as in the core, the benchmarks and the LangChain loader: the embedded
text is exactly ``SQLSchemaLoader``'s ``page_content`` (no metadata header), so both frameworks
retrieve, and rerank, the same tables in the same order. Index the tables with their ids kept::

    reader = GraphERSchemaReader()
    index = VectorStoreIndex(reader.load_nodes("sqlite:///shop.db"), embed_model=embed_model)

``VectorStoreIndex.from_documents(reader.load_data(...))`` runs LlamaIndex's node parser, which
gives every table a fresh random node id; the table id then lives on only in
``metadata["table_id"]``, which ``ForeignKeys("foreign_keys", target_field="table_id")`` (and the
zero-configuration postprocessor) match against.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document, TextNode

from grapher_core.enrich.schema import read_schema
from llama_index_grapher.extractors import ListFormat, encode_list, list_format_name

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from grapher_core.candidates import CorpusObject

__all__ = ["LIST_FIELDS", "TABLE_ID_FIELD", "GraphERSchemaReader"]

TABLE_ID_FIELD = "table_id"
# List-valued metadata of a table: edges and column lists (the text already names the columns
# and their types).
LIST_FIELDS = ("foreign_keys", "columns", "column_types", "primary_keys", "fk_pairs")


class GraphERSchemaReader(BaseReader):
    """``load_data(database)`` -> one ``Document`` per table (id ``"<db_id>.<table>"``);
    ``load_nodes(database)`` -> the same tables as ``TextNode``s with that id, for
    ``VectorStoreIndex(nodes)``, which keeps node id = table id (a table is one chunk).

    The embedded text is the schema text alone (every metadata key excluded), as LangChain's
    ``SQLSchemaLoader`` embeds it. The LLM also sees ``table_id``: pooled databases can share a
    table name, and the qualified id says which database a table is in; the rest of the
    metadata is graph data or repeats the text.

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
        for table in read_schema(database, db_id=db_id, schema=schema):
            yield Document(id_=table.id, text=table.text, **self._fields(table))

    def load_nodes(
        self,
        database: str | Engine,
        *,
        db_id: str | None = None,
        schema: str | None = None,
    ) -> list[TextNode]:
        """The tables as nodes whose ids are the table ids, ready for ``VectorStoreIndex``.

        Unlike ``from_documents``, no node parser runs, so the retriever returns the table ids
        that the foreign keys name and the LangChain loader's ``Document.id`` carries.
        """
        return [
            TextNode(id_=table.id, text=table.text, **self._fields(table))
            for table in read_schema(database, db_id=db_id, schema=schema)
        ]

    def _fields(self, table: CorpusObject) -> dict[str, Any]:
        """Metadata and its exclusions, shared by documents and nodes."""
        metadata: dict[str, Any] = {TABLE_ID_FIELD: table.id}
        for key, value in table.metadata.items():
            if key in LIST_FIELDS:
                encoded = encode_list(value, self.list_format)
                if encoded is not None:
                    metadata[key] = encoded
            else:
                metadata[key] = value
        return {
            "metadata": metadata,
            "excluded_embed_metadata_keys": list(metadata),
            "excluded_llm_metadata_keys": [k for k in metadata if k != TABLE_ID_FIELD],
        }
