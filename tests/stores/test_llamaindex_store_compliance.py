"""Every LlamaIndex store adapter against the same checks, on real stores (no mocks).

Written through LlamaIndex's own ingestion (a node parser, then ``VectorStoreIndex`` over a
``StorageContext`` holding the store), read back through the index's retriever: every metadata
shape GraphER writes or reads, in the shape the store keeps (``store_ready``), compared field by
field as GraphER's readers see it, the node parser's PREVIOUS/NEXT/SOURCE relationships, the
vectors read back by the adapter in one call, and the store's metadata filter on a GraphER field.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from helpers_extras import needs
from helpers_stores import (
    LIST_FIELDS,
    LLAMAINDEX_STORES,
    NESTED_FIELDS,
    SCALAR_FIELDS,
    llama_embed_model,
    llama_store,
    postgres_or_skip,
    shapes,
    unit,
    vector_of,
)

needs("llamaindex")

from llama_index.core import Document, StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.core.schema import MetadataMode, NodeRelationship  # noqa: E402
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters  # noqa: E402

from grapher_core.diagnostics import GraphERWarning  # noqa: E402
from grapher_core.metadata import read_int, read_list  # noqa: E402
from grapher_core.request.stores import unkept_fields  # noqa: E402
from llama_index_grapher.stores import adapter_for, store_ready  # noqa: E402

pytestmark = pytest.mark.integration

N_SOURCES = 3
RELATIONS = (NodeRelationship.SOURCE, NodeRelationship.PREVIOUS, NodeRelationship.NEXT)


def _documents() -> list[Document]:
    out = []
    for i in range(N_SOURCES):
        words = " ".join(f"Zürich order {i}-{w} ships to customer {w}." for w in range(30))
        metadata = shapes(i)
        document = Document(text=words, metadata=metadata, id_=f"source-{i}")
        document.excluded_embed_metadata_keys = list(metadata)
        document.excluded_llm_metadata_keys = list(metadata)
        out.append(document)
    return out


@pytest.fixture(params=LLAMAINDEX_STORES)
def built(request: pytest.FixtureRequest) -> tuple[Any, Any, list[Any]]:
    """(store, index, the nodes written) -- the nodes as GraphER writes them for the store."""
    store = llama_store(request.param, postgres_or_skip(request))
    nodes = SentenceSplitter(chunk_size=64, chunk_overlap=0).get_nodes_from_documents(_documents())
    nodes = store_ready(store, nodes)
    index = VectorStoreIndex(
        nodes,
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=llama_embed_model(),
    )
    return store, index, nodes


def _retrieved(index: Any, n: int, **kwargs: Any) -> list[Any]:
    retriever = index.as_retriever(similarity_top_k=n, **kwargs)
    return [hit.node for hit in retriever.retrieve("Zürich order ships to customer")]


def _nested(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def test_every_shape_and_relationship_reads_back_the_same(
    built: tuple[Any, Any, list[Any]],
) -> None:
    _store, index, nodes = built
    assert len(nodes) >= 2 * N_SOURCES  # the splitter made chunks, linked PREVIOUS/NEXT
    written = {n.node_id: n for n in nodes}
    found = _retrieved(index, len(nodes))
    assert sorted(n.node_id for n in found) == sorted(written)
    for node in found:
        source = node.relationships[NodeRelationship.SOURCE].node_id
        expected = shapes(int(source.split("-")[1]))
        assert node.get_content() == written[node.node_id].get_content()
        for field in LIST_FIELDS:
            assert read_list(node.metadata.get(field)) == expected[field], field
        for field in SCALAR_FIELDS:
            value = node.metadata[field]
            assert value == expected[field] or read_int(value) == expected[field], field
        for field in NESTED_FIELDS:
            assert _nested(node.metadata[field]) == expected[field], field
        for relation in RELATIONS:
            mine = written[node.node_id].relationships.get(relation)
            theirs = node.relationships.get(relation)
            assert (mine is None) == (theirs is None), relation
            if mine is not None:
                assert theirs.node_id == mine.node_id, relation


@pytest.mark.parametrize("kind", LLAMAINDEX_STORES)
def test_a_shape_the_store_cannot_keep_is_said_naming_field_and_store(
    kind: str, request: pytest.FixtureRequest
) -> None:
    store = llama_store(kind, postgres_or_skip(request))
    capabilities = adapter_for(store).capabilities
    unkept = unkept_fields(capabilities, shapes(0))
    document = Document(text="x", metadata=shapes(0))
    if not unkept:
        assert store_ready(store, [document])[0].metadata == shapes(0)
        return
    with pytest.warns(GraphERWarning) as said:
        store_ready(store, [document])
    messages = " ".join(str(w.message) for w in said)
    assert capabilities.store in messages
    assert all(repr(field) in messages for field in unkept)


def test_vectors_read_back_in_one_call_equal_those_written(
    built: tuple[Any, Any, list[Any]],
) -> None:
    _store, index, nodes = built
    ids = [n.node_id for n in reversed(nodes)] + ["not-stored"]
    vectors = adapter_for(index).vectors(ids)
    assert len(vectors) == len(ids) and vectors[-1] is None
    for node, vector in zip(reversed(nodes), vectors, strict=False):
        assert vector is not None
        expected = vector_of(node.get_content(metadata_mode=MetadataMode.EMBED))
        np.testing.assert_allclose(unit(vector), unit(expected), atol=1e-5)


def test_the_store_itself_gives_vectors_or_says_how(built: tuple[Any, Any, list[Any]]) -> None:
    """Given the vector store (``index.vector_store``) rather than the index: every store but
    FAISS reads by node id; FAISS (rows, not node ids) says to pass the index."""
    store, _index, nodes = built
    adapter = adapter_for(store)
    if type(store).__name__ == "FaissVectorStore":
        assert not adapter.capabilities.vectors
        with pytest.warns(GraphERWarning, match=r"vector_store=index"):
            assert adapter.vectors([n.node_id for n in nodes]) == [None] * len(nodes)
        return
    vectors = adapter.vectors([n.node_id for n in nodes])
    assert all(v is not None for v in vectors)


def test_the_stores_metadata_filter_works_on_a_grapher_field(
    built: tuple[Any, Any, list[Any]],
) -> None:
    _store, index, nodes = built
    if not adapter_for(index).capabilities.filters:
        with pytest.raises(Exception):  # noqa: B017 - the store refuses filters its own way
            _retrieved(index, len(nodes), filters=MetadataFilters(filters=[]))
        return
    # "table", not "doc_id": LlamaIndex writes its own doc_id (the ref doc id) into each store's
    # payload, so a filter on doc_id matches the source document's id, not GraphER's field.
    condition = MetadataFilters(filters=[MetadataFilter(key="table", value="table_2")])
    found = _retrieved(index, len(nodes), filters=condition)
    expected = {
        n.node_id
        for n in nodes
        if n.relationships[NodeRelationship.SOURCE].node_id in ("source-2",)
    }
    assert found and {n.node_id for n in found} == expected
