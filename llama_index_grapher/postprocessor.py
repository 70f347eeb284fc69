"""GraphERPostprocessor: GraphER reranking as a LlamaIndex node postprocessor.

>>> engine = index.as_query_engine(similarity_top_k=50,
...                                node_postprocessors=[GraphERPostprocessor(top_n=5)])

The retriever's order gives the seeds (as in LangChain); the graph among the retrieved nodes
comes from their ``PREVIOUS`` / ``NEXT`` relationships (zero configuration) plus any metadata
proximities given; the ranking itself is :class:`grapher_core.GraphReranker`. This module only
translates types.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import (
    Field,
    PrivateAttr,
    field_serializer,
    field_validator,
    model_validator,
)
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from grapher_core import GraphReranker, RankedCandidate
from grapher_core.conventions import (
    EXPANDED_KEY,
    EXPLANATION_KEY,
    assign_validated,
    explanation_to_metadata,
)
from grapher_core.edges.serialise import proximities_from_dicts, proximity_to_dict
from grapher_core.errors import ConfigError, InputTypeError, StateError
from grapher_core.expand import (
    DEFAULT_BUDGET,
    DEFAULT_HOPS,
    DEFAULT_MAX_FETCHED,
    DEFAULT_MAX_PER_KEY,
    DEFAULT_MAX_SECONDS,
    DEFAULT_SEEDS,
    HubKeys,
)
from grapher_core.ranking.config import load_config
from grapher_core.request import Call, DoorIO, arun_call, run_call
from grapher_core.request.engine import Engine, core_of
from grapher_core.request.settings import RerankSettings, config_fields, engine_for, settings_of
from grapher_core.request.validation import check_field_names
from grapher_core.rerank import (
    DEFAULT_MAX_CANDIDATES,
    DEFAULT_MAX_CHARS_PER_DOC,
    Reranking,
)
from grapher_core.utils.callsite import off_loop, skip_frames_of
from llama_index_grapher.convert import (
    candidates_from_nodes,
    node_from_ranked,
    relationship_proximity,
)
from llama_index_grapher.embeddings import load_embed_model
from llama_index_grapher.neighbours import as_node_source
from llama_index_grapher.stores import node_vectors

__all__ = ["EXPANDED_KEY", "EXPLANATION_KEY", "GraphERPostprocessor"]

dispatcher = get_dispatcher(__name__)

# LlamaIndex's query engines, postprocessor base class and instrumentation dispatcher (through
# wrapt) call the postprocessor: a warning points past their frames, at the user's line.
skip_frames_of("llama_index", "llama_index_instrumentation", "wrapt", "pydantic")


class GraphERPostprocessor(BaseNodePostprocessor):
    """Rerank retrieved nodes with a graph built from their relationships and metadata.

    Seeds come from the input order (the retriever's), as in the LangChain wrapper, whatever
    the node scores are (cosine, distance, relevance), except for rankers that read scores (the
    learned GAT/MLP); ``seed_transform="auto"`` reads them for every ranker. When only *some*
    nodes have a score, an ``InputError`` names those without one. Duplicate node ids are an
    error (the graph could not tell them apart). Nodes without relationships simply have no
    contextual edges. The input nodes are never modified: new ``NodeWithScore`` objects on
    copied nodes are returned.
    """

    proximities: list[Any] = Field(
        default_factory=list,
        description="Extra grapher_core proximities over node metadata (e.g. SharedEntities()).",
    )
    ranker: Any = Field(default="gcs", description='"gcs", "ppr", "gat", "mlp" or a Ranker.')
    alpha: float | None = Field(
        strict=True, default=None, description="Ranker alpha; None = its default."
    )
    top_n: int | None = Field(
        default=None, strict=True, ge=0, description="Nodes to return; None = all."
    )
    use_relationships: bool = Field(
        strict=True,
        default=True,
        description="Add contextual edges from PREVIOUS/NEXT node relationships.",
    )
    relationship_weight: float = Field(
        strict=True, default=1.0, description="Weight of those edges."
    )
    seed_transform: str | None = Field(
        default=None,
        description="How node scores become seeds; None: the core's one rule, as in the "
        "LangChain wrapper: the input order, or the scores for a ranker that reads them "
        "(see grapher_core.ranking.seeds.seed_policy).",
    )
    keep_retrieval_score: bool = Field(
        strict=True,
        default=False,
        description="Keep the retriever's score in metadata['retrieval_score'].",
    )
    explain: bool = Field(
        strict=True,
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
        strict=True,
        default=DEFAULT_SEEDS,
        description="Expansion: seed nodes (this, the other expand_* fields and "
        "prune_threshold are validated by the core's Expansion).",
    )
    expand_hops: int = Field(
        strict=True, default=DEFAULT_HOPS, description="Expansion: link steps."
    )
    expand_budget: int = Field(
        strict=True, default=DEFAULT_BUDGET, description="Expansion: most nodes added per query."
    )
    prune_threshold: float | None = Field(
        strict=True, default=None, description="Expansion: minimum query cosine of a fetched node."
    )
    expand_max_fetched: int | None = Field(
        strict=True,
        default=DEFAULT_MAX_FETCHED,
        description="Expansion: most nodes fetched from the store per query, over all hops "
        "(the store is asked for no more); None: no bound. Said once when reached.",
    )
    expand_max_seconds: float | None = Field(
        strict=True,
        default=DEFAULT_MAX_SECONDS,
        description="Expansion: no hop starts this many seconds after the query's first fetch "
        "(a running fetch is not interrupted); None: no bound. Said once when reached.",
    )
    expand_max_per_key: int | None = Field(
        strict=True,
        default=DEFAULT_MAX_PER_KEY,
        description="Expansion: a link key matching more nodes than this in one fetch is a hub "
        "(a category page) and skipped, now and in later queries; None: no cap.",
    )

    vector_store: Any = Field(
        default=None,
        description="The index's vector store (index.vector_store): the vectors "
        "of nodes retrieved without their embedding are read from it (SimpleVectorStore, "
        "Chroma) instead of embedded again; it must hold the embed_model's (or the learned "
        "ranker's) vectors.",
    )
    auto_proximities: bool = Field(
        strict=True,
        default=True,
        description="With no proximities given, detect metadata ones (foreign "
        "keys, links, mentions, entities, doc_id + chunk_index) beside the relationships.",
    )
    strict: bool = Field(
        strict=True,
        default=False,
        description="Raise instead of warning once on silent no-ops (no "
        "field, no edges, no vectors, fewer nodes than top_n * 2).",
    )
    score_threshold: float | None = Field(
        strict=True,
        default=None,
        allow_inf_nan=False,
        description="Drop output nodes whose score (the relevance score) is below it, after "
        "ranking; None: keep them all.",
    )
    max_candidates: int | None = Field(
        default=DEFAULT_MAX_CANDIDATES,
        ge=1,
        strict=True,
        description="Rerank at most this many nodes: the first ones in the retriever's order, "
        "the rest dropped with a warning said once; None: no bound.",
    )
    max_chars_per_doc: int | None = Field(
        default=DEFAULT_MAX_CHARS_PER_DOC,
        ge=1,
        strict=True,
        description="Texts longer than this are cut before they are embedded or read by the "
        "ranker; output nodes keep their full text. None: no cut.",
    )

    # The engine built from the fields' settings at construction and on every assignment (one
    # attribute: never half of a change); it keeps the vector cache. Hub keys outlive rebuilds.
    _engine: Engine | None = PrivateAttr(default=None)
    _hubs: HubKeys = PrivateAttr(default_factory=HubKeys)

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        """A field it does not have is refused naming the closest one (``top_k`` -> ``top_n``):
        LlamaIndex's models ignore unknown keywords, so a typo would run the defaults."""
        if isinstance(data, dict):
            check_field_names("GraphERPostprocessor", data, cls.model_fields)
        return data

    def model_post_init(self, context: Any, /) -> None:
        """Build the engine now, so a bad ranker, proximity or expansion field fails here."""
        super().model_post_init(context)
        source = self.neighbour_source
        self._engine = engine_for(
            self.settings,
            None if source is None else as_node_source(source),
            hubs=self._hubs,
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

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> GraphERPostprocessor:
        """The postprocessor a ``to_dict()`` payload describes. Every class it names resolves
        through the allow-list (:mod:`grapher_core.allowed`) before pydantic sees it: an
        unregistered name is a ``ConfigError`` naming the payload and key, nothing imported."""
        return cls._from_payload(data, "from_dict payload", kwargs)

    @classmethod
    def from_json(cls, data_str: str, **kwargs: Any) -> GraphERPostprocessor:
        try:
            data = json.loads(data_str)
        except (TypeError, ValueError, RecursionError) as error:
            raise ConfigError(f"from_json payload: not a JSON object ({error})") from None
        return cls._from_payload(data, "from_json payload", kwargs)

    @classmethod
    def _from_payload(cls, data: Any, where: str, kwargs: dict[str, Any]) -> GraphERPostprocessor:
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected an object, got {type(data).__name__}")
        data = {**data, **kwargs}
        data.pop("class_name", None)
        if "proximities" in data and data["proximities"] is not None:
            data["proximities"] = proximities_from_dicts(data["proximities"], where)
        if isinstance(data.get("embed_model"), dict):
            data["embed_model"] = load_embed_model(data["embed_model"], where)
        return cls(**data)

    @field_serializer("proximities")
    def _serialise_proximities(self, proximities: list[Any]) -> list[Any]:
        """Each proximity with its class, so ``from_dict(to_dict())`` rebuilds it."""
        return [proximity_to_dict(p) for p in proximities]

    @field_validator("proximities", mode="before")
    @classmethod
    def _load_proximities(cls, value: Any) -> Any:
        if isinstance(value, list):
            return proximities_from_dicts(value, "GraphERPostprocessor")
        return value

    @field_serializer("embed_model")
    def _serialise_embed_model(self, model: BaseEmbedding | None) -> dict[str, Any] | None:
        """The model's own ``to_dict()`` (all its fields and its ``class_name``), not the
        ``BaseEmbedding`` fields alone, so ``from_dict(to_dict())`` rebuilds the same model."""
        return None if model is None else model.to_dict()

    @field_validator("embed_model", mode="before")
    @classmethod
    def _load_embed_model(cls, value: Any) -> Any:
        return load_embed_model(value, "GraphERPostprocessor") if isinstance(value, dict) else value

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
            candidates_from_nodes(nodes),
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
            source = self.engine.expander.source  # type: ignore[attr-defined]
            fetched = self._to_node(
                r, NodeWithScore(node=source.node(r.id), score=None), result.edges
            )
            fetched.node.metadata[EXPANDED_KEY] = True
            _exclude(fetched.node, EXPANDED_KEY)
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
            _exclude(out.node, EXPLANATION_KEY)
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
        config = load_config(path)
        return cls(**{**config_fields(config, settings_of(config, str(path))), **fields})


def _exclude(node: Any, key: str) -> None:
    """Keep a GraphER field out of the text the embedding model and the LLM read."""
    for keys in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
        if key not in keys:
            keys.append(key)


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
