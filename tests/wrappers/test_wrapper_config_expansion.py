"""A config that expands runs expanding in every door that loads it, or is refused there: loaded
without a neighbour source it used to rerank the candidates only, silently (what ran was not
what was evaluated). The retriever's loader now takes the reranker's ``neighbour_source`` too."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langchain_core", reason="needs the langchain extra (langchain-core)")
pytest.importorskip("llama_index.core", reason="needs the llamaindex extra (llama-index-core)")

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core.schema import TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore

from grapher_core import ForeignKeys, GraphReranker
from grapher_core.errors import ConfigError
from grapher_core.expand import ExpandingReranker, Expansion
from grapher_core.ranking.config import write_config
from grapher_core.request.settings import RerankSettings, engine_for
from langchain_grapher import GraphERReranker, GraphERRetriever
from llama_index_grapher import GraphERPostprocessor


@pytest.fixture()
def expanding(tmp_path: Path) -> Path:
    path = tmp_path / "grapher_config.json"
    settings = RerankSettings(
        proximities=(ForeignKeys(),), seed_transform="rank", expansion=Expansion(seeds=2, hops=1)
    )
    write_config(path, settings.to_config())
    return path


def _store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [
            Document(id=f"t{i}", page_content=f"table {i}", metadata={"id": f"t{i}"})
            for i in range(4)
        ]
    )
    return store


def test_every_door_refuses_it_without_a_neighbour_source(expanding: Path) -> None:
    store = _store()
    loaders = [
        (GraphReranker.from_config, "GraphReranker"),
        (GraphERReranker.from_config, "GraphERReranker without neighbour_source"),
        (GraphERPostprocessor.from_config, "GraphERPostprocessor without neighbour_source"),
        (
            lambda path: GraphERRetriever.from_config(path, base_retriever=store.as_retriever()),
            "GraphERRetriever without neighbour_source",
        ),
    ]
    for load, door in loaders:
        with pytest.raises(ConfigError, match="key 'expansion'") as caught:
            load(expanding)
        assert door in str(caught.value) and str(expanding) in str(caught.value)
        assert "neighbour source" in str(caught.value)


def test_every_door_expands_given_a_neighbour_source(expanding: Path) -> None:
    store = _store()
    reranker = GraphERReranker.from_config(expanding, neighbour_source=store)
    assert isinstance(reranker._engine, ExpandingReranker)
    retriever = GraphERRetriever.from_config(
        expanding, base_retriever=store.as_retriever(), neighbour_source=store
    )
    assert isinstance(retriever.reranker._engine, ExpandingReranker)
    assert retriever.reranker.neighbour_source is store
    docstore = SimpleDocumentStore()
    docstore.add_documents([TextNode(id_=f"t{i}", text=f"table {i}") for i in range(4)])
    postprocessor = GraphERPostprocessor.from_config(expanding, neighbour_source=docstore)
    assert isinstance(postprocessor._engine, ExpandingReranker)
    core = engine_for(RerankSettings.from_config(expanding), reranker._engine.source)
    assert isinstance(core, ExpandingReranker) and core.expansion.hops == 1
