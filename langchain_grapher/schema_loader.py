"""SQLSchemaLoader: one LangChain Document per table of a database, over the core's schema reader.

>>> docs = SQLSchemaLoader("sqlite:///shop.db").load()
>>> docs[0].id, docs[0].metadata["foreign_keys"]
('shop.orders', ['shop.customers'])

The text is the serialised schema (``"Table: t\\nColumns: c (type), ..."``), the id
``"<db_id>.<table>"``, and ``metadata["foreign_keys"]`` the ids of the tables linked by a
foreign key in either direction -- rank with ``ForeignKeys()``. ``Document.id`` is the table id,
which ``add_documents`` hands to the store (``InMemoryVectorStore``, Chroma), so retrieved
documents come back under the ids the foreign keys name. The text is exactly what LlamaIndex's
``GraphERSchemaReader`` embeds, so the two frameworks retrieve and rerank the same list.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document

from grapher_core.conventions import LIST_FORMATS
from grapher_core.enrich.schema import read_schema
from grapher_core.errors import ConfigError
from grapher_core.metadata import encode_list

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["SQLSchemaLoader"]


class SQLSchemaLoader(BaseLoader):
    """Load a database's tables (any SQLAlchemy URL or Engine) as Documents.

    ``list_format`` says how list metadata is written for the target vector store: ``"list"``
    (native lists; empty lists left out, as Chroma rejects them), ``"json"`` (JSON strings) or
    ``"delimited"`` (``"a|b"``; a list whose values would not survive it is written as JSON).
    ``fk_pairs`` (a list of lists, which Chroma cannot keep) is always a JSON string except with
    ``list_format="list"`` and ``keep_nested=True``, for stores that keep any JSON.
    """

    def __init__(
        self,
        database: str | Engine,
        *,
        db_id: str | None = None,
        schema: str | None = None,
        list_format: str = "list",
        keep_nested: bool = False,
    ) -> None:
        if list_format not in LIST_FORMATS:
            raise ConfigError(f"list_format must be one of {LIST_FORMATS}, got {list_format!r}")
        self.database = database
        self.db_id = db_id
        self.schema = schema
        self.list_format = list_format
        self.keep_nested = keep_nested

    def lazy_load(self) -> Iterator[Document]:
        for table in read_schema(self.database, db_id=self.db_id, schema=self.schema):
            yield Document(
                id=table.id, page_content=table.text, metadata=self._metadata(table.metadata)
            )

    def _metadata(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in metadata.items():
            if not isinstance(value, (list, tuple)):
                out[key] = value
                continue
            nested = any(isinstance(item, (list, tuple, dict)) for item in value)
            if nested:
                if self.list_format == "list" and self.keep_nested:
                    out[key] = [list(item) if isinstance(item, tuple) else item for item in value]
                else:
                    out[key] = json.dumps(list(value), ensure_ascii=False)
                continue
            try:
                encoded = encode_list(value, self.list_format)
            except ValueError:  # a value holds a delimiter: JSON keeps it whole
                encoded = encode_list(value, "json")
            if encoded is not None:
                out[key] = encoded
        return out
