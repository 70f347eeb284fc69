"""Node vectors from the index's vector store, for nodes retrieved without their embedding.

A ``VectorStoreIndex`` returns nodes from its docstore, without vectors; the vector store still
holds them. ``SimpleVectorStore.get(node_id)`` gives one; Chroma's collection gives a batch
(``get(ids=..., include=["embeddings"])``). Anything else gives none (the content-hash cache
and the embedding model fill in).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["node_vectors"]


def node_vectors(store: Any, ids: Sequence[str]) -> list[np.ndarray | None]:
    """The stored vector of each node id (``None`` where the store has none)."""
    collection = getattr(store, "_collection", None)
    if collection is not None and callable(getattr(collection, "get", None)):
        try:
            result = collection.get(ids=list(ids), include=["embeddings"])
        except Exception:  # not a Chroma collection after all: no vectors from it
            return [None] * len(ids)
        embeddings = result.get("embeddings") if isinstance(result, dict) else None
        if embeddings is None:
            return [None] * len(ids)
        by_id = {
            str(i): np.asarray(v, dtype=np.float32)
            for i, v in zip(result.get("ids") or [], embeddings, strict=False)
        }
        return [by_id.get(i) for i in ids]
    getter = getattr(store, "get", None)
    if not callable(getter):
        return [None] * len(ids)
    out: list[np.ndarray | None] = []
    for node_id in ids:
        try:
            vector = getter(node_id)
        except (KeyError, ValueError, TypeError):
            vector = None
        out.append(None if vector is None else np.asarray(vector, dtype=np.float32))
    return out
