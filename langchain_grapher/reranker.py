"""GraphERReranker: a LangChain document compressor that reranks with :mod:`grapher_core`.

>>> reranker = GraphERReranker(proximities=[ForeignKeys()], top_n=5)
>>> retriever = ContextualCompressionRetriever(
...     base_compressor=reranker,
...     base_retriever=store.as_retriever(search_kwargs={"k": 200}))

The wrapper translates types only: graph, seeds, ranking and validation are the core's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.embeddings import Embeddings
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from grapher_core import GraphReranker
from grapher_core.conventions import EXPANDED_KEY, assign_validated
from grapher_core.diagnostics import check_score_key
from grapher_core.errors import InputError, StateError
from grapher_core.expand import DEFAULT_BUDGET, DEFAULT_HOPS, DEFAULT_SEEDS, ExpandingReranker
from grapher_core.vectors import VectorCache, fill_vectors
from langchain_grapher.convert import candidates_from_documents, document_from_ranked
from langchain_grapher.neighbours import as_neighbour_source

__all__ = ["GraphERReranker"]


class GraphERReranker(BaseDocumentCompressor):
    """Rerank retrieved documents with a graph built from their metadata (GraphER).

    Output: new ``Document`` objects, best first, ``top_n`` of them, with the same ``id`` and
    text, a *copy* of the metadata plus ``metadata["relevance_score"]`` (the graph score) and,
    when ``explain`` is set, ``metadata["grapher_explanation"]`` (the neighbours that lifted the
    document). The input documents are never modified.

    Documents without ``Document.id`` are ranked under an internal content-hash id and come back
    with ``id=None``; they can still be linked through ``target_field`` proximities (e.g. a
    ``ForeignKeys(target_field="table")``), but not through links to their (absent) id.
    """

    model_config = ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, validate_assignment=True
    )

    proximities: list[Any] = Field(default_factory=list)
    """Edge builders of :mod:`grapher_core.edges`: ``ForeignKeys()``, ``SharedEntities()``..."""
    ranker: Any = "gcs"
    """``"gcs"`` (default), ``"ppr"``, ``"baseline"``, ``"gat"``, ``"mlp"`` or a core ``Ranker``."""
    alpha: float | None = None
    """The ranker's seed weight; ``None`` keeps the core's tuned default for the named ranker."""
    top_n: int | None = Field(default=3, ge=0, strict=True)
    """How many documents to return (LangChain rerankers' default, 3); ``None`` returns all."""
    score_key: str | None = None
    """Metadata key of the base retriever's score; unset or absent for all: seeds from rank."""
    seed_transform: Literal["auto", "raw", "minmax", "rank"] = "auto"
    """How base scores become seeds (see :mod:`grapher_core.ranking.seeds`)."""
    embeddings: Embeddings | None = None
    """For rankers/proximities that need vectors (GAT, ``SemanticKNN``, expansion): the query is
    embedded once per call and the documents in one batch -- only when the core needs them
    (:attr:`needs_embeddings`), in the compressor and in :class:`GraphERRetriever` alike."""
    explain: bool = False
    """Write the top contributing neighbours into ``metadata["grapher_explanation"]``."""
    strict: bool = False
    """Raise instead of warning once on silent no-ops (no field, no edges, no vectors, a pool
    smaller than ``top_n * 2``, a ``score_key`` no document has)."""
    neighbour_source: Any = None
    """Optional: a vector store (or any ``fetch(keys)`` neighbour source) to expand from --
    link neighbours of the top ``expand_seeds`` documents that the retriever missed are fetched
    (one batched call per hop), scored and ranked with the rest; they come back with
    ``metadata["grapher_expanded"] = True``. ``None`` (default): rerank the documents only."""
    expand_seeds: int = Field(default=DEFAULT_SEEDS, ge=1)
    """Expansion: how many top documents to follow links from."""
    expand_hops: int = Field(default=DEFAULT_HOPS, ge=1)
    """Expansion: how many link steps."""
    expand_budget: int = Field(default=DEFAULT_BUDGET, ge=0)
    """Expansion: the most documents added per query (the most query-similar are kept)."""
    prune_threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    """Expansion: drop fetched documents whose query cosine is below this (needs vectors)."""

    # The core and its expansion wrapper, replaced together in one assignment, so a query on
    # another thread never pairs a new core with an old expansion object.
    _engines: tuple[GraphReranker, ExpandingReranker | None] | None = PrivateAttr(default=None)
    _vectors: VectorCache = PrivateAttr(default_factory=VectorCache)

    @model_validator(mode="after")
    def _build_core(self) -> GraphERReranker:
        """Build the core reranker from the fields: at construction (so a bad field fails
        there) and again after any field assignment (``validate_assignment`` re-runs this), so
        per-query calls reuse it -- a learned ranker loads its checkpoint once, not per query."""
        core = GraphReranker(
            self.proximities or None,
            self.ranker,
            self.alpha,
            seed_transform=self.seed_transform,
            explain=3 if self.explain else 0,
            strict=self.strict,
        )
        expanding = None
        if self.neighbour_source is not None:
            expanding = ExpandingReranker(
                core,
                as_neighbour_source(self.neighbour_source),
                seeds=self.expand_seeds,
                hops=self.expand_hops,
                budget=self.expand_budget,
                prune_threshold=self.prune_threshold,
                embedder=None if self.embeddings is None else _Vectors(self.embeddings),
            )
        self._engines = (core, expanding)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        """Assign a field atomically: a copy with the new value is validated and its core built
        first, so a refused value changes nothing -- neither the field nor the core in use."""
        if name not in type(self).model_fields:
            super().__setattr__(name, value)
            return
        assign_validated(self, name, value, ("_engines",))

    @property
    def core(self) -> GraphReranker:
        """The :class:`grapher_core.GraphReranker` for the current fields."""
        return self._engine_pair()[0]

    def _engine_pair(self) -> tuple[GraphReranker, ExpandingReranker | None]:
        """The core and the expansion wrapper of the same fields, read in one step."""
        engines = self._engines
        if engines is None:  # set by the validator at construction
            raise StateError("GraphERReranker was not validated (built without __init__?)")
        return engines

    @property
    def needs_embeddings(self) -> bool:
        """Whether the core reads vectors for these fields (``SemanticKNN``, GAT/MLP, expansion):
        only then are ``embeddings`` called."""
        core, expanding = self._engine_pair()
        return (expanding if expanding is not None else core).needs_embeddings

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Rerank ``documents`` for ``query``; returns ``top_n`` new documents, best first."""
        return self.rerank_documents(documents, query)

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Async path: embeddings (the slow part) are awaited; the graph ranking takes ms."""
        return await self.arerank_documents(documents, query)

    def rerank_documents(
        self,
        documents: Sequence[Document],
        query: str | None = None,
        *,
        scores: Sequence[float | None] | None = None,
        top_n: int | Literal["default"] | None = "default",
        query_embedding: np.ndarray | None = None,
        document_embeddings: np.ndarray | None = None,
        extra_metadata: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Document]:
        """The one path of the compressor and :class:`GraphERRetriever`, sync and async.

        Embeds (with ``embeddings``, when the core needs vectors) whatever is not given;
        ``scores`` (e.g. a vector store's relevance scores) take precedence over ``score_key``;
        ``top_n="default"`` uses the field; ``extra_metadata`` is merged into each output's
        metadata copy (the retriever stores the base score there).
        """
        documents = list(documents)
        embeddings = self._embeddings_for(documents)
        if embeddings is not None and query_embedding is None and query:
            query_embedding = _array(embeddings.embed_query(query))
        if documents and self.needs_embeddings:
            texts = [d.page_content for d in documents]
            vectors, missing = self._cached(texts, document_embeddings)
            embed = self._document_embedder()
            if missing and embed is not None:
                self._store(
                    [texts[i] for i in missing],
                    embed([texts[i] for i in missing]),
                    missing,
                    vectors,
                )
            document_embeddings = vectors  # type: ignore[assignment]
        return self._rerank(
            documents, query, scores, top_n, query_embedding, document_embeddings, extra_metadata
        )

    async def arerank_documents(
        self,
        documents: Sequence[Document],
        query: str | None = None,
        *,
        scores: Sequence[float | None] | None = None,
        top_n: int | Literal["default"] | None = "default",
        query_embedding: np.ndarray | None = None,
        document_embeddings: np.ndarray | None = None,
        extra_metadata: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Document]:
        """:meth:`rerank_documents` with the embedding calls awaited."""
        documents = list(documents)
        embeddings = self._embeddings_for(documents)
        if embeddings is not None and query_embedding is None and query:
            query_embedding = _array(await embeddings.aembed_query(query))
        if documents and self.needs_embeddings:
            texts = [d.page_content for d in documents]
            vectors, missing = self._cached(texts, document_embeddings)
            if missing and self.embeddings is not None:
                batch = [texts[i] for i in missing]
                self._store(batch, await self.embeddings.aembed_documents(batch), missing, vectors)
            elif missing and (embed := self._document_embedder()) is not None:
                self._store(
                    [texts[i] for i in missing],
                    embed([texts[i] for i in missing]),
                    missing,
                    vectors,
                )
            document_embeddings = vectors  # type: ignore[assignment]
        return self._rerank(
            documents, query, scores, top_n, query_embedding, document_embeddings, extra_metadata
        )

    # -- vectors: given (a store's) > cached by content hash > embedded, missing ones only ------
    def _model_key(self) -> str:
        source: Any = (
            self.embeddings
            if self.embeddings is not None
            else getattr(self.core.ranker, "embedder", None)
        )
        name = (
            getattr(source, "model", None)
            or getattr(source, "model_name", None)
            or getattr(source, "name", None)
            or ""
        )
        return f"{type(source).__module__}.{type(source).__qualname__}:{name}"

    def _cached(self, texts: list[str], given: Any) -> tuple[list[Any], list[int]]:
        vectors = fill_vectors(texts, given, None, self._vectors, self._model_key())
        return vectors, [i for i, v in enumerate(vectors) if v is None]

    def _store(
        self, texts: list[str], embedded: Any, positions: list[int], vectors: list[Any]
    ) -> None:
        array = np.asarray(embedded, dtype=np.float32)
        if array.shape[0] != len(texts):
            raise InputError(
                f"the embedding model returned {array.shape[0]} vectors for {len(texts)} documents"
            )
        self._vectors.put_many(self._model_key(), texts, array)
        for i, vector in zip(positions, array, strict=True):
            vectors[i] = vector

    def same_model(self, store: Any) -> bool:
        """Whether ``store``'s vectors live in the space this reranker embeds queries in: its
        ``embeddings`` object is ours, or (without ``embeddings``) it wraps the learned ranker's
        own embedder (``GraphEREmbeddings()`` and ``ranker="gat"`` share the packaged MiniLM)."""
        theirs = getattr(store, "embeddings", None)
        if theirs is None:
            return False
        if self.embeddings is not None:
            return theirs is self.embeddings
        mine = getattr(self.core.ranker, "_embedder", None) or getattr(
            self.core.ranker, "embedder", None
        )
        return mine is not None and getattr(theirs, "embedder", None) is mine

    def _document_embedder(self) -> Any:
        """``embeddings.embed_documents``; without ``embeddings``, the learned ranker's own
        embedder (so its vectors are cached here instead of recomputed every query)."""
        if self.embeddings is not None:
            return self.embeddings.embed_documents
        embedder = getattr(self.core.ranker, "embedder", None)
        return None if embedder is None else embedder.embed_documents

    def _embeddings_for(self, documents: Sequence[Document]) -> Embeddings | None:
        """The embedding model to call, or None when the core needs no vectors (or has none)."""
        if self.embeddings is None or not documents or not self.needs_embeddings:
            return None
        return self.embeddings

    def _rerank(
        self,
        documents: list[Document],
        query: str | None,
        scores: Sequence[float | None] | None,
        top_n: int | Literal["default"] | None,
        query_embedding: np.ndarray | None,
        document_embeddings: np.ndarray | None,
        extra_metadata: Sequence[Mapping[str, Any]] | None,
    ) -> list[Document]:
        core, expanding = self._engine_pair()
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
        limit = self.top_n if top_n == "default" else top_n
        edges: Mapping[str, int] | None = None
        if expanding is not None:
            ranked = expanding.rerank(
                candidates, query=query, query_embedding=query_embedding, top_n=limit
            )
        else:
            result = core.run(candidates, query=query, query_embedding=query_embedding, top_n=limit)
            ranked, edges = result.ranked, result.edges
        out = []
        for item in ranked:
            if item.expanded:  # a new Document from the store's data
                fetched = item.candidate
                original = Document(
                    id=fetched.id, page_content=fetched.text, metadata=dict(fetched.metadata)
                )
                out.append(
                    document_from_ranked(
                        item, original, explain=self.explain, extra={EXPANDED_KEY: True}
                    )
                )
                continue
            position = item.original_rank - 1
            out.append(
                document_from_ranked(
                    item,
                    documents[position],
                    explain=self.explain,
                    extra=None if extra_metadata is None else extra_metadata[position],
                    edges=edges,
                )
            )
        return out


def _array(vectors: Any) -> np.ndarray:
    return np.asarray(vectors, dtype=np.float64)


class _Vectors:
    """LangChain ``Embeddings`` seen as the core's batch embedder (lists -> ndarray)."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.embeddings.embed_documents(texts), dtype=np.float64)
