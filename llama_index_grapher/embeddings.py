"""A LlamaIndex embedding model over the core's embedders (default: the packaged MiniLM).

The LlamaIndex twin of ``langchain_grapher.GraphEREmbeddings``: offline, no download, and the
model the shipped GAT/MLP checkpoints were trained with, so a ``VectorStoreIndex`` built with
it holds vectors the learned rankers can reuse (``GraphERPostprocessor(vector_store=...)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.embeddings.loading import RECOGNIZED_EMBEDDINGS

from grapher_core.allowed import Lazy, register, register_embedding, resolve
from grapher_core.embeddings import Embedder, default_embedder
from grapher_core.errors import ConfigError
from grapher_core.utils.callsite import off_loop

__all__ = ["GraphERLlamaEmbedding", "load_embed_model"]


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


# The embedding classes a ``to_dict`` payload may name (the allow-list of grapher_core.allowed):
# LlamaIndex's own recognised ones, ours, and the common integration packages, imported only
# when a payload names them. Others: ``grapher_core.register_embedding(MyEmbedding)``.
register_embedding(GraphERLlamaEmbedding)
for _name, _cls in RECOGNIZED_EMBEDDINGS.items():
    register("embedding", _name, _cls)
for _name, _module in (
    ("HuggingFaceEmbedding", "llama_index.embeddings.huggingface"),
    ("OpenAIEmbedding", "llama_index.embeddings.openai"),
    ("OllamaEmbedding", "llama_index.embeddings.ollama"),
):
    register("embedding", _name, Lazy(_module, _name, extra="llamaindex"))


def load_embed_model(data: Mapping[str, Any], where: str = "payload") -> BaseEmbedding:
    """An embedding model from its ``to_dict()``: the class is the one registered under its
    ``class_name`` (nothing else is imported or looked up)."""
    try:
        kind = resolve(
            "embedding", data.get("class_name"), where=where, key="embed_model.class_name"
        )
    except ConfigError as error:
        raise ConfigError(
            f"{error}; or pass the model itself: GraphERPostprocessor.from_dict(data, "
            "embed_model=...)"
        ) from None
    if not (isinstance(kind, type) and issubclass(kind, BaseEmbedding)):
        raise ConfigError(f"{where}: key 'embed_model.class_name': {kind!r} is not a BaseEmbedding")
    return kind.from_dict(dict(data))
