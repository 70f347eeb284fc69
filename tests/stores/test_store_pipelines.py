"""Each store's README pipeline (grapher_bench.latency.store_pipelines), on real stores:
``ranker="gat"`` reads the candidates' vectors from the store -- the embedding model embeds no
candidate while queries run -- and the default ranker returns the same lists as over the
in-memory store, on the same data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers_extras import needs
from helpers_stores import postgres_or_skip

from grapher_bench.latency.store_pipelines import (
    LANGCHAIN_STORES,
    LLAMAINDEX_STORES,
    CountingEmbedder,
    langchain_pipeline,
    llamaindex_pipeline,
    uuid_ids,
)

pytestmark = pytest.mark.integration

TABLES = [
    ("customers", "customer id, name, city", []),
    ("orders", "order id, customer id, date, total", ["customers"]),
    ("order_items", "order id, product id, quantity", ["orders", "products"]),
    ("products", "product id, name, price, supplier id", ["suppliers"]),
    ("suppliers", "supplier id, name, country", []),
    ("shipments", "shipment id, order id, carrier id, shipped date", ["orders", "carriers"]),
    ("carriers", "carrier id, name, phone", []),
    ("payments", "payment id, order id, amount, method", ["orders"]),
    ("employees", "employee id, name, manager id, store id", ["stores"]),
    ("stores", "store id, city, manager id", []),
    ("inventory", "store id, product id, stock", ["stores", "products"]),
    ("reviews", "review id, product id, customer id, stars", ["products", "customers"]),
]
QUERIES = (
    "Which customers placed orders with a total above 100?",
    "How many products does each supplier provide?",
    "Which carrier shipped the most orders?",
)
IDS = uuid_ids([name for name, _c, _f in TABLES])


def _rows() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (
            IDS[name],
            f"Table: {name}\nColumns: {columns}",
            {"table": name, "foreign_keys": [IDS[f] for f in fks]},
        )
        for name, columns, fks in TABLES
    ]


@pytest.fixture(scope="module")
def embedder() -> CountingEmbedder:
    needs("embed")
    from grapher_core.embeddings import default_embedder

    inner = default_embedder()
    texts = [text for _i, text, _m in _rows()]
    return CountingEmbedder(inner, dict(zip(texts, inner.embed_documents(texts), strict=True)))


def _langchain(
    kind: str, embedder: CountingEmbedder, postgres: Callable[[], Any], **reranker: Any
) -> Any:
    needs("langchain")
    from langchain_core.documents import Document

    from langchain_grapher import GraphEREmbeddings

    documents = [Document(id=i, page_content=t, metadata=m) for i, t, m in _rows()]
    invoke, _store = langchain_pipeline(
        kind, documents, GraphEREmbeddings(embedder), postgres, fetch_k=len(documents), **reranker
    )
    return lambda q: [d.id for d in invoke(q)]


def _llamaindex(
    kind: str, embedder: CountingEmbedder, postgres: Callable[[], Any], **post: Any
) -> Any:
    needs("llamaindex")
    from llama_index.core.schema import TextNode

    from llama_index_grapher import GraphERLlamaEmbedding

    nodes = [  # GraphER's fields out of the embedded text, as its extractors write them
        TextNode(
            id_=i,
            text=t,
            metadata=m,
            excluded_embed_metadata_keys=list(m),
            excluded_llm_metadata_keys=list(m),
        )
        for i, t, m in _rows()
    ]
    query, _index = llamaindex_pipeline(
        kind, nodes, GraphERLlamaEmbedding(embedder), postgres, fetch_k=len(nodes), **post
    )
    return lambda q: [n.node.node_id for n in query(q)]


def _store_kind(kind: str) -> None:
    modules = {
        "chroma": "chromadb",
        "faiss": "faiss",
        "qdrant": "qdrant_client",
        "pgvector": "psycopg",
    }
    if kind in modules:
        needs("dev", modules[kind])


@pytest.mark.parametrize("kind", LANGCHAIN_STORES)
def test_langchain_gat_embeds_no_candidate(
    kind: str, embedder: CountingEmbedder, request: pytest.FixtureRequest
) -> None:
    needs("gat")
    _store_kind(kind)
    run = _langchain(kind, embedder, postgres_or_skip(request), ranker="gat")
    embedder.reset()
    for query in QUERIES:
        assert len(run(query)) == 5
    assert embedder.documents == 0  # every candidate's vector came from the store
    assert embedder.queries >= 1


@pytest.mark.parametrize("kind", LLAMAINDEX_STORES)
def test_llamaindex_gat_embeds_no_candidate(
    kind: str, embedder: CountingEmbedder, request: pytest.FixtureRequest
) -> None:
    needs("gat")
    _store_kind(kind)
    run = _llamaindex(kind, embedder, postgres_or_skip(request), ranker="gat")
    embedder.reset()
    for query in QUERIES:
        assert len(run(query)) == 5
    assert embedder.documents == 0
    assert embedder.queries >= 1


@pytest.mark.parametrize("kind", LANGCHAIN_STORES[1:])
def test_langchain_default_ranker_lists_equal_the_in_memory_stores(
    kind: str, embedder: CountingEmbedder, request: pytest.FixtureRequest
) -> None:
    _store_kind(kind)
    postgres = postgres_or_skip(request)
    reference = _langchain("in_memory", embedder, postgres)
    run = _langchain(kind, embedder, postgres)
    for query in QUERIES:
        assert run(query) == reference(query), query


@pytest.mark.parametrize("kind", LLAMAINDEX_STORES[1:])
def test_llamaindex_default_ranker_lists_equal_the_simple_stores(
    kind: str, embedder: CountingEmbedder, request: pytest.FixtureRequest
) -> None:
    _store_kind(kind)
    postgres = postgres_or_skip(request)
    reference = _llamaindex("simple", embedder, postgres)
    run = _llamaindex(kind, embedder, postgres)
    for query in QUERIES:
        assert run(query) == reference(query), query


@pytest.mark.parametrize("kind", LANGCHAIN_STORES)
def test_the_compressor_told_the_store_embeds_no_candidate(
    kind: str, embedder: CountingEmbedder, request: pytest.FixtureRequest
) -> None:
    """The other LangChain door: ``ContextualCompressionRetriever`` over the store's own
    retriever, ``GraphERReranker(vector_store=store)`` reading the vectors (Qdrant's ids put
    back from its metadata first)."""
    needs("gat")
    _store_kind(kind)
    needs("dev", "langchain_classic")
    from langchain_classic.retrievers import ContextualCompressionRetriever
    from langchain_core.documents import Document

    from langchain_grapher import GraphEREmbeddings, GraphERReranker

    documents = [Document(id=i, page_content=t, metadata=m) for i, t, m in _rows()]
    embeddings = GraphEREmbeddings(embedder)
    _invoke, store = langchain_pipeline(
        kind, documents, embeddings, postgres_or_skip(request), fetch_k=len(documents)
    )
    retriever = ContextualCompressionRetriever(
        base_compressor=GraphERReranker(
            ranker="gat", embeddings=embeddings, vector_store=store, top_n=5
        ),
        base_retriever=store.as_retriever(search_kwargs={"k": len(documents)}),
    )
    embedder.reset()
    for query in QUERIES:
        out = retriever.invoke(query)
        assert len(out) == 5 and all(d.id in IDS.values() for d in out)
    assert embedder.documents == 0
