"""Which adapter reads a LangChain vector store, found by the names of the store's classes.

The table names classes as ``"module.QualName"`` strings and each adapter module is imported
only when a store of that type is in hand, so no store package is imported to find out (a user
without ``langchain-qdrant`` never imports it). A subclass of a known store gets its base's
adapter. An unknown store is said once (warning and log), with :func:`register_store_adapter`
as the way to add one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any

import numpy as np
from langchain_core.documents import Document

from grapher_core.request.stores import StoreCapabilities, StoreRegistry
from langchain_grapher.stores.base import StoreAdapter

__all__ = [
    "adapter_for",
    "documents_with_ids",
    "register_store_adapter",
    "store_capabilities",
    "store_ready",
    "stored_vectors",
    "vectors_by_id",
]

_PACKAGE = "langchain_grapher.stores"


def _lazy(module: str, name: str) -> Callable[[Any], StoreAdapter]:
    """A factory importing ``langchain_grapher.stores.<module>`` on its first use."""

    def factory(store: Any) -> StoreAdapter:
        return getattr(import_module(f"{_PACKAGE}.{module}"), name)(store)

    return factory


STORES: dict[str, Callable[[Any], StoreAdapter]] = {
    "langchain_core.vectorstores.in_memory.InMemoryVectorStore": _lazy(
        "in_memory", "InMemoryAdapter"
    ),
    "langchain_chroma.vectorstores.Chroma": _lazy("chroma", "ChromaAdapter"),
    "langchain_community.vectorstores.faiss.FAISS": _lazy("faiss", "FAISSAdapter"),
    "langchain_qdrant.qdrant.QdrantVectorStore": _lazy("qdrant", "QdrantAdapter"),
    "langchain_postgres.vectorstores.PGVector": _lazy("pgvector", "PGVectorAdapter"),
}
"""The shipped adapters, by the ``module.QualName`` of the store class each one reads."""

REGISTRY: StoreRegistry[StoreAdapter] = StoreRegistry(
    "LangChain",
    STORES,
    how="Register an adapter (an object with `capabilities`, `vectors(ids)` and "
    "`documents(docs)`; see langchain_grapher.stores.StoreAdapter): "
    "langchain_grapher.register_store_adapter('package.module.StoreClass', factory).",
)


def register_store_adapter(store_type: str | type, factory: Callable[[Any], StoreAdapter]) -> None:
    """Read stores of ``store_type`` (and subclasses) with ``factory(store)``: the class, or
    its ``"module.QualName"`` so its package need not be imported. Replaces a shipped one."""
    REGISTRY.register(store_type, factory)


def adapter_for(store: Any) -> StoreAdapter | None:
    """The adapter of ``store`` (an adapter given as the store is used as it is), or ``None``
    for an unknown store (said once per type). One adapter per store object: an adapter may
    keep a map (FAISS rows) between calls."""
    if isinstance(store, StoreAdapter) and not hasattr(store, "similarity_search"):
        return store
    return REGISTRY.held_adapter(store)


def store_capabilities(store: Any) -> StoreCapabilities | None:
    """What ``store`` keeps of GraphER's metadata and gives back; ``None`` when unknown."""
    adapter = adapter_for(store)
    return None if adapter is None else adapter.capabilities


def vectors_by_id(store: Any, ids: Sequence[str | None]) -> list[np.ndarray | None] | None:
    """The vector ``store`` holds for each id (``None`` where it holds none), read by its
    adapter in one call, or ``None`` when the store gives no vectors back."""
    adapter = adapter_for(store)
    return None if adapter is None else adapter.vectors(ids)


def stored_vectors(store: Any, documents: Sequence[Document]) -> list[np.ndarray | None] | None:
    """:func:`vectors_by_id` for the documents' ids."""
    return vectors_by_id(store, [None if d.id is None else str(d.id) for d in documents])


def documents_with_ids(store: Any, documents: Sequence[Document]) -> list[Document]:
    """The documents ``store`` returned, with the ids it holds them under on ``Document.id``
    (Qdrant returns them in metadata only); the given documents are not modified."""
    adapter = adapter_for(store)
    return list(documents) if adapter is None else adapter.documents(documents)


def store_ready(store: Any, documents: Sequence[Document]) -> list[Document]:
    """Copies of ``documents`` whose metadata ``store`` keeps: a list, empty list or dict the
    store would refuse or change is written in a shape it keeps (a JSON string, an omitted
    empty list) that GraphER's readers read back the same, and each such field is said once,
    naming it and the store. Unknown stores get the documents as they are."""
    adapter = adapter_for(store)
    if adapter is None:
        return list(documents)
    capabilities = adapter.capabilities
    out = []
    for document in documents:
        metadata, changed = REGISTRY.kept(store, capabilities, document.metadata)
        out.append(document.model_copy(update={"metadata": metadata}) if changed else document)
    return out
