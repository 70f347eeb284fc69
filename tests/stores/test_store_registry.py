"""The store-adapter registries: picked by the store's class names (subclasses included), no
store package imported to find one, an unknown store said once with how to register one."""

from __future__ import annotations

import subprocess
import sys
import warnings
from typing import Any

import numpy as np
import pytest
from helpers_extras import needs

from grapher_core.diagnostics import GraphERWarning
from grapher_core.errors import InputTypeError
from grapher_core.request.stores import StoreCapabilities, StoreRegistry, pgvector_from_send

pytestmark = pytest.mark.integration


class _Unknown:
    """A store of a type no adapter knows."""


def test_an_unknown_store_is_said_once_with_how_to_register() -> None:
    registry: StoreRegistry[Any] = StoreRegistry("Test", {}, how="call register_store_adapter")
    with pytest.warns(
        GraphERWarning, match=r"no store adapter for .*_Unknown.*register_store_adapter"
    ):
        assert registry.adapter(_Unknown()) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert registry.adapter(_Unknown()) is None  # said once per type


def test_registered_by_name_or_class_and_subclasses_get_their_bases_adapter() -> None:
    class Sub(_Unknown):
        pass

    registry: StoreRegistry[Any] = StoreRegistry("Test", {}, how="")
    registry.register(f"{_Unknown.__module__}.{_Unknown.__qualname__}", lambda s: ("by name", s))
    store = Sub()
    assert registry.adapter(store) == ("by name", store)
    registry.register(Sub, lambda s: "by class")
    assert registry.adapter(store) == "by class"


@pytest.mark.parametrize("bad", [42, "NoModule", None])
def test_a_bad_store_type_is_refused_naming_it(bad: Any) -> None:
    registry: StoreRegistry[Any] = StoreRegistry("Test", {}, how="")
    with pytest.raises(InputTypeError, match="store_type"):
        registry.register(bad, lambda s: None)
    with pytest.raises(InputTypeError, match="factory"):
        registry.register("a.B", "not callable")  # type: ignore[arg-type]


def test_pgvector_binary_form_reads_back() -> None:
    vector = np.asarray([0.5, -1.25, 3.0], dtype=">f4")
    sent = np.asarray([3, 0], dtype=">i2").tobytes() + vector.tobytes()
    assert pgvector_from_send(sent).tolist() == [0.5, -1.25, 3.0]
    assert pgvector_from_send(None) is None


def test_capabilities_list_format() -> None:
    assert StoreCapabilities("a", vectors=True).list_format == "list"
    assert StoreCapabilities("b", vectors=True, lists=False).list_format == "json"


@pytest.mark.parametrize(
    ("code", "store_modules"),
    [
        (
            "from langchain_core.vectorstores import InMemoryVectorStore;"
            "from langchain_core.embeddings import DeterministicFakeEmbedding;"
            "from langchain_grapher.stores import adapter_for;"
            "store = InMemoryVectorStore(DeterministicFakeEmbedding(size=4));"
            "assert adapter_for(store) is not None",
            ("chromadb", "faiss", "qdrant_client", "langchain_postgres", "langchain_community"),
        ),
        (
            "from llama_index.core.vector_stores import SimpleVectorStore;"
            "from llama_index_grapher.stores import adapter_for;"
            "assert adapter_for(SimpleVectorStore()) is not None",
            ("chromadb", "faiss", "qdrant_client", "llama_index.vector_stores.postgres"),
        ),
    ],
    ids=["langchain", "llamaindex"],
)
def test_finding_an_adapter_imports_no_store_package(
    code: str, store_modules: tuple[str, ...]
) -> None:
    needs("langchain" if "langchain" in code else "llamaindex")
    check = f"{code}; import sys; print([m for m in {store_modules!r} if m in sys.modules])"
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_wrappers_register_store_adapter_reaches_their_doors() -> None:
    needs("langchain")
    from langchain_grapher import register_store_adapter
    from langchain_grapher.stores import vectors_by_id

    class Mine:
        """A store the user wrote."""

    class MineAdapter:
        capabilities = StoreCapabilities("Mine", vectors=True)

        def __init__(self, store: Any) -> None:
            self.store = store

        def vectors(self, ids: Any) -> list[Any]:
            return [np.ones(3) if i == "a" else None for i in ids]

        def documents(self, documents: Any) -> list[Any]:
            return list(documents)

    register_store_adapter(Mine, MineAdapter)
    out = vectors_by_id(Mine(), ["a", "b"])
    assert out is not None and out[0].tolist() == [1.0, 1.0, 1.0] and out[1] is None


def test_llamaindex_chroma_scores_come_back_on_the_cosine_scale() -> None:
    """LlamaIndex's Chroma store scores exp(-distance); the adapter maps them to the cosine
    similarity the other stores return, on a real Chroma search."""
    needs("llamaindex")
    chromadb = needs("dev", "chromadb")
    needs("dev", "llama_index.vector_stores.chroma")
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores import VectorStoreQuery
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from llama_index_grapher.stores import adapter_for

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((5, 8))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for space in ("cosine", "l2"):
        collection = chromadb.EphemeralClient().create_collection(
            f"scores-{space}", metadata={"hnsw:space": space}
        )
        store = ChromaVectorStore(chroma_collection=collection)
        store.add(
            [
                TextNode(id_=f"n{i}", text=f"t{i}", embedding=v.tolist())
                for i, v in enumerate(vectors)
            ]
        )
        found = store.query(
            VectorStoreQuery(query_embedding=vectors[0].tolist(), similarity_top_k=5)
        )
        mapped = adapter_for(store).relevance(found.similarities)
        cosines = [float(vectors[0] @ vectors[int(i[1:])]) for i in found.ids]
        np.testing.assert_allclose(mapped, cosines, atol=1e-4)


def test_qdrant_is_asked_only_for_ids_it_can_hold() -> None:
    """GraphER's content-hash ids (documents without an id) are not point ids: Qdrant would
    answer them with an error, so the adapter leaves them out and they read as missing."""
    needs("langchain")
    qdrant_client = needs("dev", "qdrant_client")
    needs("dev", "langchain_qdrant")
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client.models import Distance, VectorParams

    from grapher_core.request.stores import qdrant_point_id
    from langchain_grapher.stores import adapter_for

    client = qdrant_client.QdrantClient(location=":memory:")
    client.create_collection("ids", vectors_config=VectorParams(size=4, distance=Distance.COSINE))
    store = QdrantVectorStore(
        client=client, collection_name="ids", embedding=DeterministicFakeEmbedding(size=4)
    )
    held = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
    store.add_documents([Document(id=held, page_content="x")])
    out = adapter_for(store).vectors(["h:1f2e3d", held, "42"])
    assert out is not None and out[0] is None and out[1] is not None and out[2] is None
    assert [qdrant_point_id(v) for v in ("h:1f2e3d", held, "42", "-1")] == [
        False,
        True,
        True,
        False,
    ]
