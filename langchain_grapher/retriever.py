"""GraphERRetriever: fetch ``fetch_k`` candidates from a base retriever, return the ``k`` best.

>>> retriever = GraphERRetriever(base_retriever=store.as_retriever(),
...                              reranker=GraphERReranker(proximities=[ForeignKeys()]),
...                              k=5, fetch_k=200)
>>> retriever.invoke("Which customers placed orders?")

For a vector-store retriever (``store.as_retriever()``, search type ``"similarity"``) the
candidates are fetched with ``similarity_search_with_score`` and the store's relevance function
(:mod:`langchain_grapher.stores`: distances converted as documented there, also for stores
without one such as ``InMemoryVectorStore``), so the graph is seeded with the store's scores
and every output has ``retrieval_score``; ``fetch_k`` sets how many. When the reranker reads
vectors (GAT, ``SemanticKNN``) the ones the store holds are reused (Chroma,
``InMemoryVectorStore``) when they come from the reranker's model (the store's ``embeddings``
object is the reranker's ``embeddings``, or both are the packaged MiniLM), the rest come from
a content-hash cache. Any other retriever is
invoked as it is (it returns its own number of documents) and seeds come from the reranker's
``score_key`` or from rank. ``k`` and ``fetch_k`` can also be given per call:
``retriever.invoke(q, k=3)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeGuard

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStoreRetriever
from pydantic import ConfigDict, Field, model_validator

from grapher_core.conventions import EDGES_KEY, RETRIEVAL_SCORE_KEY, validated_copy
from grapher_core.errors import InputError
from grapher_core.request.settings import SCORE_SEEDS, config_fields, door_config
from grapher_core.utils.callsite import off_loop
from langchain_grapher.fields import KnownFields
from langchain_grapher.reranker import GraphERReranker
from langchain_grapher.stores import (
    ascored_search,
    documents_with_ids,
    scored_search,
    stored_vectors,
)

__all__ = ["RERANK_EVENT", "GraphERRetriever"]

RERANK_EVENT = "grapher_rerank"
"""Name of the custom callback event sent after each reranking (query, ranker, candidate and
returned counts, returned ids, edges per kind)."""


class GraphERRetriever(KnownFields, BaseRetriever):
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
    k: int = Field(strict=True, default=4, ge=0)
    """How many documents to return (LangChain retrievers' default, 4)."""
    fetch_k: int = Field(strict=True, default=200, ge=1)
    """How many candidates to fetch from a vector store and rerank (the paper uses 200)."""
    seeds: Literal["rank", "score"] = "rank"
    """What seeds the graph: ``"rank"`` (default: ``1 / rank`` in the store's order) or
    ``"score"`` (the store's relevance scores). Rank seeds won on 20 of the 30 shared
    set x retriever pairs (BM25, dense and hybrid; score seeds on 6), by up to 16 points PR@5 on
    multi-table questions: see the seeds table in docs/benchmarks.md. The store's score is kept
    as ``retrieval_score`` either way. ``"score"`` with a reranker that leaves
    ``seed_transform`` to the core's rule (``None``) uses a copy of it with ``"auto"``."""

    @classmethod
    def accepted_names(cls) -> list[str]:
        """Its own fields and the reranker's (which build its reranker)."""
        return [*cls.model_fields, *GraphERReranker.model_fields]

    @model_validator(mode="before")
    @classmethod
    def _reranker_fields(cls, data: Any) -> Any:
        """``GraphERRetriever(ranker="gat", top_n=...)``: the reranker's own fields given here
        build its reranker (not both: one place says how it ranks)."""
        if not isinstance(data, dict):
            return data
        theirs, rest = cls._split_fields(data)
        if not theirs:
            return data
        if "reranker" in data:
            raise InputError(
                f"give the reranker's fields ({', '.join(sorted(theirs))}) or reranker=..., "
                "not both"
            )
        return {**rest, "reranker": GraphERReranker(**theirs)}

    @classmethod
    def _split_fields(cls, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The reranker's own fields among ``data``, and the rest (the retriever's)."""
        own = set(cls.model_fields) | {"callbacks", "tags", "metadata"}
        theirs = {
            k: v for k, v in data.items() if k not in own and k in GraphERReranker.model_fields
        }
        return theirs, {k: v for k, v in data.items() if k not in theirs}

    @classmethod
    def from_config(
        cls, path: Any, base_retriever: BaseRetriever, **fields: Any
    ) -> GraphERRetriever:
        """The retriever a ``grapher eval --write-config`` file describes over
        ``base_retriever``: its reranker, ``k`` (the config's ``top_n``), ``fetch_k``, and
        score seeds when the configuration reads the store's scores -- refused, naming the
        field, for a base retriever that hands none."""
        theirs, fields = cls._split_fields(fields)
        config, settings = door_config(
            path, "GraphERRetriever", theirs, "your vector store, or a VectorStoreSource"
        )
        options: dict[str, Any] = {}
        if config.get("top_n") is not None:
            options["k"] = config["top_n"]
        if config.get("fetch_k") is not None:
            options["fetch_k"] = config["fetch_k"]
        if settings.seed_transform in SCORE_SEEDS:
            settings.refuse_unhonoured(
                has_scores=_scored_store(base_retriever),
                door=f"GraphERRetriever over a {type(base_retriever).__name__}",
                fix="use a vector store's as_retriever() (plain similarity search), whose "
                "scores the retriever hands over",
                where=str(path),
            )
            options["seeds"] = "score"
        reranker = GraphERReranker(**{**config_fields(config, settings), **theirs})
        return cls(base_retriever=base_retriever, reranker=reranker, **{**options, **fields})

    @model_validator(mode="after")
    def _score_seeds(self) -> GraphERRetriever:
        """Score seeds need a reranker that reads scores: one left to the core's rule (rank)
        is swapped for a validated copy reading them (the given object is not modified)."""
        if self.seeds == "score" and self.reranker.seed_transform is None:
            self.__dict__["reranker"] = validated_copy(self.reranker, seed_transform="auto")
        return self

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k, fetch_k, search_kwargs = self._call_options(kwargs)
        base = self.base_retriever
        if _scored_store(base):
            pairs = scored_search(
                base.vectorstore, query, **{**base.search_kwargs, **search_kwargs, "k": fetch_k}
            )
            if pairs is not None:
                documents, scored = self._scored(base.vectorstore, pairs)
                out = self.reranker.rerank_documents(documents, query, top_n=k, **scored)
                _trace(run_manager, query, documents, out, self.reranker)
                return out
            search_kwargs["k"] = fetch_k  # a store that cannot score: seeds from rank
        documents = base.invoke(
            query, config={"callbacks": run_manager.get_child()}, **search_kwargs
        )
        out = self.reranker.rerank_documents(documents, query, top_n=k)
        _trace(run_manager, query, documents, out, self.reranker)
        return out

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k, fetch_k, search_kwargs = self._call_options(kwargs)
        base = self.base_retriever
        if _scored_store(base):
            pairs = await ascored_search(
                base.vectorstore, query, **{**base.search_kwargs, **search_kwargs, "k": fetch_k}
            )
            if pairs is not None:  # the store's vectors are read in a worker thread
                documents, scored = await off_loop(self._scored, base.vectorstore, pairs)
                out = await self.reranker.arerank_documents(documents, query, top_n=k, **scored)
                await _atrace(run_manager, query, documents, out, self.reranker)
                return out
            search_kwargs["k"] = fetch_k
        documents = await base.ainvoke(
            query, config={"callbacks": run_manager.get_child()}, **search_kwargs
        )
        out = await self.reranker.arerank_documents(documents, query, top_n=k)
        await _atrace(run_manager, query, documents, out, self.reranker)
        return out

    def _call_options(self, kwargs: Mapping[str, Any]) -> tuple[int, int, dict[str, Any]]:
        options = dict(kwargs)
        k = options.pop("k", self.k)
        fetch_k = options.pop("fetch_k", self.fetch_k)
        for name, value, low in (("k", k, 0), ("fetch_k", fetch_k, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputError(f"{name} must be an integer >= {low}, got {value!r}")
        return k, max(fetch_k, k), options

    def _scored(
        self, store: Any, pairs: list[tuple[Document, float]]
    ) -> tuple[list[Document], dict[str, Any]]:
        """Documents, the store's relevance scores (seeds, and kept as ``retrieval_score``)
        and, when the reranker reads vectors, the ones the store holds."""
        documents = documents_with_ids(store, [document for document, _score in pairs])
        scores = [float(score) for _document, score in pairs]
        scored: dict[str, Any] = {
            "scores": scores if self.seeds == "score" else None,
            "extra_metadata": [{RETRIEVAL_SCORE_KEY: s} for s in scores],
        }
        if self.reranker.needs_embeddings and self.reranker.same_model(store):
            vectors = stored_vectors(store, documents)
            if vectors is not None:
                scored["document_embeddings"] = vectors
        return documents, scored


def _event(
    query: str, documents: list[Document], out: list[Document], reranker: GraphERReranker
) -> dict[str, Any]:
    edges = out[0].metadata.get(EDGES_KEY) if out else None
    return {
        "query": query,
        "ranker": getattr(reranker.core.ranker, "name", "custom"),
        "n_candidates": len(documents),
        "n_returned": len(out),
        "ids": [d.id for d in out],
        "edges": edges,
    }


def _trace(
    run_manager: CallbackManagerForRetrieverRun,
    query: str,
    documents: list[Document],
    out: list[Document],
    reranker: GraphERReranker,
) -> None:
    """A ``grapher_rerank`` custom event on the retriever's run (tracers, LangSmith...)."""
    dispatch_custom_event(
        RERANK_EVENT,
        _event(query, documents, out, reranker),
        config={"callbacks": run_manager.get_child()},
    )


async def _atrace(
    run_manager: AsyncCallbackManagerForRetrieverRun,
    query: str,
    documents: list[Document],
    out: list[Document],
    reranker: GraphERReranker,
) -> None:
    await adispatch_custom_event(
        RERANK_EVENT,
        _event(query, documents, out, reranker),
        config={"callbacks": run_manager.get_child()},
    )


def _scored_store(retriever: BaseRetriever) -> TypeGuard[VectorStoreRetriever]:
    """True for a plain-similarity vector-store retriever, whose store can return scores."""
    return isinstance(retriever, VectorStoreRetriever) and retriever.search_type == "similarity"
