"""LlamaIndex + the *default* ``ChromaVectorStore`` (flat metadata): GraphER's enrichment ingests
with zero configuration and its edges come back out of the store. Real Chroma
(in-memory client), real ``VectorStoreIndex``, the packaged MiniLM."""

from __future__ import annotations

import sqlite3
import uuid
import warnings
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

chromadb = pytest.importorskip("chromadb")
pytest.importorskip("llama_index.vector_stores.chroma")
from llama_index.core import StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.embeddings import MockEmbedding  # noqa: E402
from llama_index.core.ingestion import IngestionPipeline  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.core.schema import Document, TextNode  # noqa: E402
from llama_index.vector_stores.chroma import ChromaVectorStore  # noqa: E402

from grapher_core.enrich.links import build_target_index  # noqa: E402
from grapher_core.metadata import read_list  # noqa: E402
from llama_index_grapher import (  # noqa: E402
    GraphEREntityExtractor,
    GraphERLinkExtractor,
    GraphERMentionExtractor,
    GraphERPostprocessor,
    GraphERSchemaReader,
)

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray

# A small history-of-programming-languages corpus: one Markdown link, titles named in the text,
# and entities shared between pages.
PAGES = {
    "Fortran": "Fortran was developed at IBM in the 1950s for scientific computing.",
    "ALGOL": "ALGOL was designed in 1958 by a committee; it introduced block structure and "
    "influenced Pascal. See [Pascal](https://langs.example/pascal).",
    "Pascal (programming language)": "Pascal was created by Niklaus Wirth around 1970 for "
    "teaching structured programming.",
    "Niklaus Wirth": "Niklaus Wirth was a Swiss computer scientist who received the Turing "
    "Award in 1984.",
    "COBOL": "COBOL is a business language designed in 1959 at the Pentagon.",
    "Lisp": "Lisp was specified by John McCarthy in 1958 at MIT.",
}
URLS = {title: f"https://langs.example/{title.split()[0].lower()}" for title in PAGES}
QUESTION = "Which award did the designer of the language ALGOL influenced receive?"


def default_store() -> tuple[ChromaVectorStore, Any]:
    client = chromadb.EphemeralClient()
    collection = client.get_or_create_collection(f"grapher-default-{uuid.uuid4().hex[:8]}")
    store = ChromaVectorStore(chroma_collection=collection)
    assert store.flat_metadata  # LlamaIndex's default: a list value is rejected at ingest
    return store, collection


def documents() -> list[Document]:
    return [
        Document(text=body, id_=title, metadata={"title": title, "url": URLS[title]})
        for title, body in PAGES.items()
    ]


def test_default_extractors_ingest_into_the_default_chroma_store(
    hf_embed_model, tmp_path: Path
) -> None:
    store, collection = default_store()
    pipeline = IngestionPipeline(
        transformations=[
            SentenceSplitter(chunk_size=256, chunk_overlap=0),  # one chunk per page
            GraphEREntityExtractor(cache=str(tmp_path / "entities.sqlite")),
            GraphERLinkExtractor(
                id_by_target=build_target_index({u: u for u in URLS.values()}), url_keys="url"
            ),
            GraphERMentionExtractor(),
            hf_embed_model,
        ],
        vector_store=store,
    )
    nodes = pipeline.run(documents=documents())  # raised Chroma/LlamaIndex's error before
    assert len(nodes) == len(PAGES)

    stored = {m["title"]: m for m in collection.get(include=["metadatas"])["metadatas"]}
    algol = stored["ALGOL"]
    assert isinstance(algol["mentions"], str) and isinstance(algol["links"], str)
    assert read_list(algol["mentions"]) == ["Pascal (programming language)"]
    assert read_list(algol["links"]) == [URLS["Pascal (programming language)"]]
    assert "niklaus wirth" in {e.casefold() for e in read_list(stored["Niklaus Wirth"]["entities"])}

    index = VectorStoreIndex.from_vector_store(store, embed_model=hf_embed_model)
    retrieved = index.as_retriever(similarity_top_k=len(PAGES)).retrieve(QUESTION)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # zero config: nothing to warn about
        out = GraphERPostprocessor(top_n=3, strict=True).postprocess_nodes(
            retrieved, query_str=QUESTION
        )
    edges = out[0].node.metadata["grapher_edges"]
    assert edges["structural"] > 0 and edges["conceptual"] > 0, edges


def test_schema_reader_documents_index_into_the_default_chroma_store(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    with closing(sqlite3.connect(path)) as connection, connection:  # commit, then close
        connection.executescript(
            "CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT);"
            "CREATE TABLE orders (order_id INTEGER PRIMARY KEY,"
            " customer_id INTEGER REFERENCES customers(customer_id));"
            "CREATE TABLE notes (note_id INTEGER PRIMARY KEY, body TEXT);"
        )
    store, _collection = default_store()
    index = VectorStoreIndex.from_documents(
        GraphERSchemaReader().load_data(f"sqlite:///{path}"),
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=MockEmbedding(embed_dim=8),
    )
    retrieved = index.as_retriever(similarity_top_k=3).retrieve("orders per customer")
    assert {n.node.metadata["table_id"] for n in retrieved} == {
        "shop.customers",
        "shop.orders",
        "shop.notes",
    }
    out = GraphERPostprocessor().postprocess_nodes(retrieved, query_str="orders per customer")
    assert out[0].node.metadata["grapher_edges"]["structural"] == 2  # orders <-> customers


def test_native_lists_still_need_a_store_that_keeps_them() -> None:
    """Why ``"json"`` is the LlamaIndex default: LlamaIndex rejects ``list_format="list"``
    values in a flat store, and the same nodes go in once the store keeps lists."""
    node = GraphERMentionExtractor(list_format="list").process_nodes(
        [TextNode(text=f"{title}\n{body}", embedding=[0.1] * 4) for title, body in PAGES.items()]
    )
    store, _collection = default_store()
    with pytest.raises(ValueError, match="mentions"):
        store.add(node)
    store.flat_metadata = False
    assert len(store.add(node)) == len(PAGES)
