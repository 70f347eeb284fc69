"""Enrichment transformers and the SQL schema loader, on real parts (spaCy, splitters, SQLite)."""

from __future__ import annotations

import copy
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from langchain_core.documents import Document

from grapher_core import AdjacentChunks, Candidate, ForeignKeys, SharedEntities
from grapher_core.metadata import read_list
from langchain_grapher import (
    ChunkLinkTransformer,
    EntityTransformer,
    LinkTransformer,
    SQLSchemaLoader,
)

TEXT = " ".join(f"Sentence number {i} of a long document about rivers." for i in range(30))


def candidates(documents: list[Document]) -> list[Candidate]:
    return [Candidate(str(d.id), d.page_content, metadata=d.metadata) for d in documents]


def test_chunk_links_with_a_real_splitter() -> None:
    splitters = pytest.importorskip("langchain_text_splitters")
    parents = [
        Document(id="river", page_content=TEXT, metadata={"source": "river.txt"}),
        Document(page_content=TEXT[:400], metadata={"lang": "en"}),
    ]
    before = copy.deepcopy(parents)
    splitter = splitters.RecursiveCharacterTextSplitter(chunk_size=200, chunk_overlap=0)
    chunks = ChunkLinkTransformer(text_splitter=splitter).transform_documents(parents)
    assert parents == before
    first = [c for c in chunks if c.metadata["doc_id"] == "river.txt"]
    assert [c.metadata["chunk_index"] for c in first] == list(range(len(first)))
    assert first[0].id == "river.txt#0" and first[0].metadata["n_chunks_in_doc"] == len(first)
    second = [c for c in chunks if c.metadata["doc_id"] != "river.txt"]
    assert second and second[0].metadata["doc_id"].startswith("doc-")  # content hash
    matrix = AdjacentChunks().adjacency(candidates(list(chunks))).toarray()
    assert matrix[0, 1] == 1 and matrix[0, 2] == 0 and matrix[len(first) - 1, len(first)] == 0


def test_chunk_links_on_already_split_chunks_use_start_index() -> None:
    splitters = pytest.importorskip("langchain_text_splitters")
    splitter = splitters.RecursiveCharacterTextSplitter(
        chunk_size=200, chunk_overlap=0, add_start_index=True
    )
    chunks = splitter.split_documents([Document(page_content=TEXT, metadata={"source": "a"})])
    shuffled = list(reversed(chunks))
    out = ChunkLinkTransformer().transform_documents(shuffled)
    assert [d.metadata["chunk_index"] for d in out] == list(reversed(range(len(chunks))))
    with pytest.raises(ValueError, match="position 0"):
        ChunkLinkTransformer().transform_documents([Document(page_content="orphan")])


def test_links_resolved_to_ids_within_the_batch() -> None:
    documents = [
        Document(
            id="rome",
            page_content="See [Paris](paris.md) and <a href='/w/milan'>Milan</a>",
            metadata={"source": "https://x.org/w/rome.md"},
        ),
        Document(
            id="paris",
            page_content="Back to [Rome](https://x.org/w/rome.md#top).",
            metadata={"source": "https://x.org/w/paris.md"},
        ),
        Document(id="milan", page_content="No links.", metadata={"url": "https://x.org/w/milan"}),
    ]
    out = LinkTransformer().transform_documents(documents)
    assert out[0].metadata["links"] == ["paris", "milan"]
    assert out[1].metadata["links"] == ["rome"]
    assert "links" not in out[2].metadata  # empty list left out (Chroma rejects empty lists)
    as_json = LinkTransformer(list_format="json").transform_documents(documents)
    assert json.loads(as_json[2].metadata["links"]) == []
    matrix = ForeignKeys(field="links").adjacency(candidates(list(as_json))).toarray()
    assert matrix[0, 1] == matrix[0, 2] == matrix[1, 0] == 1
    explicit = LinkTransformer(id_by_target={"paris.md": "P"}).transform_documents(
        [Document(page_content="[p](paris.md#x)")]
    )
    assert explicit[0].metadata["links"] == ["P"]


def test_entities_with_offline_spacy_and_cache(tmp_path: Path) -> None:
    pytest.importorskip("spacy")
    documents = [
        Document(id="a", page_content="Barack Obama was born in Honolulu, Hawaii."),
        Document(id="b", page_content="Obama's successor visited Honolulu in 2017."),
        Document(id="c", page_content="the weather was fine"),
    ]
    transformer = EntityTransformer(cache=tmp_path / "entities.sqlite", list_format="delimited")
    out = transformer.transform_documents(documents)
    assert "Honolulu" in read_list(out[0].metadata["entities"])
    assert "entities" not in documents[0].metadata
    again = transformer.transform_documents(documents)  # served from the cache
    assert [d.metadata for d in again] == [d.metadata for d in out]
    matrix = SharedEntities().adjacency(candidates(list(out))).toarray()
    assert matrix[0, 1] > 0 and matrix[2].sum() == 0


class FailingExtractor:
    """A core extractor whose every extraction fails (checks the failure policy)."""

    name = "failing"
    version = "1"

    def extract_batch(self, texts: list[str]) -> list[object]:
        from grapher_core.enrich import ExtractionResult

        return [ExtractionResult(entities=None, error="boom") for _ in texts]


async def test_entity_failures_warn_or_raise() -> None:
    documents = [Document(id="a", page_content="Paris")]
    with pytest.warns(RuntimeWarning, match="failed for 1 of 1"):
        out = EntityTransformer(extractor=FailingExtractor()).transform_documents(documents)
    assert "entities" not in out[0].metadata
    with pytest.raises(RuntimeError, match="positions"):
        await EntityTransformer(extractor=FailingExtractor(), strict=True).atransform_documents(
            documents
        )


def make_shop(path: Path) -> str:
    with closing(sqlite3.connect(path)) as connection, connection:  # commit, then close
        connection.executescript("""
            CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, total DECIMAL(10, 2),
                                 customer_id INTEGER REFERENCES customers(id));
            CREATE TABLE notes (body TEXT);
        """)
    return f"sqlite:///{path}"


@pytest.mark.parametrize("list_format", ["list", "json", "delimited"])
def test_schema_loader_on_real_sqlite(tmp_path: Path, list_format: str) -> None:
    url = make_shop(tmp_path / "shop.db")
    documents = SQLSchemaLoader(url, list_format=list_format).load()
    by_id = {d.id: d for d in documents}
    assert set(by_id) == {"shop.customers", "shop.orders", "shop.notes"}
    orders = by_id["shop.orders"]
    assert orders.page_content.startswith("Table: orders\nColumns: id (integer)")
    assert read_list(orders.metadata["foreign_keys"]) == ["shop.customers"]
    assert read_list(orders.metadata["column_types"])[1] == "decimal(10, 2)"
    assert json.loads(orders.metadata["fk_pairs"]) == [["customer_id", "shop.customers", "id"]]
    notes = by_id["shop.notes"].metadata
    assert read_list(notes.get("foreign_keys")) == []
    if list_format == "list":
        assert "foreign_keys" not in notes and isinstance(orders.metadata["columns"], list)
    else:
        assert all(not isinstance(v, list) for v in orders.metadata.values())
    with pytest.raises(ValueError, match="list_format"):
        SQLSchemaLoader(url, list_format="csv")
