"""A LlamaIndex embedding model over the core's embedders (default: the packaged MiniLM).

The LlamaIndex twin of ``langchain_grapher.GraphEREmbeddings``: offline, no download, and the
model the shipped GAT/MLP checkpoints were trained with, so a ``VectorStoreIndex`` built with
it holds vectors the learned rankers can reuse (``GraphERPostprocessor(vector_store=...)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr

from grapher_core.embeddings import Embedder, default_embedder
from grapher_core.utils.callsite import off_loop

__all__ = ["GraphERLlamaEmbedding"]


class GraphERLlamaEmbedding(BaseEmbedding):
    """``BaseEmbedding`` backed by a :class:`grapher_core.embeddings.Embedder`.

    >>> index = VectorStoreIndex(nodes, embed_model=GraphERLlamaEmbedding())

    Batches of ``embed_batch_size`` texts (default 64, MiniLM's sweet spot on a CPU) go to the
    model in one call, sync and async alike; the async methods run the model in a worker
    thread, so an event loop is never blocked by it.
    """

    _embedder: Any = PrivateAttr(default=None)

    def __init__(self, embedder: Embedder | None = None, **kwargs: Any) -> None:
        kwargs.setdefault(
            "model_name",
            "grapher-minilm"
            if embedder is None
            else str(getattr(embedder, "name", type(embedder).__name__)),
        )
        kwargs.setdefault("embed_batch_size", 64)
        super().__init__(**kwargs)
        self._embedder = embedder if embedder is not None else default_embedder()

    @classmethod
    def class_name(cls) -> str:
        return "GraphERLlamaEmbedding"

    @property
    def embedder(self) -> Embedder:
        """The core embedder (shared with the learned rankers when it is the default)."""
        return self._embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return np.asarray(self._embedder.embed_query(query), dtype=np.float64).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return np.asarray(self._embedder.embed_documents(list(texts)), dtype=np.float64).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await off_loop(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        """One model call per batch (LlamaIndex's default makes one per text), off the loop."""
        return await off_loop(self._get_text_embeddings, list(texts))
