"""The protocol every LlamaIndex store adapter follows, and the base the shipped ones share.

A ``VectorStoreIndex`` returns nodes from its docstore, without vectors; the vector store still
holds them. An adapter reads the vectors of many node ids in one batched call and says, in a
:class:`~grapher_core.request.stores.StoreCapabilities`, what the store keeps of GraphER's metadata.
Adapters are found by :func:`llama_index_grapher.stores.adapter_for`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from grapher_core.request.stores import StoreCapabilities

__all__ = ["NodeStoreAdapter", "NodeStoreAdapterBase", "aligned"]


@runtime_checkable
class NodeStoreAdapter(Protocol):
    """What GraphER asks of a LlamaIndex vector store."""

    @property
    def capabilities(self) -> StoreCapabilities: ...

    def vectors(self, ids: Sequence[str]) -> list[np.ndarray | None]:
        """The vector held for each node id (``None`` where none), read in one call."""
        ...


def aligned(ids: Sequence[str], found: Iterable[tuple[Any, Any]]) -> list[np.ndarray | None]:
    """The vectors of ``found`` ``(id, vector)`` pairs in the order of ``ids``."""
    by_id: Mapping[str, Any] = {str(i): v for i, v in found if v is not None}
    return [None if (v := by_id.get(i)) is None else np.asarray(v, dtype=np.float32) for i in ids]


class NodeStoreAdapterBase:
    """A shipped adapter: holds the store and reads its vectors by :meth:`_read`."""

    def __init__(self, store: Any) -> None:
        self.store = store

    @property
    def capabilities(self) -> StoreCapabilities:
        raise NotImplementedError

    def vectors(self, ids: Sequence[str]) -> list[np.ndarray | None]:
        known = list(dict.fromkeys(str(i) for i in ids))
        if not known:
            return []
        return aligned(ids, self._read(known))

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        """``(id, vector)`` pairs for ``ids``, in one call to the store."""
        raise NotImplementedError


def flat_capabilities(name: str, store: Any, **kept: bool) -> StoreCapabilities:
    """A store whose ``flat_metadata`` (LlamaIndex's own switch) refuses lists and dicts."""
    flat = bool(getattr(store, "flat_metadata", False))
    if flat:
        return StoreCapabilities(
            f"{name} (flat_metadata=True)",
            vectors=True,
            lists=False,
            nested=False,
            empty_lists=False,
        )
    return StoreCapabilities(name, vectors=True, **kept)
