"""The LangChain and LlamaIndex wrappers are two faces of one core: the same pool, sync or async,
with or without retriever scores, gives the same ranking, the same GraphER metadata and the
same texts embedded (the core's vector plan decides them, as float32, on both sides).

LangChain keeps the relevance in ``metadata["relevance_score"]``, LlamaIndex in
``NodeWithScore.score`` (each framework's convention): the metadata keys are compared with that
one key set aside, and the two values with each other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from helpers_chunks import PASSAGE, SENTENCE, lone_neighbour_pool
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore, TextNode

from grapher_core import ForeignKeys, SemanticKNN
from grapher_core.conventions import RELEVANCE_SCORE_KEY
from grapher_core.edges.graph import CandidateGraph
from grapher_core.ranking.base import RankContext
from langchain_grapher import GraphERReranker
from llama_index_grapher import GraphERPostprocessor

QUERY = "which tables hold the orders?"
TEXTS = [
    "orders: one row per order",
    "customers: who ordered",
    "products: what was ordered",
    "order_items: products per order",
    "suppliers: who delivers products",
    "stock: products in the warehouse",
    "invoices: one per order",
    "regions: where customers live",
]
LINKS = [["d1", "d3"], [], ["d4"], ["d0", "d2"], [], ["d2"], ["d0"], ["d1"]]
SCORES = [0.61, 0.9, 0.55, 0.8, 0.3, 0.42, 0.7, 0.2]


def hashed(text: str, dim: int) -> list[float]:
    """A deterministic unit vector per text (both frameworks' fakes use this one function)."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    vector = np.random.default_rng(seed).normal(size=dim)
    return (vector / np.linalg.norm(vector)).tolist()


class LangChainFake(Embeddings):
    """Hashed vectors; records what was embedded, sync or async."""

    def __init__(self, dim: int = 16) -> None:
        self.dim = dim
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(("docs", tuple(texts)))
        return [hashed(t, self.dim) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls.append(("query", (text,)))
        return hashed(text, self.dim)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


class LlamaFake(BaseEmbedding):
    """The same hashed vectors as a LlamaIndex embedding model."""

    dim: int = 16
    calls: list[tuple[str, tuple[str, ...]]] = Field(default_factory=list)

    def _get_query_embedding(self, query: str) -> list[float]:
        self.calls.append(("query", (query,)))
        return hashed(query, self.dim)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(("docs", tuple(texts)))
        return [hashed(t, self.dim) for t in texts]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._get_text_embeddings(texts)


def documents(scored: bool) -> list[Document]:
    return [
        Document(
            id=f"d{i}",
            page_content=text,
            metadata={"foreign_keys": LINKS[i], **({"score": SCORES[i]} if scored else {})},
        )
        for i, text in enumerate(TEXTS)
    ]


def nodes(scored: bool) -> list[NodeWithScore]:
    return [
        NodeWithScore(
            node=TextNode(id_=f"d{i}", text=text, metadata={"foreign_keys": LINKS[i]}),
            score=SCORES[i] if scored else None,
        )
        for i, text in enumerate(TEXTS)
    ]


Proximities = Callable[[], list[Any]]


def wrappers(
    ranker: Any, proximities: Proximities, scored: bool, dim: int | None
) -> tuple[GraphERReranker, GraphERPostprocessor, LangChainFake | None, LlamaFake | None]:
    lc_embed = None if dim is None else LangChainFake(dim)
    li_embed = None if dim is None else LlamaFake(dim=dim)
    lc = GraphERReranker(
        proximities=proximities(),
        ranker=ranker,
        top_n=5,
        score_key="score" if scored else None,
        explain=True,
        embeddings=lc_embed,
    )
    li = GraphERPostprocessor(
        proximities=proximities(),
        ranker=ranker,
        top_n=5,
        explain=True,
        use_relationships=False,
        embed_model=li_embed,
    )
    return lc, li, lc_embed, li_embed


async def both(
    lc: GraphERReranker, li: GraphERPostprocessor, scored: bool, mode: str
) -> tuple[Sequence[Document], list[NodeWithScore]]:
    if mode == "sync":
        return (
            lc.compress_documents(documents(scored), QUERY),
            li.postprocess_nodes(nodes(scored), query_str=QUERY),
        )
    return (
        await lc.acompress_documents(documents(scored), QUERY),
        await li.apostprocess_nodes(nodes(scored), query_str=QUERY),
    )


def assert_same(lc_out: Sequence[Document], li_out: list[NodeWithScore], scored: bool) -> list[str]:
    ids = [d.id for d in lc_out]
    assert ids == [n.node.node_id for n in li_out]
    given = {"foreign_keys", "score"} if scored else {"foreign_keys"}
    for document, node in zip(lc_out, li_out, strict=True):
        lc_keys = set(document.metadata) - given
        li_keys = set(node.node.metadata) - given
        assert lc_keys == li_keys | {RELEVANCE_SCORE_KEY}
        assert document.metadata[RELEVANCE_SCORE_KEY] == node.score
        for key in li_keys:  # scores, edges, explanations: one core, the same values
            assert document.metadata[key] == node.node.metadata[key], key
    return [i for i in ids if i is not None]


PLAIN: dict[str, Proximities] = {"foreign keys": lambda: [ForeignKeys()]}
WITH_VECTORS: Proximities = lambda: [ForeignKeys(), SemanticKNN(k=2, threshold=-1.0)]  # noqa: E731


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("scored", [True, False], ids=["scores", "no-scores"])
@pytest.mark.parametrize("ranker", ["gcs", "ppr", "baseline"])
async def test_graph_rankers_agree(ranker: str, scored: bool, mode: str) -> None:
    lc, li, _, _ = wrappers(ranker, PLAIN["foreign keys"], scored, None)
    lc_out, li_out = await both(lc, li, scored, mode)
    ids = assert_same(lc_out, li_out, scored)
    assert len(ids) == 5
    if ranker == "baseline":  # the retriever's order: the input order, scores or not
        assert ids == [f"d{i}" for i in range(5)]


# One pool in the retriever's order (by cosine), with the score each kind of store reports.
COSINES = sorted(SCORES, reverse=True)
SCORE_KINDS: dict[str, list[float]] = {
    "cosine": COSINES,
    "distance": [1.0 - c for c in COSINES],  # Chroma / LangChain similarity_search_with_score
    "relevance": [(1.0 + c) / 2.0 for c in COSINES],  # LangChain relevance scores
    "narrow band": [0.31 + c / 100.0 for c in COSINES],  # a store's flat cosines
}


def lc_documents(scores: list[float] | None) -> list[Document]:
    return [
        Document(
            id=f"d{i}",
            page_content=text,
            metadata={"foreign_keys": LINKS[i], **({} if scores is None else {"s": scores[i]})},
        )
        for i, text in enumerate(TEXTS)
    ]


def li_nodes(scores: list[float] | None) -> list[NodeWithScore]:
    return [
        NodeWithScore(
            node=TextNode(id_=f"d{i}", text=text, metadata={"foreign_keys": LINKS[i]}),
            score=None if scores is None else scores[i],
        )
        for i, text in enumerate(TEXTS)
    ]


@pytest.mark.parametrize("kind", sorted(SCORE_KINDS))
@pytest.mark.parametrize("ranker", ["gcs", "ppr", "baseline"])
def test_default_seed_rule_is_one_rule(ranker: str, kind: str) -> None:
    """A LangChain pipeline sees no score; LlamaIndex nodes carry whatever the store reports
    (cosines, distances, relevance). Under the defaults both rank the pool the same, and the
    same as a pool without any score: the seeds come from the retriever's order."""
    scores = SCORE_KINDS[kind]
    lc = GraphERReranker(proximities=[ForeignKeys()], ranker=ranker, top_n=None)
    li = GraphERPostprocessor(
        proximities=[ForeignKeys()], ranker=ranker, top_n=None, use_relationships=False
    )
    no_scores = [d.id for d in lc.compress_documents(lc_documents(None), QUERY)]
    lc_scored = GraphERReranker(
        proximities=[ForeignKeys()], ranker=ranker, top_n=None, score_key="s"
    )
    with_scores = [d.id for d in lc_scored.compress_documents(lc_documents(scores), QUERY)]
    li_ids = [n.node.node_id for n in li.postprocess_nodes(li_nodes(scores), query_str=QUERY)]
    li_plain = [n.node.node_id for n in li.postprocess_nodes(li_nodes(None), query_str=QUERY)]
    assert no_scores == with_scores == li_ids == li_plain
    assert len(set(no_scores)) == len(TEXTS)
    if ranker != "baseline":  # the graph moved something: the test is not of an identity
        assert no_scores != [f"d{i}" for i in range(len(TEXTS))]


def chunk_pool(chars: int) -> tuple[list[Document], list[NodeWithScore]]:
    """:func:`lone_neighbour_pool` as LangChain documents and LlamaIndex nodes (scores falling
    along the retriever's order): chunk order is the pool's only evidence."""
    pool = lone_neighbour_pool(chars=chars)
    docs = [Document(id=c.id, page_content=c.text, metadata=dict(c.metadata)) for c in pool]
    li_in = [
        NodeWithScore(
            node=TextNode(id_=c.id, text=c.text, metadata=dict(c.metadata)), score=0.9 - n / 100
        )
        for n, c in enumerate(pool)
    ]
    return docs, li_in


@pytest.mark.parametrize(
    ("chars", "rank"), [(SENTENCE, 6), (PASSAGE, 7)], ids=["sentences", "passages"]
)
def test_the_chunk_order_share_follows_the_chunk_size_in_both(chars: int, rank: int) -> None:
    """Zero config on both sides: the chunk next to the best one, supported by nothing else,
    lands 6th among sentence-sized chunks and 7th among passages, in both wrappers."""
    docs, li_in = chunk_pool(chars)
    lc = [d.id for d in GraphERReranker(top_n=None).compress_documents(docs, QUERY)]
    li = GraphERPostprocessor(top_n=None, use_relationships=False)
    li_ids = [n.node.node_id for n in li.postprocess_nodes(li_in, query_str=QUERY)]
    assert lc == li_ids
    assert lc.index("d#2") + 1 == rank


@pytest.mark.parametrize("ranker", ["gcs", "ppr"])
def test_scores_read_in_the_retrievers_direction(ranker: str) -> None:
    """``seed_transform="auto"`` reads scores; distances (rising along the retriever's order)
    are read the other way, so a store reporting distances ranks like one reporting cosines."""
    orders = []
    for kind in ("cosine", "distance", "relevance"):
        li = GraphERPostprocessor(
            proximities=[ForeignKeys()],
            ranker=ranker,
            top_n=None,
            use_relationships=False,
            seed_transform="minmax",
        )
        nodes_out = li.postprocess_nodes(li_nodes(SCORE_KINDS[kind]), query_str=QUERY)
        orders.append([n.node.node_id for n in nodes_out])
    assert orders[0] == orders[1] == orders[2]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("scored", [True, False], ids=["scores", "no-scores"])
@pytest.mark.parametrize("ranker", ["gcs", "ppr"])
async def test_vector_path_agrees_and_embeds_the_same_texts(
    ranker: str, scored: bool, mode: str
) -> None:
    lc, li, lc_embed, li_embed = wrappers(ranker, WITH_VECTORS, scored, 16)
    assert lc_embed is not None and li_embed is not None
    lc_out, li_out = await both(lc, li, scored, mode)
    assert_same(lc_out, li_out, scored)
    assert lc_out[0].metadata["grapher_edges"]["semantic"] > 0
    # the core's plan chose the texts: the same query and the same batch on both sides
    assert lc_embed.calls == li_embed.calls == [("query", (QUERY,)), ("docs", tuple(TEXTS))]
    # a second call finds the documents' vectors in each core's cache: only the query again
    lc_again, li_again = await both(lc, li, scored, mode)
    assert [d.id for d in lc_again] == [n.node.node_id for n in li_again] == [d.id for d in lc_out]
    assert lc_embed.calls[2:] == li_embed.calls[2:] == [("query", (QUERY,))]


class Recorder:
    """A ranker that reads vectors and keeps what it was handed (the retriever's order back)."""

    name = "recorder"
    needs_embeddings = True

    def __init__(self) -> None:
        self.contexts: list[RankContext] = []

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        self.contexts.append(context)
        return np.asarray(seeds, dtype=np.float64)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_both_hand_the_core_the_same_float32_vectors(mode: str) -> None:
    lc_ranker, li_ranker = Recorder(), Recorder()
    lc, _, _, _ = wrappers(lc_ranker, PLAIN["foreign keys"], True, 16)
    _, li, _, _ = wrappers(li_ranker, PLAIN["foreign keys"], True, 16)
    await both(lc, li, True, mode)
    (lc_context,), (li_context,) = lc_ranker.contexts, li_ranker.contexts
    for context in (lc_context, li_context):
        assert context.query_embedding is not None
        assert context.query_embedding.dtype == np.float32
        assert all(c.embedding is not None for c in context.candidates)
        assert {c.embedding.dtype for c in context.candidates} == {np.dtype(np.float32)}  # type: ignore[union-attr]
    np.testing.assert_array_equal(lc_context.query_embedding, li_context.query_embedding)  # type: ignore[arg-type]
    for a, b in zip(lc_context.candidates, li_context.candidates, strict=True):
        np.testing.assert_array_equal(a.embedding, b.embedding)  # type: ignore[arg-type]


@pytest.mark.integration  # the packaged GAT checkpoint (torch)
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("scored", [True, False], ids=["scores", "no-scores"])
async def test_gat_agrees(scored: bool, mode: str) -> None:
    pytest.importorskip("torch")
    lc, li, lc_embed, li_embed = wrappers("gat", PLAIN["foreign keys"], scored, 384)
    lc_out, li_out = await both(lc, li, scored, mode)
    assert_same(lc_out, li_out, scored)
    assert lc_embed is not None and li_embed is not None
    assert lc_embed.calls == li_embed.calls == [("query", (QUERY,)), ("docs", tuple(TEXTS))]


@pytest.mark.parametrize(
    ("field", "value"),
    [("expand_seeds", 0), ("expand_hops", 0), ("expand_budget", -1), ("prune_threshold", 2.0)],
)
def test_both_refuse_the_same_expansion_values(field: str, value: Any) -> None:
    """One validation (the core's ``Expansion``), with or without a neighbour source; pydantic
    wraps the core's ``ConfigError`` in its ``ValidationError`` (both ``ValueError``)."""
    message = f"expansion {field.removeprefix('expand_')} .*got {value}"
    with pytest.raises(ValueError, match=message):
        GraphERReranker(**{field: value})
    with pytest.raises(ValueError, match=message):
        GraphERPostprocessor(**{field: value})
