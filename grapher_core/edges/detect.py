"""Zero-config proximities: choose edge builders from what the candidates carry.

When a reranker is given no proximities it looks at the candidates' metadata and picks:

* ``foreign_keys`` / ``links`` / ``mentions`` (lists of ids, names or titles) ->
  :class:`ForeignKeys`, matched against the candidate ids or, when the values name another
  field instead (a table name, a title, LlamaIndex's ``table_id``), against that field;
* ``links`` on chunks -> :class:`ChunkLinks` instead, so a link lands on one chunk of the
  linked page rather than on all of them: when a link carries an anchor (``page#anchor``), when
  the page field it names repeats across candidates (several chunks per page), or when the
  candidates are chunks (``chunk_index``, ``anchors``, ``n_chunks_in_doc`` or LlamaIndex
  relationships; this last test reads keys only, so the choice, cached per set of keys, does not
  depend on which pages one pool happens to hold). One object per target (tables' foreign
  keys, passages' titles) keeps :class:`ForeignKeys` exactly as before;
* ``entities`` -> :class:`SharedEntities`;
* ``doc_id`` + ``chunk_index`` -> :class:`AdjacentChunks` (unless the relationships below
  state the same order);
* ``_grapher_adjacent`` (LlamaIndex ``PREVIOUS``/``NEXT`` relationships, written by the wrapper)
  -> contextual :class:`ForeignKeys`.

The reranker logs the choice once per distinct set (logger ``"grapher"``, INFO). Explicit
proximities are used as given and never combined with detected ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from grapher_core.candidates import Candidate
from grapher_core.edges.entities import SharedEntities
from grapher_core.edges.keys import AdjacentChunks, ForeignKeys
from grapher_core.edges.links import ChunkLinks, page_key, page_values, split_link
from grapher_core.metadata import read_list

__all__ = [
    "ADJACENT_FIELD",
    "CHUNK_KEYS",
    "LINK_FIELDS",
    "PAGE_FIELDS",
    "TARGET_FIELDS",
    "describe",
    "detect_proximities",
]

LINK_FIELDS: tuple[str, ...] = ("foreign_keys", "links", "mentions")
"""Metadata fields read as links, in this order."""
TARGET_FIELDS: tuple[str, ...] = ("table_id", "table", "title", "name", "id", "url", "source")
"""Fields tried, in this order, when link values are not candidate ids."""
ADJACENT_FIELD = "_grapher_adjacent"
"""Reserved field of chunk neighbours (LlamaIndex relationships, set by the wrapper)."""
ENTITY_FIELD = "entities"
CHUNK_LINK_FIELD = "links"
"""The link field read as links between chunked pages (:class:`ChunkLinks`) on chunks."""
PAGE_FIELDS: tuple[str, ...] = (*TARGET_FIELDS, "doc_id")
"""Fields tried, in this order, for the page a chunk belongs to."""
CHUNK_KEYS: tuple[str, ...] = ("chunk_index", "n_chunks_in_doc", "anchors", ADJACENT_FIELD)
"""Metadata keys that say the candidates are chunks of larger pages."""


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


def _chunk_links(candidates: Sequence[Candidate], field: str) -> ChunkLinks | None:
    """:class:`ChunkLinks` when ``field``'s links point into chunked pages, else ``None``."""
    ids = {c.id for c in candidates}
    links = {link for c in candidates for link in read_list(c.metadata.get(field))} - ids
    anchored = {page for page, anchor in map(split_link, links) if anchor is not None}
    names = {page_key(name) for name in links | anchored}
    target: str | None = None
    repeats = False
    for name in PAGE_FIELDS:
        held = Counter(
            v for c in candidates for v in {page_key(p) for p in page_values(c.metadata.get(name))}
        )
        hit = names.intersection(held)
        if hit:
            target = name
            repeats = any(held[v] > 1 for v in hit)
            break
    chunks = any(_has(candidates, key) for key in CHUNK_KEYS)
    if not (anchored or repeats or chunks):
        return None
    if target is None:  # nothing resolves in this pool: the first page field the chunks carry
        target = next((name for name in PAGE_FIELDS if _has(candidates, name)), "source")
    return ChunkLinks(field, target_field=target)


def detect_proximities(candidates: Sequence[Candidate]) -> list[Any]:
    """The proximities the candidates' metadata supports (possibly none)."""
    found: list[Any] = []
    for field in LINK_FIELDS:
        if _has(candidates, field):
            chunked = _chunk_links(candidates, field) if field == CHUNK_LINK_FIELD else None
            if chunked is not None:
                found.append(chunked)
                continue
            resolves, target = _link_target(candidates, field)
            # Links that resolve nowhere in this pool still say the intent: keep id matching,
            # and the reranker's diagnostics explain what did not match.
            found.append(ForeignKeys(field, target_field=target if resolves else None))
    if _has(candidates, ADJACENT_FIELD):
        found.append(ForeignKeys(ADJACENT_FIELD, kind="contextual"))
    if _has(candidates, ENTITY_FIELD):
        found.append(SharedEntities(ENTITY_FIELD))
    if (
        _has(candidates, "doc_id")
        and _has(candidates, "chunk_index")
        and not _has(candidates, ADJACENT_FIELD)  # chunk order stated twice is one fact
    ):
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
