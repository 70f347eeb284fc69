"""GraphERSchemaReader on a real SQLite database, indexed and reranked through LlamaIndex."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from grapher_core import ForeignKeys
from grapher_core.metadata import read_list
from llama_index_grapher import TABLE_ID_FIELD, GraphERPostprocessor, GraphERSchemaReader


@pytest.fixture
def shop_db(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.exec_driver_sql(
            "CREATE TABLE products (id INTEGER PRIMARY KEY, title TEXT, price REAL)"
        )
        conn.exec_driver_sql(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER "
            "REFERENCES customers(id), product_id INTEGER REFERENCES products(id), qty INTEGER)"
        )
        conn.exec_driver_sql("CREATE TABLE audit_log (id INTEGER, message TEXT)")
    engine.dispose()
    return url


def test_one_document_per_table_with_foreign_keys(shop_db):
    reader = GraphERSchemaReader(list_format="list")
    docs = {d.doc_id: d for d in reader.load_data(shop_db, db_id="shop")}
    assert set(docs) == {"shop.customers", "shop.products", "shop.orders", "shop.audit_log"}
    orders = docs["shop.orders"]
    assert sorted(orders.metadata["foreign_keys"]) == ["shop.customers", "shop.products"]
    assert orders.metadata[TABLE_ID_FIELD] == "shop.orders"
    assert json.loads(orders.metadata["fk_pairs"])  # nested list -> JSON, Chroma-safe
    assert "foreign_keys" not in docs["shop.audit_log"].metadata  # empty list omitted
    assert orders.text.startswith("Table: orders\nColumns: id (integer)")
    assert orders.get_content(metadata_mode=MetadataMode.EMBED) == orders.text  # no header
    llm_text = orders.get_content(metadata_mode=MetadataMode.LLM)
    assert llm_text == f"table_id: shop.orders\n\n{orders.text}"  # which database, no edges


def test_embedded_text_is_the_langchain_loaders_page_content(shop_db):
    from langchain_grapher import SQLSchemaLoader

    loaded = {d.id: d.page_content for d in SQLSchemaLoader(shop_db, db_id="shop").load()}
    read = GraphERSchemaReader()
    for item in [*read.load_data(shop_db, db_id="shop"), *read.load_nodes(shop_db, db_id="shop")]:
        assert item.get_content(metadata_mode=MetadataMode.EMBED) == loaded[item.node_id]


def test_nodes_keep_the_table_id_through_an_index(shop_db):
    from llama_index.core.embeddings import MockEmbedding

    nodes = GraphERSchemaReader().load_nodes(shop_db, db_id="shop")
    assert all(type(n) is TextNode and n.node_id == n.metadata[TABLE_ID_FIELD] for n in nodes)
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    retrieved = index.as_retriever(similarity_top_k=4).retrieve("orders per customer")
    assert {n.node.node_id for n in retrieved} == {n.node_id for n in nodes}
    assert all(n.node.node_id == n.node.metadata[TABLE_ID_FIELD] for n in retrieved)


def test_json_list_format_is_the_default_flat_and_readable(shop_db):
    docs = GraphERSchemaReader().load_data(shop_db, db_id="shop")
    explicit = GraphERSchemaReader(list_format="json").load_data(shop_db, db_id="shop")
    assert [d.metadata for d in docs] == [d.metadata for d in explicit]
    for doc in docs:
        assert all(isinstance(v, (str, int, float)) for v in doc.metadata.values())
    orders = next(d for d in docs if d.doc_id == "shop.orders")
    assert sorted(read_list(orders.metadata["foreign_keys"])) == ["shop.customers", "shop.products"]
    with pytest.raises(ValueError, match="list_format"):
        GraphERSchemaReader(list_format="yaml")  # type: ignore[arg-type]


def test_foreign_keys_lift_the_joined_table_through_an_index(shop_db):
    from llama_index.core.embeddings import MockEmbedding

    docs = GraphERSchemaReader().load_data(shop_db, db_id="shop")
    index = VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))
    retrieved = index.as_retriever(similarity_top_k=4).retrieve("orders per customer")
    # from_documents runs the node parser: fresh ids, the table id only in metadata
    assert all(n.node.node_id != n.node.metadata[TABLE_ID_FIELD] for n in retrieved)
    # Hand the retriever's nodes fixed scores so the test does not hang on MockEmbedding's ties.
    score = {
        "shop.orders": 0.9,
        "shop.audit_log": 0.5,
        "shop.products": 0.45,
        "shop.customers": 0.4,
    }
    items = [
        NodeWithScore(node=n.node, score=score[n.node.metadata[TABLE_ID_FIELD]]) for n in retrieved
    ]
    items.sort(key=lambda n: -(n.score or 0))
    post = GraphERPostprocessor(
        proximities=[ForeignKeys("foreign_keys", target_field=TABLE_ID_FIELD)]
    )
    order = [n.node.metadata[TABLE_ID_FIELD] for n in post.postprocess_nodes(items, query_str="q")]
    assert order[0] == "shop.orders"
    assert order.index("shop.customers") < order.index("shop.audit_log")
    assert order.index("shop.products") < order.index("shop.audit_log")
    assert isinstance(retrieved[0].node, TextNode)
