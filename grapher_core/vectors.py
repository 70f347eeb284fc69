"""The vectors one call needs, planned once by the core; the wrappers only do the IO.

A learned ranker over 200 candidates costs milliseconds when the vectors are given, and
seconds when every candidate is embedded again on every query. :func:`plan_vectors` therefore
says, for one call: whether anything reads vectors at all, in which embedding space (the model
key), which candidates already have one -- given (``Candidate.embedding``), held by the store
that returned them (Chroma, ``InMemoryVectorStore``, a LlamaIndex vector store) or cached here
(keyed by the model and a hash of the text) -- and exactly which texts are still missing, plus
whether the query needs embedding. The caller embeds those (its framework's model, sync or
awaited) and :func:`fill_plan` checks the shapes, caches the new vectors and fills them in, all
as float32.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from inspect import getattr_static
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.errors import ConfigError, InputError

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "ORIGINS",
    "StoredVectors",
    "VectorCache",
    "VectorPlan",
    "clip_text",
    "fill_plan",
    "model_key",
    "plan_vectors",
]

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

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (a reranker sent to a worker process): the size bound travels; the lock
        and the vectors stay behind (they are cheap to recompute and can weigh 150 MB)."""
        return {"max_items": self.max_items}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["max_items"])  # type: ignore[misc]

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


StoredVectors = Callable[[list[str]], Sequence[Any]]
"""Vectors a store holds, by candidate id, one per id (``None`` where it holds none)."""

ORIGINS = ("given", "stored", "cached", "missing")
"""Where a planned vector comes from, in the order they are tried."""


@dataclass(frozen=True)
class VectorPlan:
    """What one call needs embedded, decided by the core from the candidates.

    ``needed``: something reads vectors (a ranker or proximity declaring ``needs_embeddings``,
    or expansion); otherwise the plan is empty and nothing is embedded. ``model``: the key of
    the embedding space the vectors live in (the cache key; ``""`` when no model is known).
    ``origins``: per candidate, where its vector comes from (:data:`ORIGINS`). The caller
    embeds exactly ``missing_texts`` (one batch, in that order) and ``query_text`` when it is
    not ``None`` (the query vector is neither given nor unneeded), then hands the vectors back.
    ``fallback``: the core's own embedder (a learned ranker's MiniLM), named for a door that
    has no model of its own; the door embeds with it, and its vectors are cached too.
    """

    candidates: tuple[Candidate, ...] = field(repr=False)
    needed: bool = False
    model: str = ""
    origins: tuple[str, ...] = ()
    vectors: tuple[np.ndarray | None, ...] = field(default=(), repr=False, compare=False)
    missing: tuple[int, ...] = ()
    missing_texts: tuple[str, ...] = field(default=(), repr=False)
    query: str | None = None
    query_embedding: np.ndarray | None = field(default=None, repr=False, compare=False)
    query_text: str | None = None
    fallback: Any = field(default=None, repr=False, compare=False)


def model_key(source: object) -> str:
    """The embedding space of ``source`` as a cache key: its class and model name.

    A name given as a property is skipped: ``SentenceTransformerEmbedder.model`` loads the
    network, and a key must cost nothing. A source without any name is keyed by identity, so
    two unnamed models of different sizes never share vectors."""
    cls = type(source)
    for attribute in ("model_name", "name", "model"):
        if isinstance(getattr_static(cls, attribute, None), property):
            continue
        value = getattr(source, attribute, None)
        if isinstance(value, str) and value:
            return f"{cls.__module__}.{cls.__qualname__}:{value}"
    return f"{cls.__module__}.{cls.__qualname__}#{id(source)}"


def plan_vectors(
    candidates: Sequence[Candidate],
    *,
    needed: bool,
    embedder: object | None = None,
    fallback: object | None = None,
    cache: VectorCache | None = None,
    query: str | None = None,
    query_embedding: Any | None = None,
    stored: StoredVectors | None = None,
    max_chars: int | None = None,
) -> VectorPlan:
    """The :class:`VectorPlan` of one call: given vectors first, then ``stored`` (asked only
    for the candidates without one), then ``cache`` (in the space of ``embedder``, else of
    ``fallback``), and the rest missing. Nothing is read when nothing is ``needed``.
    ``max_chars``: texts are embedded (and cached) by their first ``max_chars`` characters; the
    plan's candidates keep their full text."""
    items = tuple(candidates)
    query_vector = None if query_embedding is None else _vector(query_embedding)
    if not needed or not items:
        return VectorPlan(items, query=query, query_embedding=query_vector)
    source = embedder if embedder is not None else fallback
    model = "" if source is None else model_key(source)
    vectors: list[np.ndarray | None] = [
        None if c.embedding is None else _vector(c.embedding) for c in items
    ]
    origins = ["missing" if v is None else "given" for v in vectors]
    missing = [i for i, v in enumerate(vectors) if v is None]
    if missing and stored is not None:
        found = list(stored([items[i].id for i in missing]))
        if len(found) != len(missing):
            raise InputError(
                f"the vector store returned {len(found)} vectors for {len(missing)} ids"
            )
        _take(vectors, origins, missing, found, "stored")
        missing = [i for i in missing if vectors[i] is None]
    if missing and cache is not None and model:
        texts = [clip_text(items[i].text, max_chars) for i in missing]
        _take(vectors, origins, missing, cache.get_many(model, texts))
        missing = [i for i in missing if vectors[i] is None]
    return VectorPlan(
        items,
        needed=True,
        model=model,
        origins=tuple(origins),
        vectors=tuple(vectors),
        missing=tuple(missing),
        missing_texts=tuple(clip_text(items[i].text, max_chars) for i in missing),
        query=query,
        query_embedding=query_vector,
        query_text=query if query_vector is None and query else None,
        fallback=None if embedder is not None else fallback,
    )


def fill_plan(
    plan: VectorPlan,
    embedded: Any | None = None,
    query_vector: Any | None = None,
    cache: VectorCache | None = None,
) -> tuple[list[Candidate], np.ndarray | None]:
    """The plan's candidates with their vectors filled in, and the query vector.

    ``embedded``: one vector per ``plan.missing_texts``, embedded by the door (with the plan's
    ``fallback`` when it has no model of its own); without it the candidates stay without
    vectors -- nothing is embedded here.
    New vectors are checked (count, one dimension with the others and the query), cached under
    the plan's model, and stored as float32 like every other planned vector.
    """
    candidates = list(plan.candidates)
    query_embedding = plan.query_embedding
    if not plan.needed:
        return candidates, query_embedding
    vectors = list(plan.vectors)
    dim = next((v.shape[0] for v in vectors if v is not None), None)
    rows = None
    if plan.missing:
        if embedded is not None:
            rows = _rows(embedded, len(plan.missing), dim)
            dim = rows.shape[1]
    elif embedded is not None and len(embedded) > 0:
        raise InputError(f"got {len(embedded)} vectors but the plan has no text to embed")
    if query_vector is not None:
        query_embedding = _vector(query_vector)
        if dim is not None and query_embedding.shape[0] != dim:
            raise InputError(
                f"the query vector has dimension {query_embedding.shape[0]}, the candidates' "
                f"vectors {dim}: they come from different embedding models"
            )
    if rows is not None:  # checked in full: only now cached
        if cache is not None and plan.model:
            cache.put_many(plan.model, plan.missing_texts, rows)
        for i, row in zip(plan.missing, rows, strict=True):
            vectors[i] = row
    for i, vector in enumerate(vectors):
        c = candidates[i]
        if vector is not None and vector is not c.embedding:
            candidates[i] = Candidate(c.id, c.text, c.score, c.metadata, vector)
    return candidates, query_embedding


def clip_text(text: str, max_chars: int | None) -> str:
    """``text`` cut to its first ``max_chars`` characters (``None``: whole)."""
    return text if max_chars is None or len(text) <= max_chars else text[:max_chars]


def _vector(value: Any) -> np.ndarray:
    """One float32 vector; an array already in that shape and dtype is kept as it is."""
    if isinstance(value, np.ndarray) and value.dtype == np.float32 and value.ndim == 1:
        return value
    try:
        return np.asarray(value, dtype=np.float32).ravel()
    except (TypeError, ValueError) as error:
        raise InputError(f"not a vector of numbers: {error}") from error


def _rows(embedded: Any, count: int, dim: int | None) -> np.ndarray:
    """The embedding model's answer as a (count, dim) float32 matrix, or an error naming why."""
    try:
        rows = np.asarray(embedded, dtype=np.float32)
    except (TypeError, ValueError) as error:  # ragged rows
        raise InputError(
            f"the embedding model returned vectors of different lengths for {count} texts"
        ) from error
    if rows.ndim != 2 or rows.shape[0] != count:
        got = rows.shape[0] if rows.ndim >= 1 else 0
        raise InputError(
            f"the embedding model returned {got} vectors (shape {rows.shape}) for {count} texts"
        )
    if dim is not None and rows.shape[1] != dim:
        raise InputError(
            f"the embedding model returned vectors of dimension {rows.shape[1]}, the other "
            f"candidates' vectors have {dim}: they come from different embedding models"
        )
    return rows


def _take(
    vectors: list[np.ndarray | None],
    origins: list[str],
    positions: Sequence[int],
    found: Sequence[Any],
    origin: str = "cached",
) -> None:
    for i, vector in zip(positions, found, strict=True):
        if vector is not None:
            vectors[i] = _vector(vector)
            origins[i] = origin
