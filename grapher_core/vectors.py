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

Two checks at this door, which every door passes (both wrappers, the CLI, the core's own
driver): every vector that enters -- given with a candidate, read from a store, the query's --
is :func:`check_vector`'d (``(d,)`` or ``(1, d)``, numeric, finite, one dimension for all, or an
:class:`~grapher_core.errors.InputError` naming the candidate), and a model's answer is
:func:`check_batch`'d (``(n, d)``, finite) before anything caches it: a model that once
returned NaN rows is blamed for them, and once fixed it is asked again -- its bad rows never
stick in a cache. Texts are cleaned (:func:`grapher_core.utils.text.clean_text`: lone
surrogates become U+FFFD) before a model sees them.
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
from grapher_core.utils.text import clean_texts

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "ORIGINS",
    "StoredVectors",
    "VectorCache",
    "VectorPlan",
    "check_batch",
    "check_vector",
    "clip_text",
    "fill_plan",
    "model_key",
    "plan_vectors",
    "stacked_rows",
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
                array = np.array(vector, dtype=np.float32)  # a copy: the caller's stays its own
                if array.ndim != 1 or not array.size or not np.isfinite(array).all():
                    continue  # never kept: a bad answer is asked again, not served again
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
    query_vector = None if query_embedding is None else check_vector(query_embedding, QUERY)
    if not needed or not items:
        return VectorPlan(items, query=query, query_embedding=query_vector)
    source = embedder if embedder is not None else fallback
    model = "" if source is None else model_key(source)
    vectors = _given_vectors(items)
    origins = ["missing" if v is None else "given" for v in vectors]
    missing = [i for i, v in enumerate(vectors) if v is None]
    if missing and stored is not None:
        found = list(stored([items[i].id for i in missing]))
        if len(found) != len(missing):
            raise InputError(
                f"the vector store returned {len(found)} vectors for {len(missing)} ids"
            )
        _take(vectors, origins, missing, found, [_stored(items[i]) for i in missing], "stored")
        missing = [i for i in missing if vectors[i] is None]
    texts = _model_texts(items, missing, max_chars)
    if missing and cache is not None and model:
        cached = cache.get_many(model, [texts[i] for i in missing])
        _take(vectors, origins, missing, cached, [_cached(items[i]) for i in missing])
        missing = [i for i in missing if vectors[i] is None]
    _check_pool(items, vectors, origins, query_vector)
    return VectorPlan(
        items,
        needed=True,
        model=model,
        origins=tuple(origins),
        vectors=tuple(vectors),
        missing=tuple(missing),
        missing_texts=tuple(texts[i] for i in missing),
        query=query,
        query_embedding=query_vector,
        query_text=(
            clean_texts([query], ["the query"], "the embedding model")[0]
            if query_vector is None and query
            else None
        ),
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
            names = [repr(plan.candidates[i].id) for i in plan.missing]
            rows = check_batch(embedded, len(plan.missing), dim, model=plan.model, names=names)
            dim = rows.shape[1]
    elif embedded is not None and len(embedded) > 0:
        raise InputError(f"got {len(embedded)} vectors but the plan has no text to embed")
    if query_vector is not None:
        query_embedding = check_vector(
            query_vector, _model_says(plan.model, "the query vector the embedding model returned")
        )
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


QUERY = "query_embedding"
"""How the given query vector is named in errors."""

_KINDS = {"U": "text", "S": "bytes", "O": "objects", "b": "booleans", "c": "complex numbers"}

_FLOAT32 = np.dtype(np.float32)

_NOT_FINITE = "holds NaN or inf (or a number past float32's range)"

_VECTOR_FIX = "pass one 1-d vector of finite numbers per candidate, all of one dimension"


def check_vector(value: Any, what: str, *, finite: bool = True) -> np.ndarray:
    """``value`` as one float32 vector ``(d,)``, or an :class:`InputError` naming ``what``.

    Accepted: ``(d,)`` or ``(1, d)`` with ``d >= 1``, of numbers (ints or floats: not text,
    not objects, not booleans), all finite. Anything else -- a ``(2, 192)`` array that a
    flattening would pass off as one 384-d vector, ``"0.5"`` strings, ``None`` entries, NaN
    -- is refused here, before any ranker reads it. An array already ``(d,)`` float32 and
    finite is returned as it is (no copy). ``finite=False``: the caller checks finiteness
    itself, for a whole pool at once (:func:`plan_vectors`)."""
    if isinstance(value, np.ndarray) and value.dtype == np.float32 and value.ndim == 1:
        array = value
    else:
        try:
            raw = np.asarray(value)
        except (TypeError, ValueError, RuntimeError) as error:  # ragged; a tensor needing grad
            raise InputError(
                f"{what} is not a vector of numbers ({error}): {_VECTOR_FIX}"
            ) from None
        if raw.dtype.kind not in "iuf":
            raise InputError(
                f"{what} is not a vector of numbers (a {type(value).__name__} of "
                f"{_KINDS.get(raw.dtype.kind, raw.dtype.name)}): {_VECTOR_FIX}"
            )
        if raw.ndim == 2 and raw.shape[0] == 1:
            raw = raw[0]
        if raw.ndim != 1:
            raise InputError(
                f"{what} has shape {raw.shape}; a vector is (d,) or (1, d), it is never "
                f"flattened: {_VECTOR_FIX}"
            )
        with np.errstate(over="ignore"):  # a float64 past float32's range: inf, refused below
            array = raw.astype(np.float32, copy=False)
    if array.size == 0:
        raise InputError(f"{what} is empty: {_VECTOR_FIX}")
    if finite and not np.isfinite(array).all():
        raise InputError(f"{what} {_NOT_FINITE}")
    return array


def check_batch(
    embedded: Any,
    count: int,
    dim: int | None = None,
    *,
    model: str = "",
    names: Sequence[str] | None = None,
) -> np.ndarray:
    """An embedding model's answer for ``count`` texts as a finite ``(count, d)`` float32
    matrix (``d == dim`` when given), checked before anything caches it; else an
    :class:`InputError` that blames the model (``model``: its key) and names the texts whose
    rows are bad (``names``: one per text). The texts are not at fault, and nothing of a
    refused answer is kept: the next call asks the model again."""
    who = _model_says(model, "the embedding model")
    try:
        raw = np.asarray(embedded)
    except (TypeError, ValueError, RuntimeError) as error:  # ragged rows; a tensor needing grad
        raise InputError(
            f"{who} returned vectors of different lengths for {count} texts"
        ) from error
    if raw.dtype.kind not in "iuf":
        raise InputError(
            f"{who} returned {_KINDS.get(raw.dtype.kind, raw.dtype.name)}, not numbers, for "
            f"{count} texts"
        )
    if raw.ndim != 2 or raw.shape[0] != count:
        got = raw.shape[0] if raw.ndim >= 1 else 0
        raise InputError(f"{who} returned {got} vectors (shape {raw.shape}) for {count} texts")
    if dim is not None and raw.shape[1] != dim:
        raise InputError(
            f"{who} returned vectors of dimension {raw.shape[1]}, the other candidates' "
            f"vectors have {dim}: they come from different embedding models"
        )
    with np.errstate(over="ignore"):
        rows = raw.astype(np.float32, copy=False)
    finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite).tolist()
        shown = ", ".join(names[i] if names is not None else f"#{i}" for i in bad[:5])
        raise InputError(
            f"{who} returned NaN or inf for {len(bad)} of {count} texts ({shown}"
            f"{' ...' if len(bad) > 5 else ''}): the model is at fault, not the texts, and "
            "nothing of its answer was cached -- fix the model (its dtype, device or weights) "
            "and call again"
        )
    return rows


def _model_says(model: str, what: str) -> str:
    return f"{what} ({model})" if model else what


def _given(candidate: Candidate) -> str:
    return f"the embedding of candidate {candidate.id!r}"


def _stored(candidate: Candidate) -> str:
    return f"the vector the store holds for candidate {candidate.id!r}"


def _cached(candidate: Candidate) -> str:
    return f"the cached vector of candidate {candidate.id!r}"


_NAMERS: dict[str, Callable[[Candidate], str]] = {
    "given": _given,
    "stored": _stored,
    "cached": _cached,
}


def _given_vectors(items: Sequence[Candidate]) -> list[np.ndarray | None]:
    """The candidates' own vectors, checked (:func:`check_vector`, finiteness and dimension
    left to :func:`_check_pool`); a non-empty ``(d,)`` float32 array is taken as it is."""
    out: list[np.ndarray | None] = []
    for c in items:
        value = c.embedding
        if value is None:
            out.append(None)
        elif type(value) is np.ndarray and value.dtype is _FLOAT32 and value.ndim == 1:
            out.append(value if value.size else check_vector(value, _given(c)))
        else:
            out.append(check_vector(value, _given(c), finite=False))
    return out


def _model_texts(
    items: Sequence[Candidate], positions: Sequence[int], max_chars: int | None
) -> dict[int, str]:
    """What the model reads for the candidates at ``positions`` (and the cache keys them
    by): each text cut to ``max_chars`` and cleaned, the candidates holding a lone surrogate
    named once."""
    texts = clean_texts(
        [clip_text(items[i].text, max_chars) for i in positions],
        [items[i].id for i in positions],
        "the embedding model",
    )
    return dict(zip(positions, texts, strict=True))


def stacked_rows(vectors: Sequence[Any]) -> np.ndarray | None:
    """1-D numpy ``vectors`` of one length as the rows of one array, else ``None``: one
    ``concatenate`` (``np.stack`` of a pool of 200 took 93 us, this 32; a call stacks its pool
    twice when a learned ranker reads the vectors)."""
    if not vectors or set(map(type, vectors)) != {np.ndarray}:
        return None
    shapes = {v.shape for v in vectors}
    if len(shapes) != 1 or len(next(iter(shapes))) != 1:
        return None
    return np.concatenate(vectors).reshape(len(vectors), -1)


def _check_pool(
    items: Sequence[Candidate],
    vectors: Sequence[np.ndarray | None],
    origins: Sequence[str],
    query: np.ndarray | None,
) -> None:
    """Every vector at hand (given, stored, cached) of one dimension, the query's too, and
    finite -- checked on the pool in one pass; the first candidate that is not is named."""
    present = [v for v in vectors if v is not None]
    if not present:
        return
    stacked = stacked_rows(present)  # None: dimensions differ, the first that does is named
    first = next(i for i, v in enumerate(vectors) if v is not None)
    dim = present[0].shape[0]
    if stacked is None:
        i, other = next(
            (i, v) for i, v in enumerate(vectors) if v is not None and v.shape[0] != dim
        )
        raise InputError(
            f"candidate {items[i].id!r} has a {other.shape[0]}-d vector, candidate "
            f"{items[first].id!r} a {dim}-d one: they come from different embedding "
            f"models; {_VECTOR_FIX}"
        )
    if query is not None and query.shape[0] != dim:
        raise InputError(
            f"the query vector has dimension {query.shape[0]}, the candidates' vectors {dim}: "
            "they come from different embedding models"
        )
    if not np.isfinite(stacked).all():
        i = next(i for i, v in enumerate(vectors) if v is not None and not np.isfinite(v).all())
        raise InputError(f"{_NAMERS[origins[i]](items[i])} {_NOT_FINITE}")


def _take(
    vectors: list[np.ndarray | None],
    origins: list[str],
    positions: Sequence[int],
    found: Sequence[Any],
    names: Sequence[str],
    origin: str = "cached",
) -> None:
    for i, vector, what in zip(positions, found, names, strict=True):
        if vector is not None:
            vectors[i] = check_vector(vector, what, finite=False)  # checked with the pool
            origins[i] = origin
