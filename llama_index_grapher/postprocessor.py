"""GraphERPostprocessor: GraphER reranking as a LlamaIndex node postprocessor.

>>> engine = index.as_query_engine(similarity_top_k=50,
...                                node_postprocessors=[GraphERPostprocessor(top_n=5)])

The retriever's order gives the seeds (as in LangChain); the graph among the retrieved nodes
comes from their ``PREVIOUS`` / ``NEXT`` relationships (zero configuration) plus any metadata
proximities given; the ranking itself is :class:`grapher_core.GraphReranker`. This module only
translates types.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import (
    PrivateAttr,
)
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.schema import NodeWithScore, QueryBundle

from grapher_core import GraphReranker, RankedCandidate
from grapher_core.conventions import (
    EXPANDED_KEY,
    EXPLANATION_KEY,
    assign_validated,
    explanation_to_metadata,
)
from grapher_core.errors import InputTypeError, StateError
from grapher_core.expand import (
    HubKeys,
)
from grapher_core.request import Call, DoorIO, arun_call, run_call
from grapher_core.request.engine import Engine, core_of
from grapher_core.request.settings import RerankSettings, config_fields, door_config, engine_for
from grapher_core.rerank import (
    Reranking,
)
from grapher_core.utils.callsite import off_loop, skip_frames_of
from llama_index_grapher.convert import (
    candidates_from_nodes,
    node_from_ranked,
    relationship_proximity,
)
from llama_index_grapher.extractors import exclude_from_text
from llama_index_grapher.fields import PostprocessorFields
from llama_index_grapher.neighbours import as_node_source
from llama_index_grapher.stores import node_vectors, relevance_nodes

__all__ = ["EXPANDED_KEY", "EXPLANATION_KEY", "GraphERPostprocessor"]

dispatcher = get_dispatcher(__name__)

# LlamaIndex's query engines, postprocessor base class and instrumentation dispatcher (through
# wrapt) call the postprocessor: a warning points past their frames, at the user's line.
skip_frames_of("llama_index", "llama_index_instrumentation", "wrapt", "pydantic")


class GraphERPostprocessor(PostprocessorFields):
    """Rerank retrieved nodes with a graph built from their relationships and metadata.

    Seeds come from the input order (the retriever's), as in the LangChain wrapper, whatever
    the node scores are (cosine, distance, relevance), except for rankers that read scores (the
    learned GAT/MLP); ``seed_transform="auto"`` reads them for every ranker. When only *some*
    nodes have a score, an ``InputError`` names those without one. Duplicate node ids are an
    error (the graph could not tell them apart). Nodes without relationships simply have no
    contextual edges. The input nodes are never modified: new ``NodeWithScore`` objects on
    copied nodes are returned.
    """

    # The engine built from the fields' settings at construction and on every assignment (one
    # attribute: never half of a change); it keeps the vector cache. Hub keys outlive rebuilds.
    _engine: Engine | None = PrivateAttr(default=None)
    _hubs: HubKeys = PrivateAttr(default_factory=HubKeys)

    def model_post_init(self, context: Any, /) -> None:
        """Build the engine now, so a bad ranker, proximity or expansion field fails here."""
        super().model_post_init(context)
        source = self.neighbour_source
        self._engine = engine_for(
            self.settings,
            None if source is None else as_node_source(source),
            hubs=self._hubs,
            ego_index=self.ego_index,
        )

    def __setattr__(self, name: str, value: Any) -> None:
        """Assign a field atomically: a copy with the new value is validated and its engine
        built first, so a refused value changes nothing -- neither the field nor the engine."""
        if name not in type(self).model_fields:
            super().__setattr__(name, value)
            return
        assign_validated(self, name, value, ("_engine",))

    @property
    def settings(self) -> RerankSettings:
        """The request settings these fields describe: the given proximities plus the
        ``PREVIOUS``/``NEXT`` relationships' edges; with none given, the metadata's detected
        beside them (one detection for every door)."""
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        proximities = list(self.proximities)
        if self.use_relationships:
            proximities.append(relationship_proximity(self.relationship_weight))
        fields["proximities"] = proximities
        fields["auto_proximities"] = self.auto_proximities and not self.proximities
        return RerankSettings.from_fields(fields, expand=self.neighbour_source is not None)

    @property
    def engine(self) -> Engine:
        """What ranks: the core, or the core behind expansion."""
        if self._engine is None:
            raise StateError("GraphERPostprocessor was not validated (built without __init__?)")
        return self._engine

    @property
    def core(self) -> GraphReranker:
        """The :class:`grapher_core.GraphReranker` for the current fields."""
        return core_of(self.engine)

    @classmethod
    def class_name(cls) -> str:
        return "GraphERPostprocessor"

    @property
    def model_name(self) -> str:
        """Name reported in rerank events, e.g. ``"grapher-gcs"``."""
        return f"grapher-{self.core.ranker.name}"

    @property
    def needs_embeddings(self) -> bool:
        """Whether the core reads vectors for these fields (``SemanticKNN``, GAT/MLP) or
        expansion is on: only then is ``embed_model`` called."""
        return self.engine.needs_embeddings

    # -- events, like the built-in rerankers ----------------------------------------------------
    def _start(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None) -> None:
        top_n = self.top_n if self.top_n is not None else len(nodes)
        dispatcher.event(
            ReRankStartEvent(
                query=query_bundle, nodes=nodes, top_n=top_n, model_name=self.model_name
            )
        )

    def _payload(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
    ) -> dict[str, Any]:
        return {
            EventPayload.NODES: nodes,
            EventPayload.MODEL_NAME: self.model_name,
            EventPayload.QUERY_STR: None if query_bundle is None else query_bundle.query_str,
            EventPayload.TOP_K: self.top_n,
        }

    # -- the work: the core's call, this door answering its IO ---------------------------------
    def _call(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
    ) -> Call[Reranking]:
        """The core's call over the nodes' candidates."""
        query = None if query_bundle is None else query_bundle.query_str
        return self.engine.call(
            candidates_from_nodes(relevance_nodes(self.vector_store, nodes)),
            query=query or None,
            query_embedding=None if query_bundle is None else query_bundle.embedding,
            embedder=self.embed_model,
            top_n=self.top_n,
        )

    def _io(self) -> DoorIO:
        """This door's IO: the embedding model (its async methods only when it has its own)
        and the vector store's vectors by node id."""
        model = self.embed_model
        stored = None if self.vector_store is None else partial(node_vectors, self.vector_store)
        if model is None:
            return DoorIO(read_stored=stored)
        native = not _sync_only(model)
        return DoorIO(
            embed_documents=model.get_text_embedding_batch,
            embed_query=model.get_query_embedding,
            aembed_documents=model.aget_text_embedding_batch if native else None,
            aembed_query=model.aget_query_embedding if native else None,
            read_stored=stored,
        )

    def _nodes(self, result: Reranking, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """The reranking as new nodes: copies of the inputs, fetched ones read from the
        source the engine expanded from."""
        out = []
        for r in result.ranked:
            if not r.expanded:
                out.append(self._to_node(r, nodes[r.original_rank - 1], result.edges))
                continue
            source = self.engine.source  # type: ignore[attr-defined]
            fetched = self._to_node(
                r, NodeWithScore(node=source.node(r.id), score=None), result.edges
            )
            fetched.node.metadata[EXPANDED_KEY] = True
            exclude_from_text(fetched.node, [EXPANDED_KEY])
            out.append(fetched)
        return out

    def _to_node(
        self,
        ranked: RankedCandidate,
        original: NodeWithScore,
        edges: Mapping[str, int] | None = None,
    ) -> NodeWithScore:
        out = node_from_ranked(
            ranked, original, keep_retrieval_score=self.keep_retrieval_score, edges=edges
        )
        if self.explain:
            out.node.metadata[EXPLANATION_KEY] = explanation_to_metadata(ranked)
            exclude_from_text(out.node, [EXPLANATION_KEY])
        return out

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query_bundle = _bundle(query_bundle)
        given, nodes = nodes, self.core.admit(nodes)
        call = self._call(nodes, query_bundle)  # type errors before any event
        self._start(given, query_bundle)
        with self.callback_manager.event(
            CBEventType.RERANKING, payload=self._payload(given, query_bundle)
        ) as event:
            reranked = self._nodes(run_call(call, self._io().answer), nodes)
            event.on_end(payload={EventPayload.NODES: reranked})
        dispatcher.event(ReRankEndEvent(nodes=reranked))
        return reranked

    @dispatcher.span
    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        """Async path that never blocks the event loop: an async embedding model is awaited
        (a sync-only one runs in a worker thread), and the CPU-bound work -- conversion, the
        call's steps, vector-store reads, expansion fetches -- runs in a worker thread.
        Events carry this call's span, like the sync path's."""
        query_bundle = _bundle(query_bundle)
        given, nodes = nodes, self.core.admit(nodes)
        call = await off_loop(self._call, nodes, query_bundle)  # type errors before events
        self._start(given, query_bundle)
        with self.callback_manager.event(
            CBEventType.RERANKING, payload=self._payload(given, query_bundle)
        ) as event:
            result = await arun_call(call, self._io().aanswer)
            reranked = await off_loop(self._nodes, result, nodes)
            event.on_end(payload={EventPayload.NODES: reranked})
        dispatcher.event(ReRankEndEvent(nodes=reranked))
        return reranked

    @classmethod
    def from_config(cls, path: Any, **fields: Any) -> GraphERPostprocessor:
        """The postprocessor a ``grapher eval --write-config`` file describes (the core's
        loader validates it); ``fields`` add or override fields (``embed_model``,
        ``vector_store``...). Nodes carry their retriever's scores, so a score-seed
        configuration runs as evaluated. ``keep_retriever_order: true`` loads the
        ``"baseline"`` ranker over rank seeds: the nodes' order, unchanged."""
        config, settings = door_config(
            path, "GraphERPostprocessor", fields, "your index's docstore or vector store"
        )
        return cls(**{**config_fields(config, settings), **fields})


def _sync_only(model: BaseEmbedding) -> bool:
    """True for a model with no async text embedding of its own: LlamaIndex's default async
    path would call its sync method on the event loop, so it is run in a worker thread."""
    kind = type(model)
    return (
        kind._aget_text_embeddings is BaseEmbedding._aget_text_embeddings
        and kind._aget_text_embedding is BaseEmbedding._aget_text_embedding
    )


def _bundle(query: Any) -> QueryBundle | None:
    """``engine.retrieve("text")`` hands postprocessors a plain string: accept it as the query;
    anything else that is not a ``QueryBundle`` is named, not an AttributeError deep inside."""
    if query is None or isinstance(query, QueryBundle):
        return query
    if isinstance(query, str):
        return QueryBundle(query)
    raise InputTypeError(
        f"query_bundle must be a QueryBundle or a string, got {type(query).__name__}"
    )
