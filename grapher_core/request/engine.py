"""The engine protocol: what every door holds to run a request.

:class:`~grapher_core.GraphReranker`, :class:`~grapher_core.expand.ExpandingReranker` and
:class:`~grapher_core.expand.egograph.EgoGraphReranker` implement it, so a door holds any of
them and never branches on which.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from grapher_core.errors import InputTypeError
from grapher_core.request.call import Call

if TYPE_CHECKING:
    from grapher_core.candidates import Candidate
    from grapher_core.request.result import Reranking
    from grapher_core.rerank import GraphReranker

__all__ = ["Engine", "core_of"]


@runtime_checkable
class Engine(Protocol):
    """Runs one request as a sans-IO :class:`~grapher_core.request.Call`."""

    @property
    def needs_embeddings(self) -> bool: ...

    def call(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | Sequence[float] | None = None,
        embedder: object | None = None,
        top_n: int | None = None,
    ) -> Call[Reranking]: ...

    def run(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | None = None,
        top_n: int | None = None,
    ) -> Reranking: ...


def core_of(engine: Any) -> GraphReranker:
    """The :class:`~grapher_core.GraphReranker` an engine ranks with (itself, or the one an
    expanding engine wraps)."""
    from grapher_core.rerank import GraphReranker

    if isinstance(engine, GraphReranker):
        return engine
    core = getattr(engine, "reranker", None)
    if isinstance(core, GraphReranker):
        return core
    raise InputTypeError(f"{type(engine).__name__} is not an engine over a GraphReranker")
