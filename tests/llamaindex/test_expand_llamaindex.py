"""Expansion through LlamaIndex stores: PREVIOUS/NEXT neighbours fetched by id from a docstore
and from a real Chroma vector store, one store call per hop."""

from __future__ import annotations

import os
import uuid

import pytest

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

pytest.importorskip("llama_index.core")

from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.storage.docstore import SimpleDocumentStore

from grapher_core import GraphReranker
from grapher_core.expand import ExpandingReranker, Expansion
from llama_index_grapher.convert import candidates_from_nodes, relationship_proximity
from llama_index_grapher.neighbours import NodeSource

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray


def chain(n: int = 5) -> list[TextNode]:
    nodes = [
        TextNode(
            id_=f"c{k}",
            text=f"chunk {k}",
            metadata={"title": f"T{k}"},
            embedding=[1.0, float(k), 0.0],
        )
        for k in range(n)
    ]
    for k, node in enumerate(nodes):
        if k > 0:
            node.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(node_id=f"c{k - 1}")
        if k < n - 1:
            node.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=f"c{k + 1}")
    return nodes


def test_docstore_source_follows_previous_next() -> None:
    docstore = SimpleDocumentStore()
    nodes = chain()
    docstore.add_documents(nodes)
    source = NodeSource(docstore)
    retrieved = [NodeWithScore(node=nodes[2], score=0.9), NodeWithScore(node=nodes[4], score=0.1)]
    reranker = ExpandingReranker(
        GraphReranker([relationship_proximity()]), source, Expansion(seeds=1, hops=2)
    )
    ranked, expansion = reranker.rerank_with_expansion(candidates_from_nodes(retrieved))
    assert set(expansion.added) == {"c1", "c3", "c0"}  # c3's next (c4) is retrieved already
    assert source.calls == expansion.fetch_calls == 2
    assert ranked[0].id == "c2"
    by_field = source.fetch([(("title", "T0"),)])
    assert [c.id for c in by_field] == ["c0"] and source.calls == 3


def test_chroma_vector_store_source() -> None:
    chromadb = pytest.importorskip("chromadb")
    pytest.importorskip("llama_index.vector_stores.chroma")
    from llama_index.vector_stores.chroma import ChromaVectorStore

    collection = chromadb.EphemeralClient().create_collection(f"li-{uuid.uuid4().hex[:8]}")
    store = ChromaVectorStore(chroma_collection=collection)
    store.add(chain())
    source = NodeSource(store)
    got = source.fetch([((None, "c1"),), ((None, "c3"),)])
    assert sorted(c.id for c in got) == ["c1", "c3"]
    assert source.calls == 1
    # relationships survive the store round trip, so the next hop can follow them
    assert sorted(got[0].metadata["_grapher_adjacent"]) in (["c0", "c2"], ["c2", "c4"])
    titled = source.fetch([(("title", "T4"),), (("title", "T0"),)])
    assert sorted(c.id for c in titled) == ["c0", "c4"]
    with pytest.raises(TypeError, match="LlamaIndex"):
        NodeSource(object())  # type: ignore[arg-type]


def test_postprocessor_expands_from_docstore() -> None:
    from llama_index.core.schema import QueryBundle

    from llama_index_grapher.postprocessor import EXPANDED_KEY, GraphERPostprocessor

    docstore = SimpleDocumentStore()
    nodes = chain()
    docstore.add_documents(nodes)
    retrieved = [NodeWithScore(node=nodes[2], score=0.9), NodeWithScore(node=nodes[4], score=0.1)]
    plain = GraphERPostprocessor().postprocess_nodes(retrieved, QueryBundle("chunk two"))
    assert [n.node.node_id for n in plain] == ["c2", "c4"]
    source = NodeSource(docstore)
    post = GraphERPostprocessor(neighbour_source=source, expand_seeds=1)
    out = post.postprocess_nodes(retrieved, QueryBundle("chunk two"))
    ids = [n.node.node_id for n in out]
    assert ids[0] == "c2" and set(ids) == {"c1", "c2", "c3", "c4"}
    assert source.calls == 1
    flagged = {n.node.node_id for n in out if n.node.metadata.get(EXPANDED_KEY)}
    assert flagged == {"c1", "c3"}
    fetched = next(n for n in out if n.node.node_id == "c1")
    assert EXPANDED_KEY in fetched.node.excluded_llm_metadata_keys
    assert EXPANDED_KEY not in docstore.get_node("c1").metadata  # the store's node is untouched
    assert NodeRelationship.NEXT in fetched.node.relationships


def test_relation_view_of_nodes() -> None:
    from llama_index_grapher import format_nodes_as_graph

    nodes = [NodeWithScore(node=n, score=1.0 / (k + 1)) for k, n in enumerate(chain(3))]
    lines = format_nodes_as_graph(nodes, seeds=1).splitlines()  # PREVIOUS/NEXT by default
    assert lines[:2] == ["[ROOT] T0.", "chunk 0"]
    assert "  1.1 T1 via adjacent chunk." in lines
    assert "    1.1.1 T2 via adjacent chunk." in lines
    tree = format_nodes_as_graph(nodes, seeds=1, style="tree").splitlines()
    assert tree[0] == "[1] T0"
    with pytest.raises(ValueError, match="style"):
        format_nodes_as_graph(nodes, style="fancy")


def test_node_sources_honour_limit() -> None:
    docstore = SimpleDocumentStore()
    docstore.add_documents(chain())
    source = NodeSource(docstore)
    keys = [((None, "c1"),), ((None, "c3"),), (("title", "T0"),), (("title", "T4"),)]
    assert len(source.fetch(keys)) == 4
    assert [c.id for c in source.fetch(keys, limit=3)] == ["c1", "c3", "c0"]
    assert source.fetch(keys, limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        source.fetch(keys, limit=-1)
