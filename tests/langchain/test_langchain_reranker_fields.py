"""Changing a field after construction takes effect, and the core reranker is reused per call."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from grapher_core import ForeignKeys
from langchain_grapher import GraphERReranker


def docs() -> list[Document]:
    return [
        Document(id="a", page_content="a", metadata={"score": 0.9}),
        Document(id="b", page_content="b", metadata={"score": 0.8}),
        Document(id="c", page_content="c", metadata={"score": 0.1, "foreign_keys": ["a"]}),
    ]


def test_core_reused_between_calls_and_rebuilt_on_assignment() -> None:
    reranker = GraphERReranker(proximities=[ForeignKeys()], score_key="score", top_n=None)
    core = reranker.core
    reranker.compress_documents(docs(), "q")
    assert reranker.core is core
    reranker.ranker = "baseline"
    assert reranker.core is not core and reranker.core.ranker.name == "baseline"
    assert [d.id for d in reranker.compress_documents(docs(), "q")] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="unknown ranker"):
        reranker.ranker = "nope"
