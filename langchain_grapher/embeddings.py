"""A LangChain ``Embeddings`` over the core's embedders (default: the packaged offline MiniLM).

Lets a vector store such as Chroma use the same model as the benchmarks without any download
(Chroma's own default embedding function downloads a model on first use).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor

from grapher_core.embeddings import Embedder, default_embedder

__all__ = ["GraphEREmbeddings"]


class GraphEREmbeddings(Embeddings):
    """``Embeddings`` backed by a :class:`grapher_core.embeddings.Embedder`.

    >>> embeddings = GraphEREmbeddings()          # the packaged all-MiniLM-L6-v2, 384-d
    >>> store = Chroma(embedding_function=embeddings)
    """

    def __init__(self, embedder: Embedder | None = None, *, query_cache_size: int = 64) -> None:
        self.embedder: Embedder = embedder if embedder is not None else default_embedder()
        self.query_cache_size = query_cache_size
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = np.asarray(self.embedder.embed_documents(list(texts)), dtype=np.float64)
        return vectors.tolist()

    def embed_query(self, text: str) -> list[float]:
        """The query's vector; the last ``query_cache_size`` queries are remembered, so a
        store's search and GraphER's reranking embed a query once, not twice."""
        with self._lock:
            known = self._queries.get(text)
            if known is not None:
                self._queries.move_to_end(text)
                return list(known)
        vector = np.asarray(self.embedder.embed_query(text), dtype=np.float64).tolist()
        if self.query_cache_size > 0:
            with self._lock:
                self._queries[text] = vector
                while len(self._queries) > self.query_cache_size:
                    self._queries.popitem(last=False)
        return vector

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (a chain sent to a worker process): the lock and the remembered queries
        stay behind."""
        return {"embedder": self.embedder, "query_cache_size": self.query_cache_size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["embedder"], query_cache_size=state["query_cache_size"])  # type: ignore[misc]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        # The model is CPU-bound: one batch, run in a thread so the event loop stays free.
        return await run_in_executor(None, self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await run_in_executor(None, self.embed_query, text)

    def __repr__(self) -> str:
        name: Any = getattr(self.embedder, "name", type(self.embedder).__name__)
        return f"GraphEREmbeddings({name!r})"
