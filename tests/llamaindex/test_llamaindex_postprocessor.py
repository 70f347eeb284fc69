"""GraphERPostprocessor on hand-built nodes: ordering, validation, events, async, no mutation."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import numpy as np
import pytest
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from grapher_core import CandidateGraph, GCSRanker, RankContext, SharedEntities
from llama_index_grapher import (
    ADJACENT_FIELD,
    EXPLANATION_KEY,
    GraphERPostprocessor,
    candidate_from_node,
)


def chain(ids: list[str], doc: str = "doc") -> list[TextNode]:
    """Nodes linked PREVIOUS/NEXT in the given order, as a node parser would link them."""
    nodes = [TextNode(id_=i, text=f"text of {i}") for i in ids]
    for before, after in itertools.pairwise(nodes):
        before.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=after.node_id)
        after.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(node_id=before.node_id)
    for node in nodes:
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc)
    return nodes


def scored(nodes: list[TextNode], scores: list[float | None]) -> list[NodeWithScore]:
    return [NodeWithScore(node=n, score=s) for n, s in zip(nodes, scores, strict=True)]


@pytest.fixture
def retrieved() -> list[NodeWithScore]:
    """a-b-c are consecutive chunks; x and y stand alone. b is lifted by its two neighbours."""
    a, b, c = chain(["a", "b", "c"])
    x, y = TextNode(id_="x", text="x"), TextNode(id_="y", text="y")
    return scored([a, x, c, y, b], [0.90, 0.80, 0.70, 0.60, 0.50])


def ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_relationships_give_contextual_edges_with_no_configuration(retrieved):
    out = GraphERPostprocessor().postprocess_nodes(retrieved, query_str="q")
    assert out[0].node.metadata["grapher_edges"]["contextual"] == 4  # a-b, b-c, both ways
    # Chunk order as the pool's only evidence passes 0.8 of its share (GCSRanker.alone_weights):
    # a chunk it alone supports stays out of the top 5, so this 5-node order stays.
    assert ids(out) == ids(retrieved)
    assert {n.node.node_id: n.score for n in out}["x"] == pytest.approx(0.5)  # rank seed: 1/2
    full = GraphERPostprocessor(ranker=GCSRanker(alone_weights={}))
    out = full.postprocess_nodes(retrieved, query_str="q")
    assert ids(out).index("b") < ids(out).index("y")  # b (1/5) passes y (1/4): two neighbours


def test_candidate_carries_adjacent_ids_and_source():
    _a, b, _c = chain(["a", "b", "c"], doc="D")
    candidate = candidate_from_node(NodeWithScore(node=b, score=1.0))
    assert candidate.metadata[ADJACENT_FIELD] == ["a", "c"]
    assert candidate.metadata["_grapher_source"] == "D"
    assert ADJACENT_FIELD not in b.metadata


def test_missing_relationships_mean_no_edges_and_the_input_order():
    nodes = scored([TextNode(id_=str(i), text=str(i)) for i in range(5)], [0.5, 0.4, 0.3, 0.2, 0.1])
    out = GraphERPostprocessor().postprocess_nodes(nodes, query_str="q")
    assert ids(out) == ["0", "1", "2", "3", "4"]
    assert [n.score for n in out] == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5])  # rank seeds


def test_relationship_to_a_node_not_retrieved_is_ignored():
    a, b = chain(["a", "b"])
    out = GraphERPostprocessor().postprocess_nodes(scored([b], [0.3]), query_str="q")
    assert ids(out) == ["b"] and out[0].score == pytest.approx(1.0)
    assert a.node_id not in ids(out)


def test_input_nodes_are_not_mutated(retrieved):
    before = copy.deepcopy(retrieved)
    out = GraphERPostprocessor(keep_retrieval_score=True, explain=True).postprocess_nodes(
        retrieved, query_str="q"
    )
    for original, kept in zip(retrieved, before, strict=True):
        assert original.score == kept.score
        assert original.node.metadata == kept.node.metadata == {}
        assert original.node.excluded_llm_metadata_keys == kept.node.excluded_llm_metadata_keys
    for result in out:
        assert all(result.node is not original.node for original in retrieved)
        result.node.metadata["touched"] = True
    assert all("touched" not in n.node.metadata for n in retrieved)


def test_keep_retrieval_score_and_explanation(retrieved):
    out = GraphERPostprocessor(keep_retrieval_score=True, explain=True).postprocess_nodes(
        retrieved, query_str="q"
    )
    by_id = {n.node.node_id: n for n in out}
    assert by_id["b"].node.metadata["retrieval_score"] == pytest.approx(0.50)
    assert {c["neighbour_id"] for c in by_id["b"].node.metadata[EXPLANATION_KEY]} == {"a", "c"}
    assert EXPLANATION_KEY in by_id["b"].node.excluded_llm_metadata_keys
    assert (
        "retrieval_score"
        not in GraphERPostprocessor().postprocess_nodes(retrieved, query_str="q")[0].node.metadata
    )


def test_top_n_and_empty_input(retrieved):
    out = GraphERPostprocessor(top_n=2).postprocess_nodes(retrieved, query_str="q")
    assert len(out) == 2
    assert GraphERPostprocessor(top_n=2).postprocess_nodes([], query_str="q") == []
    with pytest.raises(ValueError, match="top_n"):
        GraphERPostprocessor(top_n=-1)


def test_duplicate_node_ids_are_an_error_naming_them():
    a1, a2 = TextNode(id_="a", text="one"), TextNode(id_="a", text="two")
    with pytest.raises(ValueError, match=r"duplicate candidate ids: .*a"):
        GraphERPostprocessor().postprocess_nodes(scored([a1, a2], [0.2, 0.1]), query_str="q")


def test_some_nodes_without_scores_is_an_error_naming_them(retrieved):
    retrieved[1].score = None
    with pytest.raises(ValueError, match=r"no score.*x"):
        GraphERPostprocessor().postprocess_nodes(retrieved, query_str="q")


def test_no_scores_at_all_ranks_from_input_order():
    a, b, c = chain(["a", "b", "c"])
    x, y = TextNode(id_="x", text="x"), TextNode(id_="y", text="y")
    nodes = scored([a, x, y, b, c], [None] * 5)
    out = GraphERPostprocessor(ranker=GCSRanker(alone_weights={})).postprocess_nodes(
        nodes, query_str="q"
    )
    assert set(ids(out)) == {"a", "b", "c", "x", "y"}
    assert all(n.score is not None for n in out)
    assert ids(out).index("b") < ids(out).index("y")  # seed 1/4 lifted past 1/3 by a (seed 1)


def test_metadata_proximity_adds_conceptual_edges():
    nodes = [
        TextNode(id_=i, text=i, metadata={"entities": ents})
        for i, ents in [("p", ["Paris"]), ("q", []), ("r", ["paris", "France"])]
    ]
    items = scored(nodes, [0.9, 0.5, 0.45])
    plain = GraphERPostprocessor(auto_proximities=False).postprocess_nodes(items, query_str="q")
    graph = GraphERPostprocessor(proximities=[SharedEntities()]).postprocess_nodes(
        items, query_str="q"
    )
    detected = GraphERPostprocessor().postprocess_nodes(items, query_str="q")  # zero config
    assert ids(plain) == ["p", "q", "r"]
    assert ids(graph) == ids(detected) == ["p", "r", "q"]


def test_named_rankers_and_alpha(retrieved):
    for ranker in ("gcs", "ppr", "baseline"):
        out = GraphERPostprocessor(ranker=ranker).postprocess_nodes(retrieved, query_str="q")
        assert len(out) == len(retrieved)
    baseline = GraphERPostprocessor(ranker="baseline").postprocess_nodes(retrieved, query_str="q")
    assert ids(baseline) == ids(retrieved)
    with pytest.raises(ValueError, match="unknown ranker"):
        GraphERPostprocessor(ranker="nope")
    near_seed = GraphERPostprocessor(alpha=0.99).postprocess_nodes(retrieved, query_str="q")
    assert ids(near_seed) == ids(retrieved)


class _Collect(BaseEventHandler):
    events: list[BaseEvent]

    @classmethod
    def class_name(cls) -> str:
        return "Collect"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.events.append(event)


def test_emits_rerank_events_and_callback_events(retrieved):
    root = get_dispatcher()
    handler = _Collect(events=[])
    root.add_event_handler(handler)
    debug = LlamaDebugHandler()
    try:
        post = GraphERPostprocessor(top_n=3, callback_manager=CallbackManager([debug]))
        out = post.postprocess_nodes(retrieved, query_str="q")
    finally:
        root.event_handlers.remove(handler)
    starts = [e for e in handler.events if isinstance(e, ReRankStartEvent)]
    ends = [e for e in handler.events if isinstance(e, ReRankEndEvent)]
    assert len(starts) == 1 and len(ends) == 1
    assert starts[0].model_name == "grapher-gcs" and starts[0].top_n == 3
    assert ids(ends[0].nodes) == ids(out)
    assert len(debug.get_event_pairs(CBEventType.RERANKING)) == 1


async def test_async_path_matches_sync(retrieved):
    post = GraphERPostprocessor(top_n=4)
    sync = post.postprocess_nodes(retrieved, query_str="q")
    asynchronous = await post.apostprocess_nodes(retrieved, query_str="q")
    assert ids(sync) == ids(asynchronous)
    assert [n.score for n in sync] == pytest.approx([n.score for n in asynchronous])


class _VectorRanker:
    """A ranker that needs vectors: records what it was given and keeps the seeds."""

    name = "vectors"
    needs_embeddings = True

    def __init__(self) -> None:
        self.seen: list[RankContext] = []

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        self.seen.append(context)
        return np.asarray(seeds)


async def test_query_embedding_fallback_sync_and_async(retrieved):
    ranker = _VectorRanker()
    post = GraphERPostprocessor(ranker=ranker, embed_model=MockEmbedding(embed_dim=8))
    post.postprocess_nodes(retrieved, QueryBundle("q"))
    await post.apostprocess_nodes(retrieved, QueryBundle("q"))
    given = GraphERPostprocessor(ranker=ranker)
    given.postprocess_nodes(retrieved, QueryBundle("q", embedding=[1.0, 2.0]))
    shapes = [None if c.query_embedding is None else c.query_embedding.shape for c in ranker.seen]
    assert shapes == [(8,), (8,), (2,)]
    assert all(c.embedding is not None for c in ranker.seen[0].candidates)
    assert ranker.seen[2].candidates[0].embedding is None  # nothing to embed them with
    # No embed_model: the ranker gets the query text and no vector (the GAT embeds it itself).
    GraphERPostprocessor(ranker=ranker).postprocess_nodes(retrieved, QueryBundle("q"))
    assert ranker.seen[3].query_embedding is None and ranker.seen[3].query == "q"


def test_non_node_input_is_a_type_error():
    with pytest.raises(TypeError, match="NodeWithScore"):
        GraphERPostprocessor().postprocess_nodes([TextNode(text="x")], query_str="q")  # type: ignore[list-item]


class _CountingEmbedding(MockEmbedding):
    """MockEmbedding that counts texts embedded (query and batch calls alike)."""

    def _get_query_embedding(self, query: str) -> list[float]:
        self.__dict__.setdefault("counted", []).append(("query", 1))
        return super()._get_query_embedding(query)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.__dict__.setdefault("counted", []).append(("docs", len(texts)))
        return super()._get_text_embeddings(texts)


def test_embeds_only_what_the_core_reads(retrieved):
    from grapher_core import SemanticKNN

    plain = _CountingEmbedding(embed_dim=8)
    GraphERPostprocessor(embed_model=plain).postprocess_nodes(retrieved, QueryBundle("q"))
    assert plain.__dict__.get("counted", []) == []  # GCS over relationships: no vectors read
    semantic = _CountingEmbedding(embed_dim=8)
    post = GraphERPostprocessor(
        embed_model=semantic, proximities=[SemanticKNN(k=1, threshold=-1.0)]
    )
    assert post.needs_embeddings and not GraphERPostprocessor().needs_embeddings
    post.postprocess_nodes(retrieved, QueryBundle("q"))
    assert semantic.__dict__["counted"] == [("query", 1), ("docs", len(retrieved))]
