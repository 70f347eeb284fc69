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
from grapher_core.conventions import EXPANDED_KEY
from grapher_core.expand import DEFAULT_BUDGET, DEFAULT_HOPS, DEFAULT_SEEDS, ExpandingReranker
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

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True,
                              validate_assignment=True)

    proximities: list[Any] = Field(default_factory=list)
    """Edge builders of :mod:`grapher_core.proximity`: ``ForeignKeys()``, ``SharedEntities()``..."""
    ranker: Any = "gcs"
    """``"gcs"`` (default), ``"ppr"``, ``"baseline"``, ``"gat"``, ``"mlp"`` or a core ``Ranker``."""
    alpha: float | None = None
    """The ranker's seed weight; ``None`` keeps the core's tuned default for the named ranker."""
    top_n: int | None = Field(default=3, ge=0)
    """How many documents to return (LangChain rerankers' default, 3); ``None`` returns all."""
    score_key: str | None = None
    """Metadata key of the base retriever's score; unset or absent for all: seeds from rank."""
    seed_transform: Literal["auto", "raw", "minmax", "rank"] = "auto"
    """How base scores become seeds (see :mod:`grapher_core.seeds`)."""
    embeddings: Embeddings | None = None
    """For rankers/proximities that need vectors (GAT, ``SemanticKNN``, expansion): the query is
    embedded once per call and the documents in one batch -- only when the core needs them
    (:attr:`needs_embeddings`), in the compressor and in :class:`GraphERRetriever` alike."""
    explain: bool = False
    """Write the top contributing neighbours into ``metadata["grapher_explanation"]``."""
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

    _core: GraphReranker | None = PrivateAttr(default=None)
    _expanding: ExpandingReranker | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _build_core(self) -> GraphERReranker:
        """Build the core reranker from the fields: at construction (so a bad field fails
        there) and again after any field assignment (``validate_assignment`` re-runs this), so
        per-query calls reuse it -- a learned ranker loads its checkpoint once, not per query."""
        self._core = GraphReranker(self.proximities, self.ranker, self.alpha,
                                   seed_transform=self.seed_transform,
                                   explain=3 if self.explain else 0)
        self._expanding = None
        if self.neighbour_source is not None:
            self._expanding = ExpandingReranker(
                self._core, as_neighbour_source(self.neighbour_source), seeds=self.expand_seeds,
                hops=self.expand_hops, budget=self.expand_budget,
                prune_threshold=self.prune_threshold,
                embedder=None if self.embeddings is None else _Vectors(self.embeddings))
        return self

    @property
    def core(self) -> GraphReranker:
        """The :class:`grapher_core.GraphReranker` for the current fields."""
        if self._core is None:  # set by the validator at construction
            raise RuntimeError("GraphERReranker was not validated (built without __init__?)")
        return self._core

    @property
    def needs_embeddings(self) -> bool:
        """Whether the core reads vectors for these fields (``SemanticKNN``, GAT/MLP, expansion):
        only then are ``embeddings`` called."""
        engine = self._expanding if self._expanding is not None else self.core
        return engine.needs_embeddings

    def compress_documents(self, documents: Sequence[Document], query: str,
                           callbacks: Callbacks | None = None) -> Sequence[Document]:
        """Rerank ``documents`` for ``query``; returns ``top_n`` new documents, best first."""
        return self.rerank_documents(documents, query)

    async def acompress_documents(self, documents: Sequence[Document], query: str,
                                  callbacks: Callbacks | None = None) -> Sequence[Document]:
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
        if embeddings is not None:
            if query_embedding is None and query:
                query_embedding = _array(embeddings.embed_query(query))
            if document_embeddings is None:
                document_embeddings = _array(embeddings.embed_documents(
                    [d.page_content for d in documents]))
        return self._rerank(documents, query, scores, top_n, query_embedding,
                            document_embeddings, extra_metadata)

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
        if embeddings is not None:
            if query_embedding is None and query:
                query_embedding = _array(await embeddings.aembed_query(query))
            if document_embeddings is None:
                document_embeddings = _array(await embeddings.aembed_documents(
                    [d.page_content for d in documents]))
        return self._rerank(documents, query, scores, top_n, query_embedding,
                            document_embeddings, extra_metadata)

    def _embeddings_for(self, documents: Sequence[Document]) -> Embeddings | None:
        """The embedding model to call, or None when the core needs no vectors (or has none)."""
        if self.embeddings is None or not documents or not self.needs_embeddings:
            return None
        return self.embeddings

    def _rerank(self, documents: list[Document], query: str | None,
                scores: Sequence[float | None] | None,
                top_n: int | Literal["default"] | None, query_embedding: np.ndarray | None,
                document_embeddings: np.ndarray | None,
                extra_metadata: Sequence[Mapping[str, Any]] | None) -> list[Document]:
        candidates = candidates_from_documents(documents, score_key=self.score_key,
                                               scores=scores, embeddings=document_embeddings)
        limit = self.top_n if top_n == "default" else top_n
        engine = self._expanding if self._expanding is not None else self.core
        ranked = engine.rerank(candidates, query=query, query_embedding=query_embedding,
                               top_n=limit)
        out = []
        for item in ranked:
            if item.expanded:  # a new Document from the store's data
                fetched = item.candidate
                original = Document(id=fetched.id, page_content=fetched.text,
                                    metadata=dict(fetched.metadata))
                out.append(document_from_ranked(item, original, explain=self.explain,
                                                extra={EXPANDED_KEY: True}))
                continue
            position = item.original_rank - 1
            out.append(document_from_ranked(
                item, documents[position], explain=self.explain,
                extra=None if extra_metadata is None else extra_metadata[position]))
        return out


def _array(vectors: Any) -> np.ndarray:
    return np.asarray(vectors, dtype=np.float64)


class _Vectors:
    """LangChain ``Embeddings`` seen as the core's batch embedder (lists -> ndarray)."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.embeddings.embed_documents(texts), dtype=np.float64)
