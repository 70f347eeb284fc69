"""Real Chroma (in-process) with the packaged MiniLM: list metadata round trip, the retriever,
the langchain-tests standard retriever suite, and an LCEL chain up to the prompt."""

from __future__ import annotations

import os
import sqlite3
import uuid
from contextlib import closing
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

chromadb = pytest.importorskip("chromadb")
langchain_chroma = pytest.importorskip("langchain_chroma")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import RunnableLambda, RunnablePassthrough  # noqa: E402
from langchain_tests.integration_tests import RetrieversIntegrationTests  # noqa: E402

from grapher_core import ForeignKeys  # noqa: E402
from langchain_grapher import (  # noqa: E402
    GraphEREmbeddings,
    GraphERReranker,
    GraphERRetriever,
    SQLSchemaLoader,
)
from langchain_grapher.convert import candidates_from_documents  # noqa: E402

SCHEMA = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, placed_on DATE,
                     customer_id INTEGER REFERENCES customers(id));
CREATE TABLE order_items (order_id INTEGER REFERENCES orders(id),
                          product_id INTEGER REFERENCES products(id), quantity INTEGER);
CREATE TABLE products (id INTEGER PRIMARY KEY, title TEXT, price REAL,
                       supplier_id INTEGER REFERENCES suppliers(id));
CREATE TABLE suppliers (id INTEGER PRIMARY KEY, company TEXT, country TEXT);
CREATE TABLE employees (id INTEGER PRIMARY KEY, full_name TEXT, salary REAL);
CREATE TABLE weather (day DATE, temperature REAL, rainfall REAL);
CREATE TABLE audit_log (id INTEGER PRIMARY KEY, message TEXT);
"""


@lru_cache(maxsize=1)
def embeddings() -> GraphEREmbeddings:
    return GraphEREmbeddings()


@cache
def schema_documents(list_format: str) -> tuple[Document, ...]:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"grapher-lc-shop-{uuid.uuid4().hex}.db"
    with closing(sqlite3.connect(path)) as connection, connection:  # commit, then close
        connection.executescript(SCHEMA)
    try:
        return tuple(
            SQLSchemaLoader(f"sqlite:///{path}", db_id="shop", list_format=list_format).load()
        )
    finally:
        path.unlink(missing_ok=True)


@cache
def store(list_format: str) -> Any:
    """A Chroma collection of the shop's tables; lists native ("list") or as JSON strings."""
    chroma = langchain_chroma.Chroma(
        collection_name=f"shop-{list_format}-{uuid.uuid4().hex[:8]}",
        embedding_function=embeddings(),
        client=chromadb.EphemeralClient(),
        collection_metadata={"hnsw:space": "cosine"},
    )
    chroma.add_documents(list(schema_documents(list_format)))
    return chroma


def graph_retriever(k: int = 4, list_format: str = "list") -> GraphERRetriever:
    return GraphERRetriever(
        base_retriever=store(list_format).as_retriever(),
        reranker=GraphERReranker(proximities=[ForeignKeys()]),
        k=k,
        fetch_k=8,
    )


@pytest.mark.parametrize("list_format", ["list", "json"])
def test_list_metadata_survives_chroma_and_keeps_the_edges(list_format: str) -> None:
    original = {d.id: d for d in schema_documents(list_format)}
    pairs = store(list_format).similarity_search_with_relevance_scores("customers", k=8)
    returned = [document for document, _score in pairs]
    assert {d.id for d in returned} == set(original)
    if list_format == "json":
        assert all(not isinstance(v, list) for d in returned for v in d.metadata.values())
    proximity = ForeignKeys()
    reference = proximity.adjacency(candidates_from_documents([original[d.id] for d in returned]))
    after = proximity.adjacency(candidates_from_documents(returned))
    assert after.nnz == reference.nnz == 8  # 4 foreign keys, both directions
    assert (after != reference).nnz == 0


@pytest.mark.parametrize("list_format", ["list", "json"])
def test_retriever_uses_store_scores_and_lifts_linked_tables(list_format: str) -> None:
    query = "Which customers placed orders?"
    plain = [d.id for d in store(list_format).similarity_search(query, k=8)]
    out = graph_retriever(k=8, list_format=list_format).invoke(query)
    assert sorted(d.id for d in out) == sorted(plain)
    assert all(d.metadata["relevance_score"] > 0 and "retrieval_score" in d.metadata for d in out)
    top3 = [d.id for d in out[:3]]
    assert "shop.orders" in top3 and "shop.customers" in top3
    # tables with no foreign key and no lift never move above a linked, better-seeded one
    assert [d.id for d in out].index("shop.weather") >= plain.index("shop.weather")


async def test_retriever_async_matches_sync() -> None:
    retriever = graph_retriever(k=3)
    query = "product prices by supplier country"
    assert await retriever.ainvoke(query) == retriever.invoke(query)
    assert len(await retriever.ainvoke(query, k=2)) == 2


def test_retriever_rejects_bad_k() -> None:
    with pytest.raises(ValueError, match="k must be"):
        graph_retriever().invoke("q", k=-1)


def test_lcel_chain_up_to_the_prompt() -> None:
    def format_docs(documents: list[Document]) -> str:
        return "\n\n".join(d.page_content for d in documents)

    prompt = ChatPromptTemplate.from_template(
        "Write SQL for the question using these tables:\n{tables}\n\nQuestion: {question}"
    )
    chain = {
        "tables": graph_retriever(k=3) | RunnableLambda(format_docs),
        "question": RunnablePassthrough(),
    } | prompt
    value = chain.invoke("Which customers placed orders?")
    text = value.to_string()
    assert "Table: orders" in text and "Table: customers" in text
    assert text.count("Table: ") == 3 and text.endswith("Question: Which customers placed orders?")
    assert isinstance(StrOutputParser().invoke(value.to_messages()[0]), str)


class TestGraphERRetrieverStandard(RetrieversIntegrationTests):
    """The langchain-tests standard suite for retrievers."""

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return GraphERRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {
            "base_retriever": store("list").as_retriever(),
            "reranker": GraphERReranker(proximities=[ForeignKeys()]),
            "fetch_k": 8,
        }

    @property
    def retriever_query_example(self) -> str:
        return "Which customers placed orders?"
