"""A LangChain ``VectorStore`` as a GraphER neighbour source (expansion beyond the candidates).

>>> source = VectorStoreSource(store)          # Chroma, InMemoryVectorStore, any VectorStore
>>> reranker = GraphERReranker(proximities=[ForeignKeys()], neighbour_source=store)

Link keys by id use ``store.get_by_ids`` -- one call for the whole hop. Keys on metadata fields
(title mentions, ``doc_id`` + ``chunk_index``) need a store that filters on metadata: Chroma
(one ``get(where=...)`` call, vectors included) and ``InMemoryVectorStore`` (a scan of its
dict) are supported; other stores raise a clear error for such keys. Keys on list fields
(``list_fields``, default ``entities``: followed entity links) use Chroma's ``$contains``.
A hop that asks for both ids and fields costs at most two store calls (``calls`` counts them).
``limit`` bounds the objects returned (Chroma is asked for no more; ids are cut before the call);
``full=False`` leaves Chroma's documents out (ids, metadata and vectors only), so expansion scores
the fetched objects first and reads the text of the kept ones by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from grapher_core.candidates import Candidate
from grapher_core.conventions import EXPANDED_KEY
from grapher_core.edges.base import LinkKey
from grapher_core.errors import InputError, InputTypeError
from grapher_core.expand.source import InMemorySource, check_keys, check_limit

__all__ = ["DEFAULT_LIST_FIELDS", "EXPANDED_KEY", "VectorStoreSource", "as_neighbour_source"]

DEFAULT_LIST_FIELDS = ("entities",)
"""Metadata fields stored as lists in Chroma (entity links look values up inside them)."""


class VectorStoreSource:
    """Fetch link neighbours from a LangChain vector store in one batched call per kind of key."""

    def __init__(
        self, store: VectorStore, *, list_fields: Sequence[str] = DEFAULT_LIST_FIELDS
    ) -> None:
        if not isinstance(store, VectorStore):
            raise InputTypeError(f"expected a langchain VectorStore, got {type(store).__name__}")
        if isinstance(list_fields, str):
            raise InputTypeError("list_fields is a sequence of field names, not one string")
        self.store = store
        self.list_fields = frozenset(list_fields)
        self.calls = 0

    def fetch(
        self, keys: Sequence[LinkKey], *, limit: int | None = None, full: bool = True
    ) -> list[Candidate]:
        """Objects matching any key (by id and/or metadata), with vectors when the store has
        them (Chroma, InMemoryVectorStore); at most ``limit`` of them (ids first); with
        ``full=False`` Chroma leaves the text out (``""``)."""
        keys = check_keys(keys)
        limit = check_limit(limit)
        ids = [v for key in keys if len(key) == 1 and key[0][0] is None for _f, v in key]
        fields = [key for key in keys if not (len(key) == 1 and key[0][0] is None)]
        if any(f is None for key in fields for f, _v in key):
            raise InputError("a link key may not combine the id with metadata fields")
        out: list[Candidate] = []
        if ids and limit != 0:
            out.extend(self._by_ids(list(dict.fromkeys(ids))[:limit], full))
        left = None if limit is None else limit - len(out)
        if fields and left != 0:
            out.extend(self._by_fields(fields, left, full))
        return out

    def _by_ids(self, ids: list[str], full: bool) -> list[Candidate]:
        self.calls += 1
        if _is_chroma(self.store):
            return _from_chroma(
                self.store.get(ids=ids, include=_include(full))  # type: ignore[attr-defined]
            )
        if isinstance(self.store, InMemoryVectorStore):
            return [_memory_candidate(self.store, i) for i in ids if i in self.store.store]
        return [_candidate(d) for d in self.store.get_by_ids(ids)]

    def _by_fields(self, keys: list[LinkKey], limit: int | None, full: bool) -> list[Candidate]:
        self.calls += 1
        if _is_chroma(self.store):
            return _from_chroma(
                self.store.get(  # type: ignore[attr-defined]
                    where=_chroma_where(keys, self.list_fields), limit=limit, include=_include(full)
                )
            )
        if isinstance(self.store, InMemoryVectorStore):
            entries = list(self.store.store.values())
            scan = InMemorySource(
                [Candidate(e["id"], e["text"], None, e["metadata"]) for e in entries]
            )
            vectors = {e["id"]: e["vector"] for e in entries}
            return [
                Candidate(c.id, c.text, None, c.metadata, np.asarray(vectors[c.id]))
                for c in scan.fetch(keys, limit=limit)
            ]
        raise InputError(
            f"{type(self.store).__name__} can only fetch neighbours by id (get_by_ids); links "
            f"on metadata fields {sorted({f for k in keys for f, _v in k if f})} need Chroma, "
            "InMemoryVectorStore, or a custom NeighbourSource"
        )


def as_neighbour_source(value: Any) -> Any:
    """A vector store becomes a :class:`VectorStoreSource`; anything with ``fetch`` is kept."""
    if value is None or callable(getattr(value, "fetch", None)):
        return value
    if isinstance(value, VectorStore):
        return VectorStoreSource(value)
    raise InputTypeError(
        f"neighbour_source must be a VectorStore or have fetch(keys), got {type(value).__name__}"
    )


def _include(full: bool) -> list[str]:
    """What Chroma returns: the documents only when the caller reads objects in full."""
    return ["documents", "metadatas", "embeddings"] if full else ["metadatas", "embeddings"]


def _is_chroma(store: VectorStore) -> bool:
    return any(k.__module__.startswith("langchain_chroma") for k in type(store).__mro__)


def _candidate(document: Document) -> Candidate:
    if document.id is None:
        raise InputError("the store returned a document without an id")
    return Candidate(str(document.id), document.page_content, None, dict(document.metadata))


def _memory_candidate(store: InMemoryVectorStore, object_id: str) -> Candidate:
    entry = store.store[object_id]
    return Candidate(
        str(entry["id"]),
        entry["text"],
        None,
        dict(entry["metadata"]),
        np.asarray(entry["vector"], dtype=np.float64),
    )


def _from_chroma(result: dict[str, Any]) -> list[Candidate]:
    ids = result.get("ids") or []
    texts = result.get("documents") or [""] * len(ids)
    metadatas = result.get("metadatas") or [{}] * len(ids)
    vectors = result.get("embeddings")
    out = []
    for position, object_id in enumerate(ids):
        vector = None if vectors is None else np.asarray(vectors[position], dtype=np.float64)
        out.append(
            Candidate(
                str(object_id), texts[position] or "", None, dict(metadatas[position] or {}), vector
            )
        )
    return out


def _condition(field: str, value: str) -> dict[str, Any]:
    """Equality on a field; a numeric string also matches the stored integer (chunk_index)."""
    if value.lstrip("-").isdigit():
        return {"$or": [{field: value}, {field: int(value)}]}
    return {field: value}


def _chroma_where(
    keys: Sequence[LinkKey], list_fields: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """One Chroma ``where`` for all keys: single-field keys grouped into ``$in`` lists; keys on
    a list field (``$in`` silently matches nothing there) as ``$contains`` per value."""
    single: dict[str, list[str]] = {}
    clauses: list[dict[str, Any]] = []
    for key in keys:
        if len(key) == 1 and key[0][0] in list_fields:
            clauses.append({key[0][0]: {"$contains": key[0][1]}})
            continue
        if len(key) == 1 and not key[0][1].lstrip("-").isdigit():
            field, value = key[0]
            if field is None:  # id keys are fetched by id (``fetch``), never by a where clause
                raise InputError("an id key reached the metadata filter")
            single.setdefault(field, []).append(value)
            continue
        parts = [_condition(f, v) for f, v in key if f is not None]
        clauses.append(parts[0] if len(parts) == 1 else {"$and": parts})
    for field, values in single.items():
        clauses.append({field: {"$in": list(dict.fromkeys(values))}})
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}
