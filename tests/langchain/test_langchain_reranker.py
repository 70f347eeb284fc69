"""GraphERReranker: LangChain conventions, bad input, async, and ContextualCompressionRetriever."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from pydantic import ValidationError

from grapher_core import ForeignKeys, GraphReranker, SemanticKNN
from grapher_core.errors import ConfigError
from grapher_core.ranking.base import RankContext
from langchain_grapher import GraphERReranker
from langchain_grapher.convert import candidates_from_documents


def tables() -> list[Document]:
    """orders is the best match; customers only matters through its foreign key to orders."""
    return [
        Document(
            id="shop.orders",
            page_content="Table: orders",
            metadata={"score": 0.9, "foreign_keys": ["shop.customers"]},
        ),
        Document(id="shop.products", page_content="Table: products", metadata={"score": 0.7}),
        Document(id="shop.stock", page_content="Table: stock", metadata={"score": 0.65}),
        Document(
            id="shop.customers",
            page_content="Table: customers",
            metadata={"score": 0.6, "foreign_keys": '["shop.orders"]'},
        ),  # a JSON string
    ]


class ListRetriever(BaseRetriever):
    """Returns fixed documents in a fixed order (a stand-in base retriever)."""

    documents: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: object) -> list[Document]:
        return list(self.documents)


def test_foreign_key_lifts_linked_table_and_keeps_ids_and_copies_metadata() -> None:
    documents = tables()
    before = copy.deepcopy(documents)
    reranker = GraphERReranker(proximities=[ForeignKeys()], score_key="score", top_n=2)
    out = reranker.compress_documents(documents, "which customers ordered?")
    assert [d.id for d in out] == ["shop.orders", "shop.customers"]
    assert all(isinstance(d.metadata["relevance_score"], float) for d in out)
    assert out[0].metadata["relevance_score"] >= out[1].metadata["relevance_score"]
    assert out[1].metadata["foreign_keys"] == '["shop.orders"]'
    assert documents == before  # nothing mutated
    assert all(o is not d for o in out for d in documents)
    assert "relevance_score" not in documents[0].metadata


def test_default_top_n_is_three_and_none_returns_all() -> None:
    assert len(GraphERReranker().compress_documents(tables(), "q")) == 3
    assert len(GraphERReranker(top_n=None).compress_documents(tables(), "q")) == 4
    assert GraphERReranker().compress_documents([], "q") == []


def test_same_scores_as_the_core() -> None:
    documents = tables()
    reranker = GraphERReranker(
        proximities=[ForeignKeys()], score_key="score", ranker="ppr", top_n=None
    )
    wrapped = reranker.compress_documents(documents, "q")
    core = GraphReranker([ForeignKeys()], "ppr").rerank(
        candidates_from_documents(documents, score_key="score")
    )
    assert [d.id for d in wrapped] == [c.id for c in core]
    assert [d.metadata["relevance_score"] for d in wrapped] == pytest.approx(
        [c.relevance for c in core], abs=1e-12
    )
    assert [d.metadata["grapher_score"] for d in wrapped] == pytest.approx(
        [c.score for c in core], abs=1e-12
    )  # the raw PPR mass stays available


def test_without_score_key_seeds_come_from_rank() -> None:
    documents = list(reversed(tables()))
    out = GraphERReranker(top_n=None, ranker="baseline").compress_documents(documents, "q")
    assert [d.id for d in out] == [d.id for d in documents]  # rank seeds: rank order kept


def test_zero_config_detects_foreign_keys_and_reports_edges() -> None:
    out = GraphERReranker(top_n=None).compress_documents(tables(), "q")
    explicit = GraphERReranker(proximities=[ForeignKeys()], top_n=None).compress_documents(
        tables(), "q"
    )
    assert [d.id for d in out] == [d.id for d in explicit]
    assert out[0].metadata["grapher_edges"] == explicit[0].metadata["grapher_edges"]
    assert out[0].metadata["grapher_edges"]["structural"] > 0


def test_misspelled_score_key_is_said_once() -> None:
    import warnings

    from grapher_core.diagnostics import GraphERWarning

    reranker = GraphERReranker(score_key="scor", top_n=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            reranker.compress_documents(tables(), "q")
    said = [
        str(w.message)
        for w in caught
        if issubclass(w.category, GraphERWarning) and "score_key" in str(w.message)
    ]
    assert len(said) == 1 and "'score'" in said[0]  # the key that is there is named


def test_explain_writes_neighbours() -> None:
    out = GraphERReranker(
        proximities=[ForeignKeys()], score_key="score", top_n=2, explain=True
    ).compress_documents(tables(), "q")
    explanation = out[1].metadata["grapher_explanation"]
    assert explanation[0]["neighbour_id"] == "shop.orders"
    assert explanation[0]["kinds"] == ["structural"]


def test_documents_without_ids_rank_under_content_hash_and_keep_id_none() -> None:
    documents = [
        Document(page_content="Table: a", metadata={"table": "a", "fk": "b"}),
        Document(page_content="Table: c"),
        Document(page_content="Table: b", metadata={"table": "b"}),
    ]
    out = GraphERReranker(
        proximities=[ForeignKeys(field="fk", target_field="table")], top_n=2
    ).compress_documents(documents, "q")
    assert [d.page_content for d in out] == ["Table: a", "Table: b"]
    assert all(d.id is None for d in out)


def test_bad_input_gives_clear_errors() -> None:
    reranker = GraphERReranker(score_key="score")
    duplicated = [*tables(), Document(id="shop.stock", page_content="again", metadata={"score": 1})]
    with pytest.raises(ValueError, match=r"duplicate document ids: 'shop\.stock'"):
        reranker.compress_documents(duplicated, "q")
    same_text = [Document(page_content="x"), Document(page_content="x")]
    with pytest.raises(ValueError, match="identical text"):
        GraphERReranker().compress_documents(same_text, "q")
    missing = tables()
    missing[1] = Document(id="shop.products", page_content="no score")
    with pytest.raises(ValueError, match=r"shop\.products"):
        reranker.compress_documents(missing, "q")
    for bad in ("high", math.nan, float("inf")):
        docs = tables()
        docs[2] = Document(id="shop.stock", page_content="x", metadata={"score": bad})
        with pytest.raises(ValueError, match=r"shop\.stock"):
            reranker.compress_documents(docs, "q")
    with pytest.raises(TypeError, match="position 1"):
        reranker.compress_documents([tables()[0], "not a document"], "q")  # type: ignore[list-item]


def test_bad_fields_fail_at_construction() -> None:
    with pytest.raises(ConfigError, match=r"did you mean 'top_n'"):
        GraphERReranker(top_k=3)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="unknown ranker"):
        GraphERReranker(ranker="nope")
    with pytest.raises(ValidationError):
        GraphERReranker(top_n=-1)
    with pytest.raises(TypeError, match="not a proximity"):
        GraphERReranker(proximities=["foreign_keys"])


async def test_async_path_matches_sync() -> None:
    reranker = GraphERReranker(proximities=[ForeignKeys()], score_key="score", top_n=None)
    sync = reranker.compress_documents(tables(), "q")
    asynchronous = await reranker.acompress_documents(tables(), "q")
    assert sync == asynchronous


class RecordingRanker:
    """A core Ranker that records the vectors it is given (checks the embeddings path)."""

    name = "recording"

    def __init__(self) -> None:
        self.contexts: list[RankContext] = []

    def rank(self, graph: object, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        self.contexts.append(context)
        return np.asarray(seeds, dtype=np.float64)


async def test_embeddings_embed_the_query_once_and_documents_in_one_batch() -> None:
    ranker = RecordingRanker()
    embeddings = DeterministicFakeEmbedding(size=8)
    reranker = GraphERReranker(
        ranker=ranker, embeddings=embeddings, proximities=[SemanticKNN(k=1, threshold=-1.0)]
    )
    reranker.compress_documents(tables(), "which customers?")
    await reranker.acompress_documents(tables(), "which customers?")
    for context in ranker.contexts:
        assert context.query == "which customers?"
        assert context.query_embedding is not None and context.query_embedding.shape == (8,)
        assert all(
            c.embedding is not None and c.embedding.shape == (8,) for c in context.candidates
        )
    assert len(ranker.contexts) == 2


def test_one_line_usage_with_contextual_compression_retriever() -> None:
    retrievers = pytest.importorskip("langchain_classic.retrievers")
    retriever = retrievers.ContextualCompressionRetriever(
        base_compressor=GraphERReranker(proximities=[ForeignKeys()], score_key="score"),
        base_retriever=ListRetriever(documents=tables()),
    )
    out = retriever.invoke("which customers ordered?")
    assert [d.id for d in out] == ["shop.orders", "shop.customers", "shop.products"]
