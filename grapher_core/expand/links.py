"""Which links expansion can follow, for every link kind a task has.

Foreign keys, title mentions and chunk adjacency say where they point (``link_keys``) and how
they are found (``own_keys``); they are followed as they are. Shared entities have no link
field, but an entity *is* a lookup key: :class:`EntityLinks` follows a candidate's entities to
the objects that name the same ones, skipping hub entities -- those held by more than
``max_share`` of the candidates, the same cap ``SharedEntities(max_share=...)`` ranks with, so
expansion and ranking agree on what is a hub.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, Protocol

from grapher_core.candidates import Candidate
from grapher_core.edges.base import LinkKey
from grapher_core.edges.entities import SharedEntities
from grapher_core.metadata import read_list

__all__ = ["DEFAULT_ENTITY_SHARE", "EntityLinks", "Linkable", "linkable"]

DEFAULT_ENTITY_SHARE = 0.05
"""Hub cap for followed entities when the proximity sets none (the bench's ``entities-capped``)."""


class Linkable(Protocol):
    """A proximity expansion can follow."""

    def link_keys(self, candidate: Candidate) -> list[LinkKey]: ...

    def own_keys(self, candidate: Candidate) -> list[LinkKey]: ...


@dataclass(frozen=True)
class EntityLinks:
    """Follow shared entities: a candidate's (non-hub) entities as lookup keys on ``field``.

    ``hubs`` are the entity values not followed; :meth:`for_candidates` fills them for one
    query (entities held by more than ``max_share`` of the candidates: a fraction when a
    float in (0, 1], a count when an int).
    """

    field: str = "entities"
    max_share: int | float = DEFAULT_ENTITY_SHARE
    kind: str = "conceptual"
    hubs: frozenset[str] = dc_field(default_factory=frozenset)

    def for_candidates(self, candidates: Sequence[Candidate]) -> EntityLinks:
        """The same links with this query's hub entities excluded."""
        counts = Counter(
            value
            for c in candidates
            for value in dict.fromkeys(read_list(c.metadata.get(self.field)))
        )
        limit = max(
            self.max_share * len(candidates)
            if isinstance(self.max_share, float)
            else self.max_share,
            1,
        )  # an entity one candidate holds is never a hub
        return EntityLinks(
            self.field,
            self.max_share,
            self.kind,
            frozenset(v for v, n in counts.items() if n > limit),
        )

    def link_keys(self, candidate: Candidate) -> list[LinkKey]:
        """One key per entity of the candidate that is not a hub."""
        return [
            ((self.field, value),)
            for value in read_list(candidate.metadata.get(self.field))
            if value not in self.hubs
        ]

    def own_keys(self, candidate: Candidate) -> list[LinkKey]:
        """None: an entity key finds *every* object naming it, so a candidate holding it does
        not satisfy it (the expander still never asks for the same key twice)."""
        return []


def linkable(proximities: Sequence[Any], *, entities: bool = False) -> list[Any]:
    """The proximities expansion can follow: those with ``link_keys`` and ``own_keys``
    (``ForeignKeys``, ``AdjacentChunks``), plus, with ``entities=True``, every
    ``SharedEntities`` as :class:`EntityLinks` (its ``max_holders`` or ``max_share``, else
    :data:`DEFAULT_ENTITY_SHARE`). ``SemanticKNN`` has nothing to follow."""
    out: list[Any] = []
    for p in proximities:
        if callable(getattr(p, "link_keys", None)) and callable(getattr(p, "own_keys", None)):
            out.append(p)
        elif entities and isinstance(p, SharedEntities):
            holders = getattr(p, "max_holders", None)
            share: int | float = DEFAULT_ENTITY_SHARE
            if holders is not None:
                share = int(holders)
            elif p.max_share is not None and float(p.max_share) < 1.0:
                share = float(p.max_share)
            out.append(EntityLinks(p.field, share, p.kind))
    return out
