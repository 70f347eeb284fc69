"""``score_threshold``, ``max_candidates`` and ``max_chars_per_doc``: same names, defaults and
validation in both wrappers, decided by the core; the user's documents are never changed and
outputs keep their full text."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import NodeWithScore, TextNode

from grapher_core import Candidate, ForeignKeys, GraphReranker
from grapher_core.conventions import RELEVANCE_SCORE_KEY
from grapher_core.diagnostics import GraphERDiagnosticError, GraphERWarning
from grapher_core.edges.graph import CandidateGraph
from grapher_core.errors import ConfigError
from grapher_core.ranking.base import RankContext
from grapher_core.rerank import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_CHARS_PER_DOC
from langchain_grapher import GraphERReranker
from llama_index_grapher import GraphERPostprocessor

WRAPPERS = [GraphERReranker, GraphERPostprocessor]


def documents(n: int, text: str = "document {i} about tables") -> list[Document]:
    return [
        Document(
            id=f"d{i}",
            page_content=text.format(i=i),
            metadata={"foreign_keys": [f"d{(i + 1) % n}"], "score": 1.0 - i / (2 * n)},
        )
        for i in range(n)
    ]


def nodes(n: int, text: str = "document {i} about tables") -> list[NodeWithScore]:
    return [
        NodeWithScore(
            node=TextNode(id_=d.id, text=d.page_content, metadata=dict(d.metadata)),
            score=d.metadata["score"],
        )
        for d in documents(n, text)
    ]


def rerank(wrapper: Any, n: int, **kwargs: Any) -> list[tuple[str, float]]:
    """(id, relevance score) of the outputs, whichever wrapper."""
    if isinstance(wrapper, GraphERReranker):
        out = wrapper.rerank_documents(documents(n, **kwargs), "q")
        return [(str(d.id), d.metadata[RELEVANCE_SCORE_KEY]) for d in out]
    post = wrapper.postprocess_nodes(nodes(n, **kwargs), query_str="q")
    return [(p.node.node_id, float(p.score or 0.0)) for p in post]


def build(kind: type, **fields: Any) -> Any:
    extra = {"score_key": "score"} if kind is GraphERReranker else {}
    return kind(proximities=[ForeignKeys()], **extra, **fields)


# -- defaults and validation --------------------------------------------------------------------
@pytest.mark.parametrize("kind", WRAPPERS)
def test_same_defaults_in_both_wrappers(kind: type) -> None:
    wrapper = kind()
    assert wrapper.score_threshold is None
    assert wrapper.max_candidates == DEFAULT_MAX_CANDIDATES == 1000
    assert wrapper.max_chars_per_doc == DEFAULT_MAX_CHARS_PER_DOC == 10_000
    core = GraphReranker()  # the core alone bounds nothing
    assert (core.max_candidates, core.max_chars_per_doc, core.score_threshold) == (None,) * 3


@pytest.mark.parametrize("kind", WRAPPERS)
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_candidates", 0),
        ("max_candidates", -5),
        ("max_candidates", 2.5),
        ("max_candidates", True),
        ("max_candidates", "100"),
        ("max_chars_per_doc", 0),
        ("max_chars_per_doc", 1.0),
        ("score_threshold", float("nan")),
        ("score_threshold", float("inf")),
        ("score_threshold", "high"),
    ],
)
def test_bad_values_are_refused_naming_the_field(kind: type, field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        kind(**{field: value})
    wrapper = kind()
    with pytest.raises(ValueError, match=field):
        setattr(wrapper, field, value)
    assert getattr(wrapper, field) == getattr(kind(), field)  # a refused value changes nothing


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_candidates", 0), ("max_chars_per_doc", -1), ("score_threshold", float("nan"))],
)
def test_the_core_validates_them_too(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=field):
        GraphReranker(**{field: value})


@pytest.mark.parametrize("kind", WRAPPERS)
def test_none_and_assignment_reach_the_core(kind: type) -> None:
    wrapper = kind(max_candidates=None, max_chars_per_doc=None, score_threshold=0.25)
    core = wrapper.core
    assert (core.max_candidates, core.max_chars_per_doc, core.score_threshold) == (None, None, 0.25)
    wrapper.max_candidates = 7
    core = wrapper.core
    assert core.max_candidates == 7


# -- score_threshold ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", WRAPPERS)
def test_score_threshold_drops_outputs_below_it_after_ranking(kind: type) -> None:
    everything = rerank(build(kind, top_n=None), 20)
    threshold = everything[len(everything) // 2][1]
    kept = rerank(build(kind, top_n=None, score_threshold=threshold), 20)
    assert kept == [(i, s) for i, s in everything if s >= threshold]  # same order, the tail cut
    assert 0 < len(kept) < len(everything)
    top = rerank(build(kind, top_n=3, score_threshold=threshold), 20)
    assert top == kept[:3]  # top_n and the threshold together: the best 3 above it
    assert rerank(build(kind, top_n=None, score_threshold=2.0), 20) == []


# -- max_candidates -------------------------------------------------------------------------------
def _graph_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, GraphERWarning)]


def test_max_candidates_keeps_the_first_documents_and_says_so_once() -> None:
    reranker = build(GraphERReranker, top_n=None, max_candidates=10)
    given = documents(30)
    snapshot = copy.deepcopy(given)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = reranker.compress_documents(given, "q")
        again = reranker.compress_documents(given, "q")
    said = [m for m in _graph_warnings(caught) if "max_candidates" in m]
    assert len(said) == 1 and "30 candidates" in said[0] and "other 20 dropped" in said[0]
    assert sorted(str(d.id) for d in out) == sorted(f"d{i}" for i in range(10))
    assert [d.id for d in again] == [d.id for d in out]
    assert given == snapshot  # the caller's list and documents are untouched


def test_max_candidates_keeps_the_first_nodes_and_says_so_once() -> None:
    post = build(GraphERPostprocessor, top_n=None, max_candidates=10)
    given = nodes(30)
    snapshot = copy.deepcopy(given)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = post.postprocess_nodes(given, query_str="q")
        post.postprocess_nodes(given, query_str="q")
    said = [m for m in _graph_warnings(caught) if "max_candidates" in m]
    assert len(said) == 1
    assert sorted(p.node.node_id for p in out) == sorted(f"d{i}" for i in range(10))
    assert [p.node.model_dump() for p in given] == [p.node.model_dump() for p in snapshot]
    assert len(given) == 30


@pytest.mark.parametrize("kind", WRAPPERS)
def test_the_default_bound_is_1000_and_none_lifts_it(kind: type) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bounded = rerank(build(kind, top_n=None), 1100)
    assert len(bounded) == 1000
    assert any("max_candidates=1000" in m for m in _graph_warnings(caught))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unbounded = rerank(build(kind, top_n=None, max_candidates=None), 1100)
    assert len(unbounded) == 1100
    assert not [m for m in _graph_warnings(caught) if "max_candidates" in m]


def test_strict_raises_instead_of_cutting_silently() -> None:
    with pytest.raises(GraphERDiagnosticError, match="max_candidates"):
        build(GraphERReranker, max_candidates=5, strict=True).compress_documents(documents(8), "q")


def test_expansion_keeps_its_fetched_documents_under_the_bound() -> None:
    """The bound applies to what the retriever gave, not to what expansion adds to it."""
    from grapher_core.expand import ExpandingReranker, InMemorySource

    pool = [
        Candidate(f"d{i}", f"doc {i}", 1.0 - i / 10, {"foreign_keys": [f"d{i + 10}"]})
        for i in range(10)
    ]
    corpus = pool + [Candidate(f"d{i}", f"doc {i}", None, {}) for i in range(10, 20)]
    core = GraphReranker([ForeignKeys()], max_candidates=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranked = ExpandingReranker(core, InMemorySource(corpus)).rerank(pool)
    given = {r.id for r in ranked if not r.expanded}
    assert given == {"d0", "d1", "d2", "d3"}
    assert any(r.expanded for r in ranked)


# -- max_chars_per_doc ----------------------------------------------------------------------------
LONG = "{i} " + "x" * 200


class TextRecorder:
    """A ranker that needs vectors and keeps the texts it was shown."""

    name = "text-recorder"
    needs_embeddings = True

    def __init__(self) -> None:
        self.texts: list[str] = []

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        self.texts += [c.text for c in context.candidates]
        return np.asarray(seeds, dtype=np.float64)


class LangChainRecorder(Embeddings):
    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += texts
        return [[float(len(t)), 1.0, float(i)] for i, t in enumerate(texts)]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0]


class LlamaRecorder(BaseEmbedding):
    _texts: list[str] = PrivateAttr(default_factory=list)

    @property
    def texts(self) -> list[str]:
        return self._texts

    def _get_query_embedding(self, query: str) -> list[float]:
        return [1.0, 0.0, 0.0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return [1.0, 0.0, 0.0]

    def _get_text_embedding(self, text: str) -> list[float]:
        self._texts.append(text)
        return [float(len(text)), 1.0, 0.0]


def test_langchain_embeds_and_ranks_cut_texts_but_returns_full_ones() -> None:
    ranker, model = TextRecorder(), LangChainRecorder()
    reranker = GraphERReranker(
        ranker=ranker, embeddings=model, top_n=None, max_chars_per_doc=12, max_candidates=None
    )
    given = documents(6, LONG)
    snapshot = copy.deepcopy(given)
    out = reranker.compress_documents(given, "q")
    assert model.texts and all(len(t) == 12 for t in model.texts)
    assert ranker.texts and all(len(t) <= 12 for t in ranker.texts)
    assert sorted(d.page_content for d in out) == sorted(d.page_content for d in given)
    assert all(len(d.page_content) > 200 for d in out)
    assert given == snapshot


async def test_llamaindex_embeds_and_ranks_cut_texts_but_returns_full_ones() -> None:
    ranker, model = TextRecorder(), LlamaRecorder(model_name="recorder")
    post = GraphERPostprocessor(ranker=ranker, embed_model=model, max_chars_per_doc=12)
    given = nodes(6, LONG)
    snapshot = copy.deepcopy(given)
    out = await post.apostprocess_nodes(given, query_str="q")
    assert model.texts and all(len(t) == 12 for t in model.texts)
    assert ranker.texts and all(len(t) <= 12 for t in ranker.texts)
    assert all(len(p.node.get_content()) > 200 for p in out)
    assert [p.node.model_dump() for p in given] == [p.node.model_dump() for p in snapshot]


def test_the_core_returns_the_full_text_it_cut() -> None:
    ranker = TextRecorder()
    long = [Candidate(f"c{i}", "y" * 50, 1.0 - i / 10, {}) for i in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranked = GraphReranker([], ranker, max_chars_per_doc=5).rerank(long)
    assert all(len(t) == 5 for t in ranker.texts)
    assert [r.candidate for r in ranked] == long  # the caller's own candidates, full text
