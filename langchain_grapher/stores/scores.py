"""A LangChain vector store's search scores on one scale, the relevance scale.

Scores: ``similarity_search_with_score`` mapped through the store's own relevance function
(``_select_relevance_score_fn``: cosine, Euclidean or inner product, as the store declares).
A store without one (LangChain's ``InMemoryVectorStore``) returns raw values, best first: values
that fall down the list are similarities and are kept as they are; values that rise are
distances and become ``1 / (1 + d)`` (in (0, 1], 1 for a distance of 0). Nothing here calls
``similarity_search_with_relevance_scores``, so its "scores must be between 0 and 1" warning
(which printed every document) is never raised, and no warning filter is needed.

Vectors are read by the store's adapter (:mod:`langchain_grapher.stores.registry`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

__all__ = ["ascored_search", "relevance_scores", "scored_search"]


def _relevance_fn(store: VectorStore) -> Callable[[float], float] | None:
    try:
        return store._select_relevance_score_fn()
    except NotImplementedError:
        return None


def relevance_scores(store: VectorStore, raw: Sequence[float]) -> list[float]:
    """``similarity_search_with_score`` values on the relevance scale (see the module doc)."""
    values = [float(v) for v in raw]
    function = _relevance_fn(store)
    if function is not None:
        return [float(function(v)) for v in values]
    if len(values) > 1 and values[0] < values[-1]:  # rising down the list: distances
        return [1.0 / (1.0 + max(v, 0.0)) for v in values]
    return values


def _pairs(store: VectorStore, found: list[tuple[Document, float]]) -> list[tuple[Document, float]]:
    scores = relevance_scores(store, [s for _d, s in found])
    return [(d, s if math.isfinite(s) else 0.0) for (d, _r), s in zip(found, scores, strict=True)]


def scored_search(
    store: VectorStore, query: str, **kwargs: Any
) -> list[tuple[Document, float]] | None:
    """Documents with relevance scores, or ``None`` when the store cannot score at all."""
    try:
        found = store.similarity_search_with_score(query, **kwargs)
    except NotImplementedError:
        return None
    return _pairs(store, found)


async def ascored_search(
    store: VectorStore, query: str, **kwargs: Any
) -> list[tuple[Document, float]] | None:
    """:func:`scored_search`, awaited."""
    try:
        found = await store.asimilarity_search_with_score(query, **kwargs)
    except NotImplementedError:
        return None
    return _pairs(store, found)
