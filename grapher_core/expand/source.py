"""Neighbour sources: where expansion fetches objects that are not among the candidates.

A source answers one question in one round trip: "give me every object matching any of these
link keys". A :data:`~grapher_core.edges.base.LinkKey` is ``((field, value), ...)`` -- all pairs
must match, ``field`` ``None`` meaning the object id -- so the same protocol serves foreign
keys (ids), title mentions (a ``title`` field) and chunk neighbours (``doc_id`` + ``chunk_index``).

Expansion calls :meth:`NeighbourSource.fetch` once per hop, never once per edge; the LangChain and
LlamaIndex packages implement it over their stores (``get_by_ids`` / metadata filters).

Two keywords are optional, used when ``fetch`` takes them, so a query's cost stays bounded:
``limit`` (return at most that many objects; expansion passes what is left of its
``max_fetched``) and ``full`` (``False``: the caller scores before it reads, so the text may be
left out -- ``""`` -- for objects returned *with* a vector; the kept ones are read again by id
with ``full=True``, so a source that takes ``full`` must answer id keys).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import product
from typing import Any, Protocol, runtime_checkable

import numpy as np

from grapher_core.candidates import Candidate, CorpusObject
from grapher_core.edges.base import LinkKey, link_value
from grapher_core.errors import ConfigError, InputError, InputTypeError
from grapher_core.metadata import read_list
from grapher_core.vectors import check_vector

__all__ = [
    "InMemorySource",
    "NeighbourSource",
    "check_fetched",
    "check_keys",
    "check_limit",
    "field_values",
]


@runtime_checkable
class NeighbourSource(Protocol):
    """What expansion needs from a store: a batched lookup by link keys.

    Returned candidates carry ``text``, ``metadata`` and, when the store keeps vectors, an
    ``embedding``; their ``score`` is ignored (expansion gives fetched objects their own).
    Order is free but should be stable; duplicates are removed by the caller.
    """

    def fetch(self, keys: Sequence[LinkKey]) -> list[Candidate]:
        """Every object that matches at least one of ``keys``, in a single call to the store
        (optionally also ``limit=`` and ``full=``, see the module docstring)."""
        ...


def check_keys(keys: Sequence[LinkKey]) -> list[LinkKey]:
    """Validate link keys up front so a malformed key names itself, not a deep frame."""
    if isinstance(keys, (str, bytes)):
        raise InputTypeError("fetch needs a sequence of link keys, not a string")
    out: list[LinkKey] = []
    for key in keys:
        if not isinstance(key, tuple) or not key:
            raise InputError(
                f"a link key is a non-empty tuple of (field, value) pairs, got {key!r}"
            )
        for pair in key:
            if (
                not isinstance(pair, tuple)
                or len(pair) != 2
                or not (pair[0] is None or isinstance(pair[0], str))
                or not isinstance(pair[1], str)
            ):
                raise InputError(f"bad (field, value) pair {pair!r} in link key {key!r}")
        out.append(key)
    return out


def check_limit(limit: object) -> int | None:
    """``fetch``'s ``limit``: ``None`` or an integer >= 0, named when it is not."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InputError(f"fetch limit must be an integer >= 0 or None, got {limit!r}")
    return limit


def check_fetched(source: object, returned: object) -> list[Candidate]:
    """What a source's ``fetch`` returned, as a list of candidates, or an error naming the source.

    A list of dicts or ``None`` would otherwise be dropped without a word or fail deep inside
    expansion; the message says which source, what it returned and what was expected. Each
    object's vector passes :func:`~grapher_core.vectors.check_vector` (never flattened).
    """
    name = _source_name(source)
    expected = "a list of grapher_core.Candidate (possibly empty)"
    if (
        returned is None
        or isinstance(returned, (str, bytes, Mapping))
        or not isinstance(returned, Iterable)
    ):
        raise InputTypeError(
            f"neighbour source {name}: fetch returned {_shown_value(returned)}; expected {expected}"
        )
    items = list(returned)
    for position, item in enumerate(items):
        if not isinstance(item, Candidate):
            hint = (
                " (wrap each object as Candidate(id, text, None, metadata, embedding))"
                if isinstance(item, (Mapping, CorpusObject))
                else ""
            )
            raise InputTypeError(
                f"neighbour source {name}: fetch returned a {type(returned).__name__} whose "
                f"item {position} (of {len(items)}) is {_shown_value(item)}; expected "
                f"{expected}{hint}"
            )
        if item.embedding is not None:  # the core's one vector check, as for given vectors
            vector = check_vector(
                item.embedding, f"neighbour source {name}: the embedding of {item.id!r}"
            )
            if vector is not item.embedding:
                items[position] = Candidate(item.id, item.text, item.score, item.metadata, vector)
    return items


def _source_name(source: object) -> str:
    """The source's class and a short repr (a long repr would bury the message)."""
    shown = repr(source)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    kind = type(source).__name__
    return shown if shown.startswith(kind) else f"{kind} {shown}"


def _shown_value(value: object) -> str:
    """A returned value as ``type (short repr)`` for an error message."""
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    if value is None:
        return "None"
    kind = type(value).__name__
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind} ({shown})"


def field_values(object_id: str, metadata: Mapping[str, Any], field: str | None) -> list[str]:
    """The values an object can be found under for ``field`` (``None``: its id).

    A list field gives each item; a scalar string gives itself *and* its delimited parts (the
    core's :func:`~grapher_core.metadata.read_list` splits ``"a|b"``; a title with a comma must
    still match whole). Values are in :func:`~grapher_core.edges.base.link_value` form.
    """
    if field is None:
        return [object_id]
    value = metadata.get(field)
    if value is None:
        return []
    out: dict[str, None] = {}
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        whole = link_value(value.decode() if isinstance(value, bytes) else value)
        if whole:
            out[whole] = None
    for item in read_list(value):
        out[link_value(item)] = None
    return list(out)


class InMemorySource:
    """A neighbour source over an in-memory corpus (the bench's; small apps; tests).

    ``objects`` are :class:`~grapher_core.CorpusObject` or :class:`~grapher_core.Candidate`;
    ``embeddings`` (optional, one row per object; else a Candidate's own vector) are handed out
    with fetched objects so expansion needs no embedding call. An index per field combination
    is built on first use; ``calls`` counts :meth:`fetch` calls (one per expansion hop).
    """

    def __init__(
        self,
        objects: Sequence[CorpusObject | Candidate],
        embeddings: np.ndarray | None = None,
        metadata: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        items = list(objects)
        for position, obj in enumerate(items):
            if not isinstance(obj, (CorpusObject, Candidate)):
                raise InputTypeError(
                    f"object at position {position} is a {type(obj).__name__}, "
                    "not a CorpusObject or Candidate"
                )
        ids = [o.id for o in items]
        if len(set(ids)) != len(ids):
            repeated = sorted(i for i, count in Counter(ids).items() if count > 1)
            raise ConfigError(f"duplicate object ids in the source: {repeated[:5]}")
        if embeddings is not None and len(embeddings) != len(items):
            raise ConfigError(f"got {len(embeddings)} embeddings for {len(items)} objects")
        if metadata is not None and len(metadata) != len(items):
            raise ConfigError(f"got {len(metadata)} metadata dicts for {len(items)} objects")
        self._objects = items
        self._metadata = [o.metadata for o in items] if metadata is None else list(metadata)
        self._embeddings = embeddings
        self._indexes: dict[tuple[str | None, ...], dict[tuple[str, ...], list[int]]] = {}
        self.calls = 0

    def __len__(self) -> int:
        return len(self._objects)

    def _index(self, fields: tuple[str | None, ...]) -> dict[tuple[str, ...], list[int]]:
        index = self._indexes.get(fields)
        if index is None:
            index = defaultdict(list)
            for position, (obj, meta) in enumerate(zip(self._objects, self._metadata, strict=True)):
                for combo in product(*(field_values(obj.id, meta, f) for f in fields)):
                    index[combo].append(position)
            self._indexes[fields] = index
        return index

    def fetch(self, keys: Sequence[LinkKey], *, limit: int | None = None) -> list[Candidate]:
        """Objects matching any key, in key order, each once; the first ``limit`` of them."""
        self.calls += 1
        limit = check_limit(limit)
        found: dict[int, None] = {}
        for key in check_keys(keys):
            ordered = tuple(sorted(key, key=lambda pair: (pair[0] is not None, pair[0] or "")))
            fields = tuple(f for f, _v in ordered)
            values = tuple(link_value(v) for _f, v in ordered)
            for position in self._index(fields).get(values, ()):
                if limit is not None and len(found) >= limit:
                    break
                found[position] = None
        return [self._candidate(p) for p in found]

    def _candidate(self, position: int) -> Candidate:
        obj = self._objects[position]
        if self._embeddings is not None:
            vector = self._embeddings[position]
        else:  # a Candidate brings its own vector
            vector = obj.embedding if isinstance(obj, Candidate) else None
        return Candidate(obj.id, obj.text, None, self._metadata[position], vector)


def shown_key(key: LinkKey) -> str:
    """A link key as a reader writes it: ``title='Films'``, ``doc_id='d' & chunk_index='3'``."""
    return " & ".join(f"{'id' if f is None else f}={v!r}" for f, v in key)


def canonical_key(key: LinkKey) -> LinkKey:
    return tuple(
        sorted(
            ((f, link_value(v)) for f, v in key),
            key=lambda pair: (pair[0] is not None, pair[0] or ""),
        )
    )
