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
* a document field (``doc_id``, ``source``, ``file_path``, or LlamaIndex's ``SOURCE``
  relationship) + ``chunk_index`` -> :class:`AdjacentChunks`; + ``start_index`` (LangChain's
  ``RecursiveCharacterTextSplitter(add_start_index=True)`` after a loader's ``source``) ->
  ``AdjacentChunks(order="offset")``, chunks whose spans meet (unless the relationships below
  state the same order);
* ``_grapher_adjacent`` (LlamaIndex ``PREVIOUS``/``NEXT`` relationships, written by the wrapper)
  -> contextual :class:`ForeignKeys`.

When the candidates look chunked (a document field repeats, or an order field has no document
field beside it) but nothing above states their order, :func:`missing_order_hint` says the
exact fix. The reranker logs the choice once per distinct set (logger ``"grapher"``, INFO). Explicit
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
    "DOC_FIELDS",
    "LINK_FIELDS",
    "OFFSET_FIELD",
    "PAGE_FIELDS",
    "SOURCE_FIELD",
    "TARGET_FIELDS",
    "describe",
    "detect_proximities",
    "missing_order_hint",
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
PAGE_FIELDS: tuple[str, ...] = (*TARGET_FIELDS, "file_path", "doc_id")
"""Fields tried, in this order, for the page a chunk belongs to."""
SOURCE_FIELD = "_grapher_source"
"""Reserved field of a chunk's document id (LlamaIndex ``SOURCE`` relationship, by the wrapper)."""
DOC_FIELDS: tuple[str, ...] = ("doc_id", "source", "file_path", SOURCE_FIELD)
"""Fields tried, in this order, for the document whose chunk order is read."""
INDEX_FIELD = "chunk_index"
"""Chunk numbers (``ChunkLinkTransformer``, the shared benchmarks)."""
OFFSET_FIELD = "start_index"
"""Where a chunk starts in its document (LangChain splitters, ``add_start_index=True``)."""
CHUNK_KEYS: tuple[str, ...] = (
    INDEX_FIELD,
    OFFSET_FIELD,
    "n_chunks_in_doc",
    "anchors",
    ADJACENT_FIELD,
)
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
    order = _chunk_order(candidates)
    if order is not None:
        found.append(order)
    return found


def _chunk_order(candidates: Sequence[Candidate]) -> AdjacentChunks | None:
    """Chunk order from metadata: numbers first (exact), else start offsets; none when the
    LlamaIndex relationships state it (chunk order stated twice is one fact)."""
    if _has(candidates, ADJACENT_FIELD):
        return None
    doc = next((field for field in DOC_FIELDS if _has(candidates, field)), None)
    if doc is None:
        return None
    if _has(candidates, INDEX_FIELD):
        return AdjacentChunks(doc_field=doc)
    if _has(candidates, OFFSET_FIELD):
        return AdjacentChunks(doc_field=doc, index_field=OFFSET_FIELD, order="offset")
    return None


def _repeated_document(candidates: Sequence[Candidate]) -> tuple[str, int] | None:
    """The first document field whose values repeat, and how many candidates share one."""
    for field in (*DOC_FIELDS, "file_name", "url"):
        held = Counter(
            str(c.metadata[field]) for c in candidates if c.metadata.get(field) not in (None, "")
        )
        shared = sum(count for count in held.values() if count > 1)
        if shared:
            return field, shared
    return None


FIXES = (
    "split with RecursiveCharacterTextSplitter(add_start_index=True) (LangChain; 'source' + "
    "'start_index' are then read), or number the chunks with ChunkLinkTransformer() (writes "
    "doc_id + chunk_index), or parse with a LlamaIndex node parser such as SentenceSplitter "
    "(its PREVIOUS/NEXT relationships are read)"
)
"""What makes chunk order readable, in the words a user types."""


def missing_order_hint(candidates: Sequence[Candidate]) -> str | None:
    """The exact fix when the candidates look chunked but state no chunk order, else ``None``.

    Chunks with no order are the common case of a loader + splitter pipeline (LangChain
    copies ``source`` to every chunk and writes no position unless asked), and the reranker
    otherwise only says that no graph was found."""
    if _has(candidates, ADJACENT_FIELD) or _chunk_order(candidates) is not None:
        return None
    ordered = next((f for f in (INDEX_FIELD, OFFSET_FIELD) if _has(candidates, f)), None)
    if ordered is not None:  # an order, but no document to read it within
        option = ", order='offset'" if ordered == OFFSET_FIELD else ""
        return (
            f"the candidates carry {ordered!r} but no document field "
            f"({', '.join(DOC_FIELDS[:3])}), so chunk order is not read: give each document a "
            "'source' before splitting (LangChain loaders do), or pass proximities="
            f"[AdjacentChunks(doc_field='<your field>', index_field={ordered!r}{option})]"
        )
    repeated = _repeated_document(candidates)
    if repeated is None:
        return None
    field, shared = repeated
    return (
        f"{shared} of the {len(candidates)} candidates share their {field!r} with another "
        "(chunks of the same documents) but carry no chunk order, so no chunk is linked to "
        f"the next: {FIXES}; with an order field of your own, pass proximities="
        f"[AdjacentChunks(doc_field={field!r}, index_field='<your field>')]"
    )


def describe(proximities: Sequence[Any]) -> str:
    """A short human-readable list, e.g. ``ForeignKeys('foreign_keys' -> 'table_id')``."""
    parts = []
    for p in proximities:
        name = type(p).__name__
        field = getattr(p, "field", None) or getattr(p, "doc_field", None)
        target = getattr(p, "target_field", None)
        if getattr(p, "order", None) == "offset":
            target = f"by offset {getattr(p, 'index_field', '')}"
            parts.append(f"{name}({field!r}, {target})")
            continue
        parts.append(f"{name}({field!r}" + (f" -> {target!r})" if target else ")"))
    return ", ".join(parts) or "none"
