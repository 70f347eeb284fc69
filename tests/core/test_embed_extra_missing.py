"""Without the ``embed`` extra, every door that reaches the embedding model says which extra to
install -- never a bare ``No module named 'torch'`` or ``'sentence_transformers'``.

The missing packages are simulated by ``None`` entries in ``sys.modules`` (what an absent
package raises on import: ``ModuleNotFoundError``); the default embedder is reset so each door
builds a fresh one."""

from __future__ import annotations

import sys

import pytest

from grapher_core import Candidate, GraphReranker
from grapher_core.cli import main
from grapher_core.errors import MissingDependencyError

HINT = "pip install 'grapher-rerank[embed]'"


@pytest.fixture(params=["sentence_transformers", "torch"])
def no_embed_extra(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``sentence_transformers`` absent (and, for ``torch``, torch too: sentence-transformers
    cannot be imported without it)."""
    monkeypatch.setattr("grapher_core.embeddings._DEFAULT", None)
    blocked = ["sentence_transformers"] + (["torch"] if request.param == "torch" else [])
    for name in blocked:
        monkeypatch.setitem(sys.modules, name, None)
    return str(request.param)


def test_the_embedder_names_the_extra(no_embed_extra: str) -> None:
    from grapher_core.embeddings import SentenceTransformerEmbedder

    for call in (
        lambda: SentenceTransformerEmbedder().embed_query("a question"),
        lambda: SentenceTransformerEmbedder().embed_documents(["a text"]),
    ):
        with pytest.raises(MissingDependencyError, match=r"'embed' extra .*" + "grapher-rerank"):
            call()


def test_langchain_embeddings_name_the_extra(no_embed_extra: str) -> None:
    pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
    from langchain_grapher import GraphEREmbeddings

    with pytest.raises(MissingDependencyError, match=HINT.replace("[", r"\[").replace("]", r"\]")):
        GraphEREmbeddings().embed_query("a question")


def test_llamaindex_embedding_names_the_extra(no_embed_extra: str) -> None:
    pytest.importorskip("llama_index.core", reason="needs the 'llamaindex' extra")
    from llama_index_grapher import GraphERLlamaEmbedding

    with pytest.raises(MissingDependencyError) as raised:
        GraphERLlamaEmbedding().get_query_embedding("a question")
    assert HINT in str(raised.value)


def test_a_gat_rerank_of_text_only_candidates_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("torch_geometric", reason="needs the 'gat' extra")
    monkeypatch.setattr("grapher_core.embeddings._DEFAULT", None)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # torch stays: gat has it
    candidates = [
        Candidate(f"t{i}", f"table {i} with columns", 1.0 - i / 10, {"foreign_keys": [f"t{i + 1}"]})
        for i in range(6)
    ]
    with pytest.raises(MissingDependencyError) as raised:
        GraphReranker(ranker="gat").rerank(candidates, query="which table", top_n=3)
    assert HINT in str(raised.value)


def test_grapher_demo_names_the_extra(
    no_embed_extra: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("sqlalchemy", reason="needs the 'sql' extra")
    assert main(["demo"]) == 2
    err = capsys.readouterr().err
    assert HINT in err and "No module named" not in err
