"""The NeighbourSource contract (grapher_core.testing) on LlamaIndex's stores: a docstore and a
real Chroma vector store, through the wrapper's NodeSource."""

from __future__ import annotations

import os
import uuid

import pytest

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

pytest.importorskip("llama_index.core")

from llama_index.core.schema import TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore

from grapher_core.testing import ContractError, check_neighbour_source
from llama_index_grapher.neighbours import NodeSource

pytestmark = pytest.mark.integration  # a real Chroma store


def nodes() -> list[TextNode]:
    return [
        TextNode(
            id_=f"n{i}",
            text=f"chunk {i}",
            metadata={"title": f"T{i}"},
            embedding=[1.0, float(i), 0.0],
        )
        for i in range(4)
    ]


def docstore() -> object:
    store = SimpleDocumentStore()
    store.add_documents(nodes())
    return store


def chroma() -> object:
    chromadb = pytest.importorskip("chromadb")
    pytest.importorskip("llama_index.vector_stores.chroma")
    from llama_index.vector_stores.chroma import ChromaVectorStore

    collection = chromadb.EphemeralClient().create_collection(f"contract-{uuid.uuid4().hex[:8]}")
    store = ChromaVectorStore(chroma_collection=collection)
    store.add(nodes())
    return store


@pytest.mark.parametrize("make", [docstore, chroma], ids=["docstore", "chroma"])
def test_node_source_keeps_the_contract(make) -> None:  # type: ignore[no-untyped-def]
    source = NodeSource(make())  # type: ignore[arg-type]
    check_neighbour_source(source, [((None, "n1"),), (("title", "T2"),)])
    with pytest.raises(ContractError, match="found nothing"):
        check_neighbour_source(source, [((None, "no-such"),)])
