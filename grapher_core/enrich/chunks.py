"""Contextual enrichment: give the chunks of a document a document id and a chunk index.

:class:`grapher_core.edges.keys.AdjacentChunks` links chunk ``k`` to chunks ``k ± 1`` of the same
document; these helpers write the two fields it reads (``doc_id``, ``chunk_index``, plus
``n_chunks_in_doc`` as the benchmarks do) for chunks produced by any splitter. They are pure
functions shared by the LangChain and LlamaIndex wrappers, so both number chunks the same way.

>>> chunk_metadata("guide.md", 2)
[{'doc_id': 'guide.md', 'chunk_index': 0, 'n_chunks_in_doc': 2}, \
{'doc_id': 'guide.md', 'chunk_index': 1, 'n_chunks_in_doc': 2}]
>>> [(p.doc_id, p.chunk_index) for p in chunk_positions(["a", "b", "a"], starts=[90, 0, 10])]
[('a', 1), ('b', 0), ('a', 0)]
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grapher_core.errors import InputError

__all__ = [
    "DEFAULT_DOC_KEYS",
    "ChunkPosition",
    "chunk_metadata",
    "chunk_positions",
    "document_id",
    "stable_id",
]

DEFAULT_DOC_KEYS: tuple[str, ...] = ("doc_id", "source", "file_path", "url")
"""Metadata keys that name a chunk's source document, tried in this order."""


@dataclass(frozen=True)
class ChunkPosition:
    """Where one chunk sits: its document, its 0-based index there, and the document's size."""

    doc_id: str
    chunk_index: int
    n_chunks: int

    def as_metadata(
        self,
        *,
        doc_field: str = "doc_id",
        index_field: str = "chunk_index",
        count_field: str | None = "n_chunks_in_doc",
    ) -> dict[str, Any]:
        """The metadata fields :class:`~grapher_core.edges.keys.AdjacentChunks` reads."""
        out: dict[str, Any] = {doc_field: self.doc_id, index_field: self.chunk_index}
        if count_field:
            out[count_field] = self.n_chunks
        return out


def stable_id(text: str, *parts: str) -> str:
    """A short id that depends only on ``text`` (and ``parts``): the same across runs and machines.

    Used where an object has no id of its own; 16 hex digits of SHA-256 make collisions between
    distinct texts practically impossible at corpus scale. Lone surrogates (a Document whose
    text came from JSON with ``"\\ud800"``) are hashed as their code units, never an error.
    """
    digest = hashlib.sha256()
    for piece in (text, *parts):
        digest.update(piece.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


def document_id(
    metadata: Mapping[str, Any],
    *,
    keys: Sequence[str] = DEFAULT_DOC_KEYS,
    object_id: str | None = None,
    text: str | None = None,
) -> str | None:
    """The id of the document a chunk or document belongs to.

    The first non-empty ``metadata[key]`` for ``key`` in ``keys``; else ``object_id``; else a
    :func:`stable_id` of ``text`` when given (for a whole, unsplit document); else ``None``.
    """
    for key in keys:
        value = metadata.get(key)
        if value is not None and str(value).strip():
            return str(value)
    if object_id:
        return object_id
    if text is not None:
        return "doc-" + stable_id(text)
    return None


def chunk_metadata(
    doc_id: str,
    n_chunks: int,
    *,
    doc_field: str = "doc_id",
    index_field: str = "chunk_index",
    count_field: str | None = "n_chunks_in_doc",
) -> list[dict[str, Any]]:
    """Metadata for the ``n_chunks`` consecutive chunks of one document, in order."""
    _check_doc_id(doc_id, "doc_id")
    if isinstance(n_chunks, bool) or not isinstance(n_chunks, int) or n_chunks < 0:
        raise InputError(f"n_chunks must be a non-negative integer, got {n_chunks!r}")
    return [
        ChunkPosition(doc_id, k, n_chunks).as_metadata(
            doc_field=doc_field, index_field=index_field, count_field=count_field
        )
        for k in range(n_chunks)
    ]


def chunk_positions(
    doc_ids: Sequence[str], starts: Sequence[int | None] | None = None
) -> list[ChunkPosition]:
    """Number a flat list of chunks (several documents, as a splitter returns them).

    Chunks of the same ``doc_id`` are numbered 0, 1, ... by their ``starts`` (character offsets
    in the document, e.g. LangChain's ``start_index``) when every chunk of that document has
    one, otherwise by their order in the list. Ties keep list order.
    """
    if starts is not None and len(starts) != len(doc_ids):
        raise InputError(f"got {len(starts)} start offsets for {len(doc_ids)} chunks")
    groups: dict[str, list[int]] = defaultdict(list)
    for position, doc_id in enumerate(doc_ids):
        _check_doc_id(doc_id, f"doc id of chunk {position}")
        groups[doc_id].append(position)
    out: list[ChunkPosition | None] = [None] * len(doc_ids)
    for doc_id, members in groups.items():
        offsets = [None if starts is None else _offset(starts[i]) for i in members]
        if all(offset is not None for offset in offsets):
            order = sorted(range(len(members)), key=lambda k: (offsets[k], k))
        else:
            order = list(range(len(members)))
        for chunk_index, k in enumerate(order):
            out[members[k]] = ChunkPosition(doc_id, chunk_index, len(members))
    return [position for position in out if position is not None]


def _offset(value: int | None) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _check_doc_id(doc_id: object, what: str) -> None:
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise InputError(f"{what} must be a non-empty string, got {doc_id!r}")
