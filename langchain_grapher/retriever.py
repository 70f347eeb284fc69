"""GraphERRetriever: fetch ``fetch_k`` candidates from a base retriever, return the ``k`` best.

>>> retriever = GraphERRetriever(base_retriever=store.as_retriever(),
...                              reranker=GraphERReranker(proximities=[ForeignKeys()]),
...                              k=5, fetch_k=200)
>>> retriever.invoke("Which customers placed orders?")

For a vector-store retriever (``store.as_retriever()``, search type ``"similarity"``) the
candidates are fetched with ``similarity_search_with_relevance_scores``, so the graph is seeded
with the store's scores; ``fetch_k`` sets how many. Any other retriever is invoked as it is
(it returns its own number of documents) and seeds come from the reranker's ``score_key`` or
from rank. ``k`` and ``fetch_k`` can also be given per call: ``retriever.invoke(q, k=3)``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeGuard

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStoreRetriever
from pydantic import ConfigDict, Field

from grapher_core.conventions import RETRIEVAL_SCORE_KEY
from langchain_grapher.reranker import GraphERReranker

__all__ = ["GraphERRetriever"]


class GraphERRetriever(BaseRetriever):
    """A base retriever followed by GraphER reranking, as one ``BaseRetriever``.

    Output documents carry ``metadata["relevance_score"]`` (graph score) and, when the store
    gave one, ``metadata["retrieval_score"]`` (the base relevance score); the reranker's
    ``top_n`` is ignored in favour of ``k``.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    base_retriever: BaseRetriever
    """Where candidates come from (a vector store's ``as_retriever()``, BM25, an ensemble...)."""
    reranker: GraphERReranker = Field(default_factory=GraphERReranker)
    """The GraphER compressor that reorders the candidates."""
    k: int = Field(default=4, ge=0)
    """How many documents to return (LangChain retrievers' default, 4)."""
    fetch_k: int = Field(default=200, ge=1)
    """How many candidates to fetch from a vector store and rerank (the paper uses 200)."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        k, fetch_k, search_kwargs = self._call_options(kwargs)
        base = self.base_retriever
        if _scored_store(base):
            try:
                with _quiet_relevance_range():
                    pairs = base.vectorstore.similarity_search_with_relevance_scores(
                        query, **{**base.search_kwargs, **search_kwargs, "k": fetch_k})
            except NotImplementedError:  # a store without a relevance function: no scores
                search_kwargs["k"] = fetch_k
            else:
                documents, scored = self._scored(pairs)
                return self.reranker.rerank_documents(documents, query, top_n=k, **scored)
        documents = base.invoke(query, config={"callbacks": run_manager.get_child()},
                                **search_kwargs)
        return self.reranker.rerank_documents(documents, query, top_n=k)

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        k, fetch_k, search_kwargs = self._call_options(kwargs)
        base = self.base_retriever
        if _scored_store(base):
            try:
                with _quiet_relevance_range():
                    pairs = await base.vectorstore.asimilarity_search_with_relevance_scores(
                        query, **{**base.search_kwargs, **search_kwargs, "k": fetch_k})
            except NotImplementedError:  # a store without a relevance function: no scores
                search_kwargs["k"] = fetch_k
            else:
                documents, scored = self._scored(pairs)
                return await self.reranker.arerank_documents(documents, query, top_n=k,
                                                             **scored)
        documents = await base.ainvoke(query, config={"callbacks": run_manager.get_child()},
                                       **search_kwargs)
        return await self.reranker.arerank_documents(documents, query, top_n=k)

    def _call_options(self, kwargs: Mapping[str, Any]) -> tuple[int, int, dict[str, Any]]:
        options = dict(kwargs)
        k = options.pop("k", self.k)
        fetch_k = options.pop("fetch_k", self.fetch_k)
        for name, value, low in (("k", k, 0), ("fetch_k", fetch_k, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        return k, max(fetch_k, k), options

    @staticmethod
    def _scored(pairs: list[tuple[Document, float]]) -> tuple[list[Document], dict[str, Any]]:
        """Documents, and the store's scores as seeds and as kept metadata."""
        documents = [document for document, _score in pairs]
        scores = [float(score) for _document, score in pairs]
        return documents, {"scores": scores,
                           "extra_metadata": [{RETRIEVAL_SCORE_KEY: s} for s in scores]}


@contextmanager
def _quiet_relevance_range() -> Iterator[None]:
    """Silence LangChain's "scores must be between 0 and 1" warning: cosine relevance can fall
    below 0, and the core's seed policy (min-max scaling of negative scores) handles it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Relevance scores must be between 0 and 1")
        yield


def _scored_store(retriever: BaseRetriever) -> TypeGuard[VectorStoreRetriever]:
    """True for a plain-similarity vector-store retriever, whose store can return scores."""
    return isinstance(retriever, VectorStoreRetriever) and retriever.search_type == "similarity"
