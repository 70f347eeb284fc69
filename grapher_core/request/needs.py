"""What a call can ask its door for: the only IO of a request, as values.

A call never embeds, fetches or reads a store itself; it yields one of these and waits for the
answer. The door (a wrapper, the CLI, the core's own driver) answers with its framework's tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grapher_core.edges.base import LinkKey

__all__ = ["Embed", "Embedded", "Fetch", "Need", "ReadStored"]


@dataclass(frozen=True)
class Embed:
    """Embed ``texts`` (documents, one batch, in this order) and/or ``query``.

    ``fallback`` is the core's own embedder (a learned ranker's packaged model): the one to use
    when the door has no model of its own. Answer: :class:`Embedded`."""

    texts: tuple[str, ...] = ()
    query: str | None = None
    fallback: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Embedded:
    """The answer to :class:`Embed`: one vector per text (``None``: none could be made, the
    call goes on without them) and the query's vector (``None`` likewise)."""

    vectors: Any = None
    query: Any = None


@dataclass(frozen=True)
class Fetch:
    """Objects matching any of ``keys`` from ``source`` (a neighbour source), called as
    ``source.fetch(list(keys), **options)`` (``options``: ``limit`` / ``full`` when the source
    takes them). Answer: what ``fetch`` returned (checked by the call)."""

    source: Any = field(repr=False)
    keys: tuple[LinkKey, ...]
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReadStored:
    """The vectors a store holds for these candidate ids, one per id (``None`` where it holds
    none). Answer: that list, or ``None`` when the door has no store."""

    ids: tuple[str, ...]


Need = Embed | Fetch | ReadStored
"""Anything a call can ask for."""
