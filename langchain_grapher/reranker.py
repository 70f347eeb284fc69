"""GraphERReranker: a LangChain document compressor that reranks with :mod:`grapher_core`.

>>> reranker = GraphERReranker(proximities=[ForeignKeys()], top_n=5)
>>> retriever = ContextualCompressionRetriever(
...     base_compressor=reranker,
...     base_retriever=store.as_retriever(search_kwargs={"k": 200}))

The wrapper translates types only: graph, seeds, ranking and validation are the core's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np
from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from pydantic import PrivateAttr, model_validator

from grapher_core import GraphReranker
from grapher_core.conventions import EXPANDED_KEY, assign_validated
from grapher_core.diagnostics import check_score_key
from grapher_core.errors import InputTypeError, StateError
from grapher_core.request import Call, DoorIO, arun_call, run_call
from grapher_core.request.engine import Engine, core_of
from grapher_core.request.settings import RerankSettings, config_fields, door_config, engine_for
from grapher_core.rerank import (
    Reranking,
)
from grapher_core.utils.callsite import off_loop, skip_frames_of
from langchain_grapher.convert import (
    candidates_from_documents,
    document_from_ranked,
    positions_named,
)
from langchain_grapher.fields import RerankerFields
from langchain_grapher.neighbours import as_neighbour_source
from langchain_grapher.stores import documents_with_ids, vectors_by_id

__all__ = ["GraphERReranker"]

# LangChain's runnables, callback managers and retrievers call the reranker: a warning points
# past their frames, at the user's line.
skip_frames_of("langchain_core", "langchain_classic", "langchain", "langchain_community")
skip_frames_of("langsmith", "pydantic")


@dataclass(frozen=True)
class _Request:
    """One call over the documents the core kept."""

    documents: list[Document]
    call: Call[Reranking]


class GraphERReranker(RerankerFields):
    """Rerank retrieved documents with a graph built from their metadata (GraphER).

    Output: new ``Document`` objects, best first, ``top_n`` of them, with the same ``id`` and
    text, a *copy* of the metadata plus ``metadata["relevance_score"]`` (the graph score) and,
    when ``explain`` is set, ``metadata["grapher_explanation"]`` (the neighbours that lifted the
    document). The input documents are never modified.

    Documents without ``Document.id`` are ranked under an internal content-hash id and come back
    with ``id=None``; they can still be linked through ``target_field`` proximities (e.g. a
    ``ForeignKeys(target_field="table")``), but not through links to their (absent) id.
    """

    # The engine (the core, or the core behind expansion) built from the fields' settings at
    # construction and on every assignment: one attribute, so a query on another thread never
    # sees half of a change. The core keeps the vector cache.
    _engine: Engine | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _build_engine(self) -> GraphERReranker:
        """Build the engine from the fields' :class:`RerankSettings` (validated there), so a
        bad field fails at construction and per-query calls reuse it -- a learned ranker loads
        its checkpoint once, not per query."""
        source = self.neighbour_source
        self._engine = engine_for(
            self.settings,
            None if source is None else as_neighbour_source(source),
            embedder=self.embeddings,
            ego_index=self.ego_index,
        )
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        """Assign a field atomically: a copy with the new value is validated and its engine
        built first, so a refused value changes nothing -- neither the field nor the engine."""
        if name not in type(self).model_fields:
            super().__setattr__(name, value)
            return
        assign_validated(self, name, value, ("_engine",))

    @property
    def settings(self) -> RerankSettings:
        """The request settings these fields describe (what ``to_config`` would write)."""
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        return RerankSettings.from_fields(fields, expand=self.neighbour_source is not None)

    @property
    def engine(self) -> Engine:
        """What ranks: the core, or the core behind expansion."""
        if self._engine is None:  # set by the validator at construction
            raise StateError("GraphERReranker was not validated (built without __init__?)")
        return self._engine

    @property
    def core(self) -> GraphReranker:
        """The :class:`grapher_core.GraphReranker` for the current fields."""
        return core_of(self.engine)

    @property
    def needs_embeddings(self) -> bool:
        """Whether the core reads vectors for these fields (``SemanticKNN``, GAT/MLP, expansion):
        only then are ``embeddings`` called."""
        return self.engine.needs_embeddings

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Rerank ``documents`` for ``query``; returns ``top_n`` new documents, best first."""
        return self.rerank_documents(documents, query)

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Async path: the embedding model is awaited, the CPU-bound work (graph, ranker,
        store reads, expansion fetches) runs in a worker thread: the event loop never waits."""
        return await self.arerank_documents(documents, query)

    def rerank_documents(
        self,
        documents: Sequence[Document],
        query: str | None = None,
        *,
        scores: Sequence[float | None] | None = None,
        top_n: int | Literal["default"] | None = "default",
        query_embedding: np.ndarray | None = None,
        document_embeddings: Sequence[Any] | np.ndarray | None = None,
        extra_metadata: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Document]:
        """The one path of the compressor and :class:`GraphERRetriever`, sync and async: the
        core's call, whose embedding needs ``embeddings`` answers.

        ``scores`` (e.g. a vector store's relevance scores) take precedence over
        ``score_key``; ``document_embeddings`` are vectors at hand (never embedded again);
        ``top_n="default"`` uses the field; ``extra_metadata`` is merged into each output's
        metadata copy (the retriever stores the base score there).
        """
        with positions_named(documents):
            request = self._request(
                documents, query, scores, query_embedding, document_embeddings, top_n
            )
            result = run_call(request.call, self._io().answer)
        return self._documents(result, request.documents, extra_metadata)

    async def arerank_documents(
        self,
        documents: Sequence[Document],
        query: str | None = None,
        *,
        scores: Sequence[float | None] | None = None,
        top_n: int | Literal["default"] | None = "default",
        query_embedding: np.ndarray | None = None,
        document_embeddings: Sequence[Any] | np.ndarray | None = None,
        extra_metadata: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Document]:
        """:meth:`rerank_documents` without blocking the event loop: the embedding calls are
        awaited (LangChain runs a sync-only model's in its executor) and everything else --
        conversion, the call's steps, store reads, expansion fetches -- runs in a worker
        thread (:func:`grapher_core.request.arun_call`)."""
        with positions_named(documents):
            request = await off_loop(
                self._request, documents, query, scores, query_embedding, document_embeddings, top_n
            )
            result = await arun_call(request.call, self._io().aanswer)
        return await off_loop(self._documents, result, request.documents, extra_metadata)

    def same_model(self, store: Any) -> bool:
        """Whether ``store``'s vectors live in the space this reranker embeds queries in: its
        ``embeddings`` object is ours, or (without ``embeddings``) it wraps the learned ranker's
        own embedder (``GraphEREmbeddings()`` and ``ranker="gat"`` share the packaged MiniLM)."""
        theirs = getattr(store, "embeddings", None)
        if theirs is None:
            return False
        if self.embeddings is not None:
            return theirs is self.embeddings
        mine = self.core.embedding_model
        return mine is not None and getattr(theirs, "embedder", None) is mine

    def _io(self) -> DoorIO:
        """This door's IO: the LangChain embedding model (sync and async methods) and the
        vectors its store holds by document id."""
        store = self.vector_store
        return DoorIO.of(self.embeddings, None if store is None else partial(vectors_by_id, store))

    def _request(
        self,
        documents: Sequence[Document],
        query: str | None,
        scores: Sequence[float | None] | None,
        query_embedding: np.ndarray | None,
        document_embeddings: Sequence[Any] | np.ndarray | None,
        top_n: int | Literal["default"] | None,
    ) -> _Request:
        """The documents kept (the core bounds the pool before any is converted) and the
        core's call over them."""
        engine = self.engine
        core = core_of(engine)
        if isinstance(documents, Document):  # a pydantic model iterates over its fields
            raise InputTypeError("expected a sequence of Documents, got a single Document")
        documents = core.admit(documents)
        if self.vector_store is not None:  # ids as the store holds them (Qdrant: in metadata)
            documents = documents_with_ids(self.vector_store, documents)
        kept = len(documents)
        if scores is not None and len(scores) > kept:
            scores = list(scores)[:kept]
        if document_embeddings is not None and len(document_embeddings) > kept:
            document_embeddings = document_embeddings[:kept]
        candidates = candidates_from_documents(
            documents, score_key=self.score_key, scores=scores, embeddings=document_embeddings
        )
        if (
            scores is None
            and self.score_key is not None
            and documents
            and all(c.score is None for c in candidates)
        ):
            check_score_key(core.diagnostics, self.score_key, [d.metadata for d in documents])
        call = engine.call(
            candidates,
            query=query,
            query_embedding=query_embedding,
            embedder=self.embeddings,
            top_n=self.top_n if top_n == "default" else top_n,
        )
        return _Request(documents, call)

    def _documents(
        self,
        result: Reranking,
        documents: list[Document],
        extra_metadata: Sequence[Mapping[str, Any]] | None,
    ) -> list[Document]:
        """The reranking as new Documents: copies of the inputs, fetched ones built anew."""
        out = []
        for item in result.ranked:
            if item.expanded:  # a new Document from the store's data
                fetched = item.candidate
                original = Document(
                    id=fetched.id, page_content=fetched.text, metadata=dict(fetched.metadata)
                )
                extra: Mapping[str, Any] | None = {EXPANDED_KEY: True}
            else:
                position = item.original_rank - 1
                original = documents[position]
                extra = None if extra_metadata is None else extra_metadata[position]
            out.append(
                document_from_ranked(
                    item, original, explain=self.explain, extra=extra, edges=result.edges
                )
            )
        return out

    @classmethod
    def from_config(cls, path: Any, **fields: Any) -> GraphERReranker:
        """The reranker a ``grapher eval --write-config`` file describes (the core's loader
        validates it); ``fields`` add or override fields (``embeddings``, ``score_key``...).
        A configuration seeding from scores is refused unless ``score_key`` (or ``scores``
        through :class:`GraphERRetriever`) can hand them over: what runs is what was
        evaluated. ``keep_retriever_order: true`` loads the ``"baseline"`` ranker over rank
        seeds: the documents' order, unchanged."""
        config, settings = door_config(
            path, "GraphERReranker", fields, "your vector store, or a VectorStoreSource"
        )
        if fields.get("score_key") is None:
            settings.refuse_unhonoured(
                has_scores=False,
                door="GraphERReranker without score_key",
                fix="pass score_key='<the metadata key your retriever writes its score to>' "
                "or load it with GraphERRetriever.from_config(path, base_retriever=...)",
                where=str(path),
            )
        return cls(**{**config_fields(config, settings), **fields})
