"""Vectors the reranker needs, without re-embedding what was embedded before.

A learned ranker over 200 candidates costs milliseconds when the vectors are given, and
seconds when every candidate is embedded again on every query. The wrappers therefore take
vectors, in this order, from: the store that returned the documents (Chroma, LangChain's
``InMemoryVectorStore``, LlamaIndex nodes with ``embedding``), this cache (keyed by the
embedding model and a hash of the text), and only then the embedding model -- for the texts
still missing, in one batch.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from grapher_core.errors import ConfigError, InputError

__all__ = ["DEFAULT_CACHE_SIZE", "VectorCache", "fill_vectors"]

DEFAULT_CACHE_SIZE = 100_000
"""Vectors kept (MiniLM: 384 floats, about 150 MB at float32 for the default)."""


def _key(model: str, text: str) -> bytes:
    return hashlib.blake2b(
        f"{model}\x00{text}".encode("utf-8", "surrogatepass"), digest_size=16
    ).digest()


class VectorCache:
    """A thread-safe LRU map (model, text) -> vector, bounded by ``max_items``."""

    def __init__(self, max_items: int = DEFAULT_CACHE_SIZE) -> None:
        if max_items < 0:
            raise ConfigError(f"max_items must be >= 0, got {max_items}")
        self.max_items = max_items
        self._items: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get_many(self, model: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        out: list[np.ndarray | None] = []
        with self._lock:
            for text in texts:
                key = _key(model, text)
                vector = self._items.get(key)
                if vector is not None:
                    self._items.move_to_end(key)
                    self.hits += 1
                else:
                    self.misses += 1
                out.append(vector)
        return out

    def put_many(
        self, model: str, texts: Sequence[str], vectors: Sequence[Any] | np.ndarray
    ) -> None:
        if self.max_items == 0:
            return
        with self._lock:
            for text, vector in zip(texts, vectors, strict=True):
                array = np.asarray(vector, dtype=np.float32)
                array.flags.writeable = False  # shared between calls
                self._items[_key(model, text)] = array
                self._items.move_to_end(_key(model, text))
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)


def fill_vectors(
    texts: Sequence[str],
    given: Sequence[Any | None] | None,
    embed: Callable[[list[str]], Any] | None,
    cache: VectorCache | None,
    model: str = "",
) -> list[np.ndarray | None]:
    """One vector per text: ``given`` ones first, then the cache, then ``embed`` (one batch,
    missing texts only, results cached). Without ``embed`` the missing ones stay ``None``."""
    out: list[np.ndarray | None] = [
        None if given is None or given[i] is None else np.asarray(given[i])
        for i in range(len(texts))
    ]
    missing = [i for i, v in enumerate(out) if v is None]
    if missing and cache is not None:
        found = cache.get_many(model, [texts[i] for i in missing])
        for i, vector in zip(missing, found, strict=True):
            out[i] = vector
        missing = [i for i in missing if out[i] is None]
    if missing and embed is not None:
        batch = [texts[i] for i in missing]
        vectors = np.asarray(embed(batch), dtype=np.float32)
        if vectors.shape[0] != len(batch):
            raise InputError(
                f"the embedding model returned {vectors.shape[0]} vectors for {len(batch)} texts"
            )
        if cache is not None:
            cache.put_many(model, batch, vectors)
        for i, vector in zip(missing, vectors, strict=True):
            out[i] = vector
    return out
