"""GraphER after a cross-encoder, the pipeline most users already have: LangChain's
``DocumentCompressorPipeline([CrossEncoderReranker(...), GraphERReranker()])`` and LlamaIndex's
``node_postprocessors=[<cross-encoder>, GraphERPostprocessor()]``.

The cross-encoders are small stand-ins (a word-overlap scorer behind LangChain's
``BaseCrossEncoder`` interface, a ``BaseNodePostprocessor`` scoring the same way), so nothing is
downloaded. GraphER reads the cross-encoder's order as its seeds (the graph lifts a linked table
the cross-encoder put 6th into the top 5) and, when told to, its absolute scores (then a
``score_threshold`` is an absolute cut, as in FlashRank or Cohere).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_classic")
pytest.importorskip("llama_index.core")

from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_classic.retrievers.document_compressors import (
    CrossEncoderReranker,
    DocumentCompressorPipeline,
)
from langchain_core.callbacks import CallbackManagerForRetrieverRun, Callbacks
from langchain_core.cross_encoders import BaseCrossEncoder
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from llama_index.core import QueryBundle
from llama_index.core.base.base_retriever import BaseRetriever as LlamaRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode

from grapher_core.conventions import RELEVANCE_SCORE_KEY, RETRIEVAL_SCORE_KEY
from grapher_core.diagnostics import GraphERWarning
from langchain_grapher import GraphERReranker
from llama_index_grapher import GraphERPostprocessor

QUERY = "which suppliers provide products in the electronics category"
NONSENSE = "purple giraffes dancing at midnight"
STOPWORDS = frozenset({"which", "in", "the", "a", "of", "at", "per", "one", "row"})

# (id, text, foreign keys). product_suppliers is the join table the SQL needs: few words in
# common with the question (the cross-encoder puts it 6th), linked to its top two tables.
TABLES: list[tuple[str, str, list[str]]] = [
    ("suppliers", "suppliers: supplier name, who provide products", ["product_suppliers"]),
    ("products", "products: name, price, electronics", ["product_suppliers"]),
    ("store_electronics", "store electronics: aisles by category, opening hours", []),
    ("product_reviews", "product reviews: stars given to products by category of buyer", []),
    ("shipping", "shipping: we provide", []),
    ("product_suppliers", "product_suppliers: supplier_id, product_id", ["products", "suppliers"]),
    ("category_stats", "category stats: monthly totals and figures", []),
    ("customers", "customers: name, email", []),
    ("orders", "orders: order date, customer", ["customers"]),
    ("invoices", "invoices: invoice total", ["orders"]),
    ("employees", "employees: staff name", []),
    ("regions", "regions: region name", []),
]
LIFTED = "product_suppliers"
ISOLATED = "store_electronics"  # no edge: its GraphER score is exactly its seed


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in STOPWORDS}


def text_of(object_id: str) -> str:
    return next(text for i, text, _ in TABLES if i == object_id)


def overlap(query: str, text: str) -> float:
    """A cross-encoder's absolute relevance, in [0, 1]: the share of the query's words the
    text holds (ties broken towards shorter texts, so the order is one)."""
    asked, held = words(query), words(text)
    return len(asked & held) / len(asked) + 0.01 / (1 + len(held))


# -- LangChain ------------------------------------------------------------------------------------
class OverlapCrossEncoder(BaseCrossEncoder):
    """LangChain's cross-encoder interface, scored by word overlap."""

    def score(self, text_pairs: list[tuple[str, str]]) -> list[float]:
        return [overlap(query, text) for query, text in text_pairs]


class ScoredCrossEncoderReranker(CrossEncoderReranker):
    """``CrossEncoderReranker`` keeps only the order; this one also writes the score into
    ``relevance_score``, as Cohere and FlashRank do (the recipe of docs/langchain.md)."""

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        scores = self.model.score([(query, d.page_content) for d in documents])
        ranked = sorted(zip(documents, scores, strict=True), key=lambda p: -p[1])
        return [
            Document(
                id=d.id, page_content=d.page_content, metadata={**d.metadata, "relevance_score": s}
            )
            for d, s in ranked[: self.top_n]
        ]


class ListRetriever(BaseRetriever):
    """A base retriever returning the pool in a fixed (poor) order."""

    documents: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return list(self.documents)


def documents() -> list[Document]:
    """The pool in the base retriever's order: the tables reversed (the join table 7th, the
    tables the question names last)."""
    return [
        Document(id=i, page_content=text, metadata={"foreign_keys": links})
        for i, text, links in reversed(TABLES)
    ]


def cross_encoder_order(query: str = QUERY) -> list[str]:
    return [i for i, text, _ in sorted(TABLES, key=lambda t: -overlap(query, t[1]))]


def test_the_stand_in_puts_the_join_table_sixth() -> None:
    order = cross_encoder_order()
    assert order.index(LIFTED) == 5
    assert order[:2] == ["suppliers", "products"]


def pipeline(*transformers: BaseDocumentCompressor) -> ContextualCompressionRetriever:
    return ContextualCompressionRetriever(
        base_compressor=DocumentCompressorPipeline(transformers=list(transformers)),
        base_retriever=ListRetriever(documents=documents()),
    )


def test_langchain_graph_er_reads_the_cross_encoders_order() -> None:
    retriever = pipeline(
        CrossEncoderReranker(model=OverlapCrossEncoder(), top_n=12), GraphERReranker(top_n=5)
    )
    ids = [d.id for d in retriever.invoke(QUERY)]
    assert LIFTED in ids and LIFTED not in cross_encoder_order()[:5]  # lifted from 6th
    assert ids[0] == "suppliers" and "products" in ids  # the cross-encoder's best stay
    # Seeds are the cross-encoder's order: on the base retriever's order GraphER alone ranks
    # otherwise (the tables the question names come last there).
    alone = GraphERReranker(top_n=5).compress_documents(documents(), QUERY)
    assert [d.id for d in alone] != ids


async def test_langchain_async_path_ranks_the_same() -> None:
    retriever = pipeline(
        CrossEncoderReranker(model=OverlapCrossEncoder(), top_n=12), GraphERReranker(top_n=5)
    )
    assert [d.id for d in await retriever.ainvoke(QUERY)] == [d.id for d in retriever.invoke(QUERY)]


def test_stock_cross_encoder_reranker_leaves_no_score_to_read() -> None:
    """``CrossEncoderReranker`` drops its scores: a ``score_key`` finds none and says so."""
    retriever = pipeline(
        CrossEncoderReranker(model=OverlapCrossEncoder(), top_n=12),
        GraphERReranker(top_n=5, score_key="relevance_score", seed_transform="raw"),
    )
    with pytest.warns(GraphERWarning, match="score_key='relevance_score' but no document"):
        retriever.invoke(QUERY)


def absolute(**fields: Any) -> ContextualCompressionRetriever:
    """The recipe for absolute scores: the cross-encoder's score seeds the graph as it is."""
    return pipeline(
        ScoredCrossEncoderReranker(model=OverlapCrossEncoder(), top_n=12),
        GraphERReranker(top_n=5, score_key="relevance_score", seed_transform="raw", **fields),
    )


def test_langchain_score_key_reads_the_cross_encoders_absolute_scores() -> None:
    by_id = {d.id: d for d in absolute().invoke(QUERY)}
    assert LIFTED in by_id  # the graph still lifts the join table
    # The cross-encoder's score is kept as retrieval_score, GraphER's is relevance_score; a
    # table without edges keeps exactly its seed, the cross-encoder's absolute score.
    isolated = by_id[ISOLATED].metadata
    assert isolated[RETRIEVAL_SCORE_KEY] == pytest.approx(overlap(QUERY, text_of(ISOLATED)))
    assert isolated[RELEVANCE_SCORE_KEY] == pytest.approx(isolated[RETRIEVAL_SCORE_KEY])
    lifted = by_id[LIFTED].metadata
    assert lifted[RELEVANCE_SCORE_KEY] > lifted[RETRIEVAL_SCORE_KEY]  # the graph's lift


def test_langchain_upstream_score_is_kept_with_rank_seeds_too() -> None:
    """Without ``score_key`` the cross-encoder's ``relevance_score`` is not read, but GraphER's
    replaces it, so it is kept as ``retrieval_score``; one already there is left alone."""
    out = pipeline(
        ScoredCrossEncoderReranker(model=OverlapCrossEncoder(), top_n=12), GraphERReranker(top_n=5)
    ).invoke(QUERY)
    kept = {d.id: d.metadata[RETRIEVAL_SCORE_KEY] for d in out}
    assert kept == {i: pytest.approx(overlap(QUERY, text_of(i))) for i in kept}
    given = Document(
        id="a", page_content="a", metadata={"relevance_score": 0.9, "retrieval_score": 0.4}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GraphERWarning)  # a pool of one
        (again,) = GraphERReranker(top_n=1).compress_documents([given], QUERY)
    assert again.metadata[RETRIEVAL_SCORE_KEY] == 0.4


def test_langchain_absolute_threshold_cuts_a_nonsense_query_silently() -> None:
    retriever = absolute(score_threshold=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphERWarning)  # no "relative score" note
        assert retriever.invoke(NONSENSE) == []
        kept = retriever.invoke(QUERY)
    assert kept and all(d.metadata[RELEVANCE_SCORE_KEY] >= 0.3 for d in kept)


def test_langchain_rank_seeds_keep_a_nonsense_querys_top_and_say_so() -> None:
    retriever = pipeline(
        CrossEncoderReranker(model=OverlapCrossEncoder(), top_n=12),
        GraphERReranker(top_n=5, score_threshold=0.3),
    )
    with pytest.warns(GraphERWarning, match="relative score"):
        kept = retriever.invoke(NONSENSE)
    assert kept and kept[0].metadata[RELEVANCE_SCORE_KEY] == pytest.approx(1.0)


# -- LlamaIndex -----------------------------------------------------------------------------------
class OverlapRerank(BaseNodePostprocessor):
    """A cross-encoder postprocessor as ``SentenceTransformerRerank`` is one: node scores set
    to the model's, sorted, ``top_n`` kept, the retrieval score kept when asked."""

    top_n: int = 12
    keep_retrieval_score: bool = False

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        assert query_bundle is not None
        out = []
        for item in nodes:
            node = item.node.model_copy(update={"metadata": dict(item.node.metadata)})
            if self.keep_retrieval_score:
                node.metadata[RETRIEVAL_SCORE_KEY] = item.score
            out.append(
                NodeWithScore(node=node, score=overlap(query_bundle.query_str, node.get_content()))
            )
        return sorted(out, key=lambda n: -(n.score or 0.0))[: self.top_n]


class NodeListRetriever(LlamaRetriever):
    """A retriever returning the pool in the base order, with cosine-like scores."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [
            NodeWithScore(
                node=TextNode(id_=i, text=text, metadata={"foreign_keys": links}),
                score=0.6 - 0.01 * position,
            )
            for position, (i, text, links) in enumerate(reversed(TABLES))
        ]


def engine(*postprocessors: BaseNodePostprocessor) -> RetrieverQueryEngine:
    return RetrieverQueryEngine.from_args(
        NodeListRetriever(), llm=MockLLM(), node_postprocessors=list(postprocessors)
    )


def test_llamaindex_graph_er_reads_the_cross_encoders_order() -> None:
    nodes = engine(OverlapRerank(top_n=12), GraphERPostprocessor(top_n=5)).retrieve(
        QueryBundle(QUERY)
    )
    ids = [n.node.node_id for n in nodes]
    assert LIFTED in ids and LIFTED not in cross_encoder_order()[:5]
    assert ids[0] == "suppliers" and "products" in ids
    alone = engine(GraphERPostprocessor(top_n=5)).retrieve(QueryBundle(QUERY))
    assert [n.node.node_id for n in alone] != ids


def test_both_frameworks_rank_the_stack_the_same() -> None:
    lc = pipeline(
        CrossEncoderReranker(model=OverlapCrossEncoder(), top_n=12), GraphERReranker(top_n=5)
    ).invoke(QUERY)
    li = engine(OverlapRerank(top_n=12), GraphERPostprocessor(top_n=5)).retrieve(QueryBundle(QUERY))
    assert [d.id for d in lc] == [n.node.node_id for n in li]
    assert [d.metadata[RELEVANCE_SCORE_KEY] for d in lc] == pytest.approx([n.score for n in li])


def test_llamaindex_raw_seeds_read_the_cross_encoders_absolute_scores() -> None:
    nodes = engine(
        OverlapRerank(top_n=12),
        GraphERPostprocessor(top_n=5, seed_transform="raw", keep_retrieval_score=True),
    ).retrieve(QueryBundle(QUERY))
    by_id = {n.node.node_id: n for n in nodes}
    assert LIFTED in by_id
    isolated = by_id[ISOLATED]
    cross = overlap(QUERY, text_of(ISOLATED))
    assert isolated.node.metadata[RETRIEVAL_SCORE_KEY] == pytest.approx(cross)
    assert isolated.score == pytest.approx(cross)  # no edge: exactly the cross-encoder's score
    assert (by_id[LIFTED].score or 0.0) > overlap(QUERY, text_of(LIFTED))


def test_llamaindex_absolute_threshold_cuts_a_nonsense_query_silently() -> None:
    stack = engine(
        OverlapRerank(top_n=12),
        GraphERPostprocessor(top_n=5, seed_transform="raw", score_threshold=0.3),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphERWarning)
        assert stack.retrieve(QueryBundle(NONSENSE)) == []
        kept = stack.retrieve(QueryBundle(QUERY))
    assert kept and all((n.score or 0.0) >= 0.3 for n in kept)


def test_llamaindex_rank_seeds_keep_a_nonsense_querys_top_and_say_so() -> None:
    stack = engine(OverlapRerank(top_n=12), GraphERPostprocessor(top_n=5, score_threshold=0.3))
    with pytest.warns(GraphERWarning, match="relative score"):
        kept = stack.retrieve(QueryBundle(NONSENSE))
    assert kept and kept[0].score == pytest.approx(1.0)
