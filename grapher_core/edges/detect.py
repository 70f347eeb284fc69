"""Zero-config proximities: choose edge builders from what the candidates carry.

When a reranker is given no proximities it looks at the candidates' metadata and picks:

* ``foreign_keys`` / ``links`` / ``mentions`` (lists of ids, names or titles) ->
  :class:`ForeignKeys`, matched against the candidate ids or, when the values name another
  field instead (a table name, a title, LlamaIndex's ``table_id``), against that field;
* ``entities`` -> :class:`SharedEntities`;
* ``doc_id`` + ``chunk_index`` -> :class:`AdjacentChunks`;
* ``_grapher_adjacent`` (LlamaIndex ``PREVIOUS``/``NEXT`` relationships, written by the wrapper)
  -> contextual :class:`ForeignKeys`.

The reranker logs the choice once per distinct set (logger ``"grapher"``, INFO). Explicit
proximities are used as given and never combined with detected ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grapher_core.candidates import Candidate
from grapher_core.edges.entities import SharedEntities
from grapher_core.edges.keys import AdjacentChunks, ForeignKeys
from grapher_core.metadata import read_list

__all__ = ["ADJACENT_FIELD", "LINK_FIELDS", "TARGET_FIELDS", "describe", "detect_proximities"]

LINK_FIELDS: tuple[str, ...] = ("foreign_keys", "links", "mentions")
"""Metadata fields read as links, in this order."""
TARGET_FIELDS: tuple[str, ...] = ("table_id", "table", "title", "name", "id", "url", "source")
"""Fields tried, in this order, when link values are not candidate ids."""
ADJACENT_FIELD = "_grapher_adjacent"
"""Reserved field of chunk neighbours (LlamaIndex relationships, set by the wrapper)."""
ENTITY_FIELD = "entities"


def _has(candidates: Sequence[Candidate], field: str) -> bool:
    return any(c.metadata.get(field) not in (None, "", [], ()) for c in candidates)


def _link_target(candidates: Sequence[Candidate], field: str) -> tuple[bool, str | None]:
    """Whether the links in ``field`` resolve, and against which field (None: the ids)."""
    links = {link for c in candidates for link in read_list(c.metadata.get(field))}
    ids = {c.id for c in candidates}
    if links & ids:
        return True, None
    for target in TARGET_FIELDS:
        values = {v for c in candidates for v in read_list(c.metadata.get(target))}
        if links & values:
            return True, target
    return False, None


def detect_proximities(candidates: Sequence[Candidate]) -> list[Any]:
    """The proximities the candidates' metadata supports (possibly none)."""
    found: list[Any] = []
    for field in LINK_FIELDS:
        if _has(candidates, field):
            resolves, target = _link_target(candidates, field)
            # Links that resolve nowhere in this pool still say the intent: keep id matching,
            # and the reranker's diagnostics explain what did not match.
            found.append(ForeignKeys(field, target_field=target if resolves else None))
    if _has(candidates, ADJACENT_FIELD):
        found.append(ForeignKeys(ADJACENT_FIELD, kind="contextual"))
    if _has(candidates, ENTITY_FIELD):
        found.append(SharedEntities(ENTITY_FIELD))
    if _has(candidates, "doc_id") and _has(candidates, "chunk_index"):
        found.append(AdjacentChunks())
    return found


def describe(proximities: Sequence[Any]) -> str:
    """A short human-readable list, e.g. ``ForeignKeys('foreign_keys' -> 'table_id')``."""
    parts = []
    for p in proximities:
        name = type(p).__name__
        field = getattr(p, "field", None) or getattr(p, "doc_field", None)
        target = getattr(p, "target_field", None)
        parts.append(f"{name}({field!r}" + (f" -> {target!r})" if target else ")"))
    return ", ".join(parts) or "none"
