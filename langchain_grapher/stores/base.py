"""The protocol every LangChain store adapter follows, and the base the shipped ones share.

An adapter does a store's IO for the reranker: the vectors of many documents in one batched
call (not one round trip per document), the ids of the documents the store returned, and a
:class:`~grapher_core.request.stores.StoreCapabilities` saying what the store keeps of GraphER's
metadata. Adapters are found by :func:`langchain_grapher.stores.adapter_for`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
from langchain_core.documents import Document

from grapher_core.request.stores import StoreCapabilities

__all__ = ["StoreAdapter", "StoreAdapterBase", "aligned"]


@runtime_checkable
class StoreAdapter(Protocol):
    """What GraphER asks of a LangChain vector store."""

    capabilities: StoreCapabilities

    def vectors(self, ids: Sequence[str | None]) -> list[np.ndarray | None] | None:
        """The vector held for each id (``None`` where none), read in one call; ``None``
        when the store gives no vectors back."""
        ...

    def documents(self, documents: Sequence[Document]) -> list[Document]:
        """The store's search results with their ids as the store holds them (a store that
        returns them in metadata only gets copies with ``Document.id`` set)."""
        ...


def aligned(ids: Sequence[str | None], found: Iterable[tuple[Any, Any]]) -> list[np.ndarray | None]:
    """The vectors of ``found`` ``(id, vector)`` pairs in the order of ``ids``."""
    by_id: Mapping[str, Any] = {str(i): v for i, v in found if v is not None}
    out: list[np.ndarray | None] = []
    for i in ids:
        vector = None if i is None else by_id.get(i)
        out.append(None if vector is None else np.asarray(vector, dtype=np.float32))
    return out


class StoreAdapterBase:
    """A shipped adapter: holds the store; documents keep the ids they came with."""

    capabilities: ClassVar[StoreCapabilities]

    def __init__(self, store: Any) -> None:
        self.store = store

    def vectors(self, ids: Sequence[str | None]) -> list[np.ndarray | None] | None:
        known = list(dict.fromkeys(i for i in ids if i is not None))
        if not known:
            return None
        return aligned(ids, self._read(known))

    def _read(self, ids: list[str]) -> Iterable[tuple[Any, Any]]:
        """``(id, vector)`` pairs for ``ids``, in one call to the store."""
        raise NotImplementedError

    def documents(self, documents: Sequence[Document]) -> list[Document]:
        return list(documents)
