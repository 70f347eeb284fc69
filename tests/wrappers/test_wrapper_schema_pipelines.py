"""The README's table pipelines agree: two SQLite databases with foreign keys, pooled, read by
LangChain's ``SQLSchemaLoader`` and LlamaIndex's ``GraphERSchemaReader``, embedded by the
packaged MiniLM in each framework's own vector store, retrieve the same tables in the same order
and rerank them to the same list, table ids included.

Before, the reader's documents embedded LlamaIndex's metadata header (``table: ...\\ndb_id:
...``) and ``from_documents`` gave the tables fresh node ids, so the lists never matched.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")
pytest.importorskip("sqlalchemy")
pytest.importorskip("sentence_transformers")

from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.schema import MetadataMode, QueryBundle

from langchain_grapher import GraphEREmbeddings, GraphERReranker, SQLSchemaLoader
from llama_index_grapher import GraphERLlamaEmbedding, GraphERPostprocessor, GraphERSchemaReader

pytestmark = pytest.mark.integration  # the packaged MiniLM

SHOP = """
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT, email TEXT, city TEXT);
CREATE TABLE suppliers (supplier_id INTEGER PRIMARY KEY, company TEXT, country TEXT);
CREATE TABLE products (product_id INTEGER PRIMARY KEY, title TEXT, price REAL,
    supplier_id INTEGER REFERENCES suppliers(supplier_id));
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, placed_at TEXT,
    customer_id INTEGER REFERENCES customers(customer_id));
CREATE TABLE order_items (item_id INTEGER PRIMARY KEY, quantity INTEGER,
    order_id INTEGER REFERENCES orders(order_id),
    product_id INTEGER REFERENCES products(product_id));
CREATE TABLE payments (payment_id INTEGER PRIMARY KEY, amount REAL, paid_at TEXT,
    order_id INTEGER REFERENCES orders(order_id));
CREATE TABLE audit_log (log_id INTEGER PRIMARY KEY, message TEXT, logged_at TEXT);
"""
CRM = """
CREATE TABLE agents (agent_id INTEGER PRIMARY KEY, name TEXT, team TEXT);
CREATE TABLE accounts (account_id INTEGER PRIMARY KEY, company TEXT, industry TEXT,
    owner_id INTEGER REFERENCES agents(agent_id));
CREATE TABLE contacts (contact_id INTEGER PRIMARY KEY, name TEXT, email TEXT, phone TEXT,
    account_id INTEGER REFERENCES accounts(account_id));
CREATE TABLE tickets (ticket_id INTEGER PRIMARY KEY, subject TEXT, status TEXT, opened_at TEXT,
    contact_id INTEGER REFERENCES contacts(contact_id),
    agent_id INTEGER REFERENCES agents(agent_id));
CREATE TABLE campaigns (campaign_id INTEGER PRIMARY KEY, title TEXT, budget REAL);
CREATE TABLE leads (lead_id INTEGER PRIMARY KEY, score INTEGER,
    campaign_id INTEGER REFERENCES campaigns(campaign_id),
    contact_id INTEGER REFERENCES contacts(contact_id));
"""
QUESTIONS = [
    "How much did each customer pay for their orders?",
    "Which products from German suppliers were ordered most?",
    "Which agent handles the most open support tickets?",
    "What is the email of the contact at each account?",
    "How many leads did each marketing campaign bring?",
    "List the cities of customers who ordered more than 3 items.",
    "Which industries have accounts with unresolved tickets?",
    "Total payments per day",
]
TOP_N = 5


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Two SQLite files with foreign keys, as URLs (their names are the db ids)."""
    folder: Path = tmp_path_factory.mktemp("schemas")
    urls = []
    for name, script in (("shop", SHOP), ("crm", CRM)):
        path = folder / f"{name}.db"
        with closing(sqlite3.connect(path)) as connection, connection:  # commit, then close
            connection.executescript(script)
        urls.append(f"sqlite:///{path}")
    return urls


def _langchain(urls: list[str]) -> tuple[InMemoryVectorStore, ContextualCompressionRetriever]:
    """The README's LangChain pipeline over the pooled schemas."""
    docs = [doc for url in urls for doc in SQLSchemaLoader(url).load()]
    store = InMemoryVectorStore.from_documents(docs, GraphEREmbeddings())
    retriever = ContextualCompressionRetriever(
        base_compressor=GraphERReranker(top_n=TOP_N),
        base_retriever=store.as_retriever(search_kwargs={"k": 200}),
    )
    return store, retriever


def _llamaindex(urls: list[str]) -> VectorStoreIndex:
    """The README's LlamaIndex pipeline's index over the pooled schemas."""
    reader = GraphERSchemaReader()
    nodes = [node for url in urls for node in reader.load_nodes(url)]
    return VectorStoreIndex(nodes, embed_model=GraphERLlamaEmbedding())


def test_both_frameworks_embed_the_same_text_under_the_same_id(databases: list[str]) -> None:
    langchain = {
        str(d.id): d.page_content for url in databases for d in SQLSchemaLoader(url).load()
    }
    reader = GraphERSchemaReader()
    for items in (
        [d for url in databases for d in reader.load_data(url)],
        [n for url in databases for n in reader.load_nodes(url)],
    ):
        assert {n.node_id: n.get_content(metadata_mode=MetadataMode.EMBED) for n in items} == (
            langchain
        )
    assert len(langchain) == 13 and {i.split(".")[0] for i in langchain} == {"shop", "crm"}


def test_the_readme_table_pipelines_return_the_same_list(
    databases: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from llama_index.core import Settings

    monkeypatch.setattr(Settings, "_llm", MockLLM())  # no_text never calls it; restored after
    store, langchain = _langchain(databases)
    index = _llamaindex(databases)
    engine = index.as_query_engine(
        similarity_top_k=50,
        node_postprocessors=[GraphERPostprocessor(top_n=TOP_N)],
        response_mode="no_text",
    )
    dense = index.as_retriever(similarity_top_k=50)
    lifted = 0
    for question in QUESTIONS:
        found = store.similarity_search_with_score(question, k=200)
        plain_lc = [str(d.id) for d, _ in found]
        plain_li = [(n.node.node_id, n.score) for n in dense.retrieve(question)]
        assert [i for i, _ in plain_li] == plain_lc, question  # the same dense order
        assert [s for _, s in plain_li] == pytest.approx([s for _, s in found], abs=1e-5)
        got_lc = [str(d.id) for d in langchain.invoke(question)]
        got_li = [n.node.node_id for n in engine.retrieve(QueryBundle(question))]
        assert len(got_lc) == TOP_N
        assert got_li == got_lc, question  # ids and order
        lifted += got_lc != plain_lc[:TOP_N]
    assert lifted, "the foreign keys never moved a table: the comparison would prove little"
