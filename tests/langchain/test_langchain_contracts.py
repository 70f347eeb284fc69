"""The NeighbourSource contract (grapher_core.testing) on LangChain's stores: real Chroma and
InMemoryVectorStore, through the wrapper's VectorStoreSource."""

from __future__ import annotations

import os
import uuid

import numpy as np
import pytest

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

chromadb = pytest.importorskip("chromadb")
langchain_chroma = pytest.importorskip("langchain_chroma")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore  # noqa: E402

from grapher_core.testing import ContractError, check_neighbour_source  # noqa: E402
from langchain_grapher.neighbours import VectorStoreSource  # noqa: E402

pytestmark = pytest.mark.integration  # a real Chroma store


class TinyEmbeddings(Embeddings):
    """Deterministic 8-d vectors from the text's bytes: enough for a store to hold documents."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        rng = np.random.default_rng(sum(text.encode()))
        return [float(x) for x in rng.standard_normal(8)]


def documents() -> list[Document]:
    return [
        Document(id=f"d{i}", page_content=f"passage {i}", metadata={"title": f"Title {i}"})
        for i in range(4)
    ]


def chroma() -> VectorStore:
    store = langchain_chroma.Chroma(
        collection_name=f"contract-{uuid.uuid4().hex[:8]}",
        embedding_function=TinyEmbeddings(),
        client=chromadb.EphemeralClient(),
    )
    store.add_documents(documents())
    return store


def memory() -> VectorStore:
    store = InMemoryVectorStore(TinyEmbeddings())
    store.add_documents(documents())
    return store


@pytest.mark.parametrize("make", [chroma, memory], ids=["chroma", "in-memory"])
def test_vector_store_source_keeps_the_contract(make) -> None:  # type: ignore[no-untyped-def]
    source = VectorStoreSource(make())
    check_neighbour_source(source, [((None, "d1"),), (("title", "Title 2"),)])
    with pytest.raises(ContractError, match="found nothing"):
        check_neighbour_source(source, [((None, "no-such"),)])
