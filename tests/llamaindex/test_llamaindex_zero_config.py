"""LlamaIndex: schema documents rerank with zero configuration; one score scale; cached
vectors; strict mode."""

from __future__ import annotations

import sqlite3
import uuid
import warnings
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from grapher_core.diagnostics import GraphERDiagnosticError, GraphERWarning
from grapher_core.errors import ConfigError
from llama_index_grapher import GraphERPostprocessor, GraphERSchemaReader

SHOP = """
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE orders (order_id INTEGER PRIMARY KEY,
    customer_id INTEGER REFERENCES customers(customer_id));
CREATE TABLE items (item_id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders(order_id));
CREATE TABLE notes (note_id INTEGER PRIMARY KEY, body TEXT);
"""


def _schema_nodes(tmp_path: Path) -> list[NodeWithScore]:
    pytest.importorskip("sqlalchemy")
    path = tmp_path / "shop.db"
    with closing(sqlite3.connect(path)) as connection, connection:  # commit, then close
        connection.executescript(SHOP)
    documents = GraphERSchemaReader().load_data(f"sqlite:///{path}")
    scores = {"shop.orders": 0.8, "shop.notes": 0.5, "shop.items": 0.3, "shop.customers": 0.2}
    # A splitter / vector store gives the nodes fresh UUIDs: links name table ids, not node ids.
    nodes = [
        NodeWithScore(
            node=TextNode(id_=str(uuid.uuid4()), text=d.text, metadata=dict(d.metadata)),
            score=scores[d.metadata["table_id"]],
        )
        for d in documents
    ]
    return sorted(nodes, key=lambda n: -(n.score or 0.0))


def test_schema_reader_nodes_get_foreign_key_edges_with_zero_config(tmp_path: Path) -> None:
    nodes = _schema_nodes(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = GraphERPostprocessor(strict=True).postprocess_nodes(nodes, query_str="q")
    assert not [w for w in caught if issubclass(w.category, GraphERWarning)]
    assert out[0].node.metadata["grapher_edges"] == {"structural": 4, "contextual": 0}
    order = [n.node.metadata["table_id"] for n in out]
    assert order.index("shop.items") < order.index("shop.notes")  # lifted by its order link


def test_node_score_is_the_relevance_and_the_raw_score_is_kept(tmp_path: Path) -> None:
    nodes = _schema_nodes(tmp_path)
    out = GraphERPostprocessor(ranker="ppr").postprocess_nodes(nodes, query_str="q")
    assert all(0.0 <= (n.score or 0.0) <= 1.0 for n in out)
    raw = [n.node.metadata["grapher_score"] for n in out]
    assert sum(raw) == pytest.approx(1.0)  # PPR mass, on its own key
    assert "grapher_score" in out[0].node.excluded_llm_metadata_keys


def test_strict_raises_on_a_misspelled_field(tmp_path: Path) -> None:
    from grapher_core import ForeignKeys

    nodes = _schema_nodes(tmp_path)
    with pytest.raises(GraphERDiagnosticError, match="'foreign_key'"):
        GraphERPostprocessor(
            proximities=[ForeignKeys("foreign_key")], strict=True, use_relationships=False
        ).postprocess_nodes(nodes, query_str="q")


def test_vectors_are_embedded_once_then_cached() -> None:
    from llama_index.core.embeddings import MockEmbedding

    from grapher_core import SemanticKNN

    class Counting(MockEmbedding):
        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            calls.append(len(texts))
            return [list(np.random.default_rng(len(t)).normal(size=8)) for t in texts]

    calls: list[int] = []
    nodes = [
        NodeWithScore(node=TextNode(id_=f"n{i}", text=f"text {i}"), score=1 - i / 10)
        for i in range(6)
    ]
    post = GraphERPostprocessor(
        proximities=[SemanticKNN(k=2, threshold=-1.0)], embed_model=Counting(embed_dim=8)
    )
    post.postprocess_nodes(nodes, query_str="q")
    post.postprocess_nodes(nodes, query_str="q2")
    assert calls == [6]


def test_vectors_are_read_from_the_index_vector_store() -> None:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from grapher_core import SemanticKNN
    from llama_index_grapher import GraphERLlamaEmbedding

    class Refusing(MockEmbedding):
        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            raise AssertionError("stored vectors must be used")

    rng = np.random.default_rng(0)
    nodes = [
        TextNode(id_=f"n{i}", text=f"text {i}", embedding=list(rng.normal(size=8)))
        for i in range(6)
    ]
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    retrieved = index.as_retriever(similarity_top_k=6).retrieve("q")
    assert all(n.node.embedding is None for n in retrieved)  # the docstore has no vectors
    post = GraphERPostprocessor(
        proximities=[SemanticKNN(k=2, threshold=-1.0)],
        embed_model=Refusing(embed_dim=8),
        vector_store=index.vector_store,
    )
    out = post.postprocess_nodes(retrieved, query_str="q")
    assert out[0].node.metadata["grapher_edges"]["semantic"] >= 6
    assert GraphERLlamaEmbedding.class_name() == "GraphERLlamaEmbedding"


def test_a_plain_string_query_is_accepted() -> None:
    """``engine.retrieve("text")`` passes the string on to postprocessors."""
    nodes = [
        NodeWithScore(node=TextNode(id_=f"n{i}", text=f"t{i}"), score=1 - i / 10) for i in range(4)
    ]
    post = GraphERPostprocessor(top_n=2)
    out = post._postprocess_nodes(nodes, "which one?")  # type: ignore[arg-type]
    assert [n.node.node_id for n in out] == ["n0", "n1"]
    with pytest.raises(TypeError, match="QueryBundle or a string"):
        post._postprocess_nodes(nodes, 3)  # type: ignore[arg-type]


def test_from_dict_of_to_dict_rebuilds_the_proximities() -> None:
    from grapher_core import ForeignKeys, SharedEntities

    post = GraphERPostprocessor(
        proximities=[ForeignKeys("links", target_field="url"), SharedEntities(max_share=0.1)],
        top_n=3,
    )
    again = GraphERPostprocessor.from_dict(post.to_dict())
    assert again.proximities == post.proximities and again.top_n == 3
    data = post.to_dict()
    data["proximities"] = [{"class": "os:system"}]
    with pytest.raises(ConfigError, match=r"from_dict payload: key 'proximities\[0\]\.class'"):
        GraphERPostprocessor.from_dict(data)
