"""Which adapter reads a LlamaIndex vector store, found by the names of the store's classes.

The table names classes as ``"module.QualName"`` strings and each adapter module is imported
only when a store of that type is in hand, so no store package is imported to find out. A
subclass of a known store gets its base's adapter; a ``VectorStoreIndex`` gets its vector
store's, with node ids mapped to the ids that store holds. An unknown store is said once
(warning and log), with :func:`register_store_adapter` as the way to add one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any

import numpy as np

from grapher_core.request.stores import StoreCapabilities, StoreRegistry
from llama_index_grapher.stores.base import NodeStoreAdapter

__all__ = [
    "adapter_for",
    "node_vectors",
    "register_store_adapter",
    "relevance_nodes",
    "store_capabilities",
    "store_ready",
]

_PACKAGE = "llama_index_grapher.stores"


def _lazy(module: str, name: str) -> Callable[[Any], NodeStoreAdapter | None]:
    """A factory importing ``llama_index_grapher.stores.<module>`` on its first use."""

    def factory(store: Any) -> NodeStoreAdapter | None:
        return getattr(import_module(f"{_PACKAGE}.{module}"), name)(store)

    return factory


def _index(index: Any) -> NodeStoreAdapter | None:
    """A ``VectorStoreIndex``: its vector store's adapter behind the index's id map."""
    from llama_index_grapher.stores.index import IndexAdapter

    inner = REGISTRY.adapter(index.vector_store, through_index=True)
    return None if inner is None else IndexAdapter(index, inner)


def _bare_faiss(store: Any) -> NodeStoreAdapter | None:
    """A ``FaissVectorStore`` given alone: what it keeps, but no vectors by node id."""
    from llama_index_grapher.stores.faiss import FaissAdapter

    return FaissAdapter(store, REGISTRY.diagnostics)


STORES: dict[str, Callable[[Any], NodeStoreAdapter | None]] = {
    "llama_index.core.vector_stores.simple.SimpleVectorStore": _lazy("simple", "SimpleAdapter"),
    "llama_index.vector_stores.chroma.base.ChromaVectorStore": _lazy("chroma", "ChromaAdapter"),
    "llama_index.vector_stores.postgres.base.PGVectorStore": _lazy("pgvector", "PGVectorAdapter"),
    "llama_index.vector_stores.qdrant.base.QdrantVectorStore": _lazy("qdrant", "QdrantAdapter"),
    "llama_index.vector_stores.faiss.base.FaissVectorStore": _bare_faiss,
    "llama_index.core.indices.vector_store.base.VectorStoreIndex": _index,
}
"""The shipped adapters, by the ``module.QualName`` of the store class each one reads."""

THROUGH_INDEX: dict[str, Callable[[Any], NodeStoreAdapter | None]] = {
    "llama_index.vector_stores.faiss.base.FaissVectorStore": _lazy("faiss", "FaissRowsAdapter"),
}
"""Adapters used only behind a ``VectorStoreIndex`` (the store's ids are not node ids)."""


class _Registry(StoreRegistry[NodeStoreAdapter]):
    def adapter(self, store: Any, through_index: bool = False) -> NodeStoreAdapter | None:
        if through_index:
            for name in (f"{k.__module__}.{k.__qualname__}" for k in type(store).__mro__):
                if name in THROUGH_INDEX:
                    return THROUGH_INDEX[name](store)
        return super().adapter(store)


REGISTRY = _Registry(
    "LlamaIndex",
    STORES,
    how="Register an adapter (an object with `capabilities` and `vectors(node_ids)`; see "
    "llama_index_grapher.stores.NodeStoreAdapter): "
    "llama_index_grapher.register_store_adapter('package.module.StoreClass', factory).",
)


def register_store_adapter(
    store_type: str | type, factory: Callable[[Any], NodeStoreAdapter | None]
) -> None:
    """Read stores of ``store_type`` (and subclasses) with ``factory(store)``: the class, or
    its ``"module.QualName"`` so its package need not be imported. Replaces a shipped one."""
    REGISTRY.register(store_type, factory)


def adapter_for(store: Any) -> NodeStoreAdapter | None:
    """The adapter of ``store`` (a vector store or a ``VectorStoreIndex``; an adapter given as
    the store is used as it is), or ``None`` when no vectors can be read from it (said once
    per type). One adapter per store object: an adapter may keep an id map between calls."""
    if isinstance(store, NodeStoreAdapter) and not hasattr(store, "query"):
        return store
    return REGISTRY.held_adapter(store)


def store_capabilities(store: Any) -> StoreCapabilities | None:
    """What ``store`` keeps of GraphER's metadata and gives back; ``None`` when unknown."""
    adapter = adapter_for(store)
    return None if adapter is None else adapter.capabilities


def node_vectors(store: Any, ids: Sequence[str]) -> list[np.ndarray | None]:
    """The stored vector of each node id (``None`` where the store has none), read by the
    store's adapter in one call."""
    adapter = adapter_for(store)
    return [None] * len(ids) if adapter is None else adapter.vectors(ids)


def store_ready(store: Any, nodes: Sequence[Any]) -> list[Any]:
    """Copies of ``nodes`` (or documents) whose metadata ``store`` keeps: a list, empty list
    or dict the store would refuse (``flat_metadata=True`` refuses every list) is written in a
    shape it keeps (a JSON string, an omitted empty list) that GraphER's readers read back the
    same, and each such field is said once, naming it and the store. Unknown stores get the
    nodes as they are."""
    capabilities = store_capabilities(store)
    if capabilities is None:
        return list(nodes)
    out = []
    for node in nodes:
        metadata, changed = REGISTRY.kept(store, capabilities, node.metadata)
        out.append(node.model_copy(update={"metadata": metadata}) if changed else node)
    return out


def relevance_nodes(store: Any, nodes: Sequence[Any]) -> list[Any]:
    """The retrieved nodes with their scores on the cosine scale when ``store``'s adapter maps
    them (``relevance(scores)``: Chroma's ``exp(-distance)``); new ``NodeWithScore`` objects,
    the given ones are not modified. Other stores' nodes come back as they are."""
    adapter = None if store is None else adapter_for(store)
    relevance = getattr(adapter, "relevance", None)
    if relevance is None or not nodes:
        return list(nodes)
    scores = relevance([n.score for n in nodes])
    return [n.model_copy(update={"score": s}) for n, s in zip(nodes, scores, strict=True)]
