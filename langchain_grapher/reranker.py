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
from grapher_core.expand import DEFAULT_BUDGET, DEFAULT_HOPS, DEFAULT_SEEDS, ExpandingReranker
from langchain_grapher.convert import candidates_from_documents, document_from_ranked
from langchain_grapher.neighbours import EXPANDED_KEY, as_neighbour_source

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
    """For rankers/proximities that need vectors (GAT, ``SemanticKNN``): the query is embedded
    once per call and the documents in one batch."""
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
        assert self._core is not None
        return self._core

    def compress_documents(self, documents: Sequence[Document], query: str,
                           callbacks: Callbacks | None = None) -> Sequence[Document]:
        """Rerank ``documents`` for ``query``; returns ``top_n`` new documents, best first."""
        query_vector, document_vectors = None, None
        if self.embeddings is not None and documents:
            query_vector = np.asarray(self.embeddings.embed_query(query), dtype=np.float64)
            document_vectors = np.asarray(
                self.embeddings.embed_documents([d.page_content for d in documents]),
                dtype=np.float64)
        return self.rerank_documents(documents, query, query_embedding=query_vector,
                                     document_embeddings=document_vectors)

    async def acompress_documents(self, documents: Sequence[Document], query: str,
                                  callbacks: Callbacks | None = None) -> Sequence[Document]:
        """Async path: embeddings (the slow part) are awaited; the graph ranking takes ms."""
        query_vector, document_vectors = None, None
        if self.embeddings is not None and documents:
            query_vector = np.asarray(await self.embeddings.aembed_query(query), dtype=np.float64)
            document_vectors = np.asarray(
                await self.embeddings.aembed_documents([d.page_content for d in documents]),
                dtype=np.float64)
        return self.rerank_documents(documents, query, query_embedding=query_vector,
                                     document_embeddings=document_vectors)

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
        """The translation step shared by the compressor and :class:`GraphERRetriever`.

        ``scores`` (e.g. a vector store's relevance scores) take precedence over ``score_key``;
        ``top_n="default"`` uses the field; ``extra_metadata`` is merged into each output's
        metadata copy (the retriever stores the base score there).
        """
        documents = list(documents)
        if (self._expanding is not None and self.embeddings is not None and query
                and documents and query_embedding is None):
            # Expansion scores fetched documents by query similarity: embed once here.
            query_embedding = np.asarray(self.embeddings.embed_query(query), dtype=np.float64)
            if document_embeddings is None:
                document_embeddings = np.asarray(self.embeddings.embed_documents(
                    [d.page_content for d in documents]), dtype=np.float64)
        candidates = candidates_from_documents(documents, score_key=self.score_key,
                                               scores=scores, embeddings=document_embeddings)
        limit = self.top_n if top_n == "default" else top_n
        if self._expanding is None:
            ranked = self.core.rerank(candidates, query=query, query_embedding=query_embedding,
                                       top_n=limit)
        else:
            ranked = self._expanding.rerank(candidates, query=query,
                                            query_embedding=query_embedding, top_n=limit)
        out = []
        for item in ranked:
            position = item.original_rank - 1
            if position < len(documents):
                out.append(document_from_ranked(
                    item, documents[position], explain=self.explain,
                    extra=None if extra_metadata is None else extra_metadata[position]))
                continue
            fetched = item.candidate  # fetched by expansion: a new Document from the store's data
            original = Document(id=fetched.id, page_content=fetched.text,
                                metadata=dict(fetched.metadata))
            out.append(document_from_ranked(item, original, explain=self.explain,
                                            extra={EXPANDED_KEY: True}))
        return out


class _Vectors:
    """LangChain ``Embeddings`` seen as the core's batch embedder (lists -> ndarray)."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.embeddings.embed_documents(texts), dtype=np.float64)
