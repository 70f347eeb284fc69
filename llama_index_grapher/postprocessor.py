"""GraphERPostprocessor: GraphER reranking as a LlamaIndex node postprocessor.

>>> engine = index.as_query_engine(similarity_top_k=50,
...                                node_postprocessors=[GraphERPostprocessor(top_n=5)])

The retriever's node scores are the seeds; the graph among the retrieved nodes comes from their
``PREVIOUS`` / ``NEXT`` relationships (zero configuration) plus any metadata proximities given;
the ranking itself is :class:`grapher_core.GraphReranker`. This module only translates types.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import (
    Field,
    PrivateAttr,
    field_serializer,
    field_validator,
)
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from grapher_core import Candidate, GraphReranker, RankedCandidate
from grapher_core.conventions import (
    EXPANDED_KEY,
    EXPLANATION_KEY,
    assign_validated,
    explanation_to_metadata,
)
from grapher_core.edges.serialise import proximity_from_dict, proximity_to_dict
from grapher_core.errors import InputError, InputTypeError
from grapher_core.expand import (
    DEFAULT_BUDGET,
    DEFAULT_HOPS,
    DEFAULT_SEEDS,
    ExpandingReranker,
    Expansion,
)
from grapher_core.vectors import VectorPlan
from llama_index_grapher.convert import (
    candidates_from_nodes,
    node_from_ranked,
    relationship_proximity,
)
from llama_index_grapher.stores import node_vectors

__all__ = ["EXPANDED_KEY", "EXPLANATION_KEY", "GraphERPostprocessor"]

dispatcher = get_dispatcher(__name__)

Engine = GraphReranker | ExpandingReranker
"""What ranks: the core, or the core behind expansion (same ``vector_plan`` / ``run_plan``)."""


class GraphERPostprocessor(BaseNodePostprocessor):
    """Rerank retrieved nodes with a graph built from their relationships and metadata.

    Node scores are the seeds. When *no* node has a score they come from the input order;
    when only *some* do, a ``ValueError`` names the nodes without one. Duplicate node ids are
    an error (the graph could not tell them apart). Nodes without relationships simply have no
    contextual edges. The input nodes are never modified: new ``NodeWithScore`` objects on
    copied nodes are returned.
    """

    proximities: list[Any] = Field(
        default_factory=list,
        description="Extra grapher_core proximities over node metadata (e.g. SharedEntities()).",
    )
    ranker: Any = Field(default="gcs", description='"gcs", "ppr", "gat", "mlp" or a Ranker.')
    alpha: float | None = Field(default=None, description="Ranker alpha; None = its default.")
    top_n: int | None = Field(
        default=None, strict=True, ge=0, description="Nodes to return; None = all."
    )
    use_relationships: bool = Field(
        default=True, description="Add contextual edges from PREVIOUS/NEXT node relationships."
    )
    relationship_weight: float = Field(default=1.0, description="Weight of those edges.")
    seed_transform: str = Field(default="auto", description="See grapher_core.ranking.seeds.")
    keep_retrieval_score: bool = Field(
        default=False, description="Keep the retriever's score in metadata['retrieval_score']."
    )
    explain: bool = Field(
        default=False,
        description=f"Write the neighbours that lifted a node (id, edge kinds, weight, share) "
        f"to metadata['{EXPLANATION_KEY}'].",
    )
    embed_model: BaseEmbedding | None = Field(
        default=None,
        description="Embeds the query (and nodes without embeddings) when the ranker needs "
        "vectors and the query bundle has none; without it the ranker gets the query text and "
        "uses its own embedder (the GAT/MLP rankers do) or raises.",
    )

    neighbour_source: Any = Field(
        default=None,
        description="Optional docstore / vector store (or any fetch(keys) source) to expand "
        "from: link neighbours (PREVIOUS/NEXT, foreign keys...) of the top expand_seeds nodes "
        "that were not retrieved are fetched, one batched call per hop, and ranked with the "
        f"rest (metadata['{EXPANDED_KEY}'] = True). None: rerank the retrieved nodes only.",
    )
    expand_seeds: int = Field(
        default=DEFAULT_SEEDS,
        description="Expansion: seed nodes (this and the three below are validated by the "
        "core's Expansion).",
    )
    expand_hops: int = Field(default=DEFAULT_HOPS, description="Expansion: link steps.")
    expand_budget: int = Field(
        default=DEFAULT_BUDGET, description="Expansion: most nodes added per query."
    )
    prune_threshold: float | None = Field(
        default=None, description="Expansion: minimum query cosine of a fetched node."
    )

    vector_store: Any = Field(
        default=None,
        description="The index's vector store (index.vector_store): the vectors "
        "of nodes retrieved without their embedding are read from it (SimpleVectorStore, "
        "Chroma) instead of embedded again; it must hold the embed_model's (or the learned "
        "ranker's) vectors.",
    )
    auto_proximities: bool = Field(
        default=True,
        description="With no proximities given, detect metadata ones (foreign "
        "keys, links, mentions, entities, doc_id + chunk_index) beside the relationships.",
    )
    strict: bool = Field(
        default=False,
        description="Raise instead of warning once on silent no-ops (no "
        "field, no edges, no vectors, fewer nodes than top_n * 2).",
    )

    _reranker: GraphReranker | None = PrivateAttr(default=None)  # keeps the vector cache
    _reranker_key: tuple[Any, ...] | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Build the core reranker now, so a bad ranker or proximity fails at construction."""
        super().model_post_init(context)
        if self.top_n is not None and (
            isinstance(self.top_n, bool) or not isinstance(self.top_n, int) or self.top_n < 0
        ):
            raise InputError(f"top_n must be a non-negative integer or None, got {self.top_n!r}")
        self._engine()  # expansion settings fail here too, not at the first query

    def __setattr__(self, name: str, value: Any) -> None:
        """Assign a field atomically: a copy with the new value is validated and its core built
        first, so a refused value changes nothing -- neither the field nor the core in use."""
        if name not in type(self).model_fields:
            super().__setattr__(name, value)
            return
        assign_validated(self, name, value, ("_reranker", "_reranker_key"))

    @classmethod
    def class_name(cls) -> str:
        return "GraphERPostprocessor"

    @field_serializer("proximities")
    def _serialise_proximities(self, proximities: list[Any]) -> list[Any]:
        """Each proximity with its class, so ``from_dict(to_dict())`` rebuilds it."""
        return [proximity_to_dict(p) for p in proximities]

    @field_validator("proximities", mode="before")
    @classmethod
    def _load_proximities(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [proximity_from_dict(p) if isinstance(p, dict) else p for p in value]
        return value

    # -- the core reranker, rebuilt if a field was reassigned after construction ----------------
    def _core(self) -> GraphReranker:
        proximities: list[Any] = list(self.proximities)
        if self.use_relationships:
            proximities.append(relationship_proximity(self.relationship_weight))
        ranker_key = self.ranker if isinstance(self.ranker, str) else id(self.ranker)
        key = (
            tuple(id(p) for p in proximities[: len(self.proximities)]),
            self.use_relationships,
            self.relationship_weight,
            ranker_key,
            self.alpha,
            self.seed_transform,
            self.explain,
            self.strict,
            self.auto_proximities,
        )
        if self._reranker is None or key != self._reranker_key:
            # No metadata proximities given: detect them (foreign keys -> table_id for
            # GraphERSchemaReader documents, mentions, entities...) beside the relationships.
            self._reranker = GraphReranker(
                proximities,
                self.ranker,
                self.alpha,
                seed_transform=self.seed_transform,
                explain=3 if self.explain else 0,
                strict=self.strict,
                auto_proximities=self.auto_proximities and not self.proximities,
            )
            self._reranker_key = key
        return self._reranker

    def _engine(self) -> tuple[Engine, Any]:
        """The engine that ranks and the node source it expands from (``None``: no expansion).
        The expansion settings are validated on every build, with or without a source."""
        expansion = Expansion(
            seeds=self.expand_seeds,
            hops=self.expand_hops,
            budget=self.expand_budget,
            prune_threshold=self.prune_threshold,
        )
        core = self._core()
        if self.neighbour_source is None:
            return core, None
        from llama_index_grapher.neighbours import as_node_source

        source = as_node_source(self.neighbour_source)
        return ExpandingReranker(core, source, expansion), source

    @property
    def model_name(self) -> str:
        """Name reported in rerank events, e.g. ``"grapher-gcs"``."""
        return f"grapher-{self._core().ranker.name}"

    @property
    def needs_embeddings(self) -> bool:
        """Whether the core reads vectors for these fields (``SemanticKNN``, GAT/MLP) or
        expansion is on: only then is ``embed_model`` called."""
        return self.neighbour_source is not None or self._core().needs_embeddings

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

    # -- the work: sync and async share all but the embedding calls ---------------------------
    def _plan(
        self, candidates: list[Candidate], query_bundle: QueryBundle | None
    ) -> tuple[Engine, Any, VectorPlan, BaseEmbedding | None]:
        """The engine, its node source, the core's vector plan and the model that embeds it
        (vectors: the node's own > the vector store's > cached > embedded)."""
        engine, source = self._engine()
        model = self.embed_model
        query = None if query_bundle is None else query_bundle.query_str
        plan = engine.vector_plan(
            candidates,
            query=query or None,
            query_embedding=None if query_bundle is None else query_bundle.embedding,
            embedder=model,
            stored=None if self.vector_store is None else partial(node_vectors, self.vector_store),
        )
        return engine, source, plan, model

    def _rank(
        self,
        nodes: list[NodeWithScore],
        engine: Engine,
        source: Any,
        plan: VectorPlan,
        embedded: Any,
        query_vector: Any,
    ) -> list[NodeWithScore]:
        result = engine.run_plan(plan, embedded, query_vector, top_n=self.top_n)
        out = []
        for r in result.ranked:
            if not r.expanded:
                out.append(self._to_node(r, nodes[r.original_rank - 1], result.edges))
                continue
            fetched = self._to_node(
                r, NodeWithScore(node=source.node(r.id), score=None), result.edges
            )
            fetched.node.metadata[EXPANDED_KEY] = True
            for keys in (
                fetched.node.excluded_embed_metadata_keys,
                fetched.node.excluded_llm_metadata_keys,
            ):
                if EXPANDED_KEY not in keys:
                    keys.append(EXPANDED_KEY)
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
            for keys in (
                out.node.excluded_embed_metadata_keys,
                out.node.excluded_llm_metadata_keys,
            ):
                if EXPLANATION_KEY not in keys:
                    keys.append(EXPLANATION_KEY)
        return out

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query_bundle = _bundle(query_bundle)
        candidates = candidates_from_nodes(nodes)  # type errors before any event
        self._start(nodes, query_bundle)
        with self.callback_manager.event(
            CBEventType.RERANKING, payload=self._payload(nodes, query_bundle)
        ) as event:
            engine, source, plan, model = self._plan(candidates, query_bundle)
            embedded = query_vector = None
            if model is not None:
                if plan.query_text is not None:
                    query_vector = model.get_query_embedding(plan.query_text)
                if plan.missing_texts:
                    embedded = model.get_text_embedding_batch(list(plan.missing_texts))
            reranked = self._rank(nodes, engine, source, plan, embedded, query_vector)
            event.on_end(payload={EventPayload.NODES: reranked})
        dispatcher.event(ReRankEndEvent(nodes=reranked))
        return reranked

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        """Async path: embeddings are awaited; the ranking itself is CPU-bound and short."""
        query_bundle = _bundle(query_bundle)
        candidates = candidates_from_nodes(nodes)  # type errors before any event
        self._start(nodes, query_bundle)
        with self.callback_manager.event(
            CBEventType.RERANKING, payload=self._payload(nodes, query_bundle)
        ) as event:
            engine, source, plan, model = self._plan(candidates, query_bundle)
            embedded = query_vector = None
            if model is not None:
                if plan.query_text is not None:
                    query_vector = await model.aget_query_embedding(plan.query_text)
                if plan.missing_texts:
                    embedded = await model.aget_text_embedding_batch(list(plan.missing_texts))
            reranked = self._rank(nodes, engine, source, plan, embedded, query_vector)
            event.on_end(payload={EventPayload.NODES: reranked})
        dispatcher.event(ReRankEndEvent(nodes=reranked))
        return reranked


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
