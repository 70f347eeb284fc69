"""The door an evaluation deploys through: how a configuration of the grid becomes the request
that door runs, and who answers the request's IO.

``grapher eval`` ranks the way :class:`~grapher_core.GraphReranker` and LangChain's
``GraphERReranker`` do; LlamaIndex's ``GraphERPostprocessor`` always adds the edges of the
nodes' ``PREVIOUS`` / ``NEXT`` relationships (``fixed``) beside the detected ones; a wrapper
embeds with its own model and reads its store's vectors (``answer``). Each configuration is
built as :class:`~grapher_core.request.settings.RerankSettings` -- what a written config
holds and every door loads -- so what is measured is what that door deploys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from grapher_core.candidates import Candidate

if TYPE_CHECKING:
    from grapher_core.diagnostics import CorpusFacts
    from grapher_core.evaluation.grid import Setting
    from grapher_core.request.result import Reranking
    from grapher_core.request.settings import RerankSettings

__all__ = ["CLI_DOOR", "Door", "rank_pool", "reranker_for"]


@dataclass(frozen=True)
class Door:
    """How one door deploys a configuration: proximities it always adds after the
    configuration's (``fixed``, described by ``fixed_label``), the IO answering a call's needs
    (``None``: the core's own embedder), its default bounds, and what the evaluation knows
    of the corpus beyond each pool (``corpus``: the rerankers' notes then tell a pool where
    nothing links from a field nobody wrote)."""

    name: str = "GraphReranker"
    fixed: tuple[Any, ...] = ()
    fixed_label: str | None = None
    answer: Callable[[Any], Any] | None = None
    max_candidates: int | None = None
    max_chars_per_doc: int | None = None
    corpus: CorpusFacts | None = None

    def settings(self, setting: Setting, built: Mapping[str, Any] | None = None) -> RerankSettings:
        """The request settings of ``setting`` at this door; ``built``: learned rankers loaded
        once (passed as objects, so their checkpoint is not read again per configuration)."""
        from grapher_core.request.settings import RerankSettings

        ranker = (built or {}).get(setting.ranker, setting.ranker)
        named = isinstance(ranker, str)
        proximities = setting.proximities
        auto = None
        if self.fixed:
            auto = proximities is None
            proximities = (*(proximities or ()), *self.fixed)
        return RerankSettings(
            proximities=proximities,
            ranker=ranker,
            alpha=setting.alpha if named else None,
            ranker_options=dict(setting.options) if named else {},
            seed_transform=setting.seed_transform,
            explain=0,
            auto_proximities=auto,
            max_candidates=self.max_candidates,
            max_chars_per_doc=self.max_chars_per_doc,
        )


CLI_DOOR = Door()
"""``grapher eval``'s door: the core reranker, its embedder answering."""


def reranker_for(setting: Setting, built: Mapping[str, Any], door: Door = CLI_DOOR) -> Any:
    """The reranker of one configuration at ``door``; ``built``: learned rankers loaded once."""
    reranker = door.settings(setting, built).reranker()
    if door.corpus is not None:
        reranker.diagnostics.corpus = door.corpus
    return reranker


def rank_pool(
    reranker: Any,
    pool: Sequence[Candidate],
    query: str,
    query_embedding: np.ndarray | None,
    answer: Callable[[Any], Any] | None = None,
) -> list[str]:
    """The ids of one question's pool, best first, as ``reranker`` orders them."""
    return [
        ranked.id for ranked in rerank_pool(reranker, pool, query, query_embedding, answer).ranked
    ]


def rerank_pool(
    reranker: Any,
    pool: Sequence[Candidate],
    query: str,
    query_embedding: np.ndarray | None,
    answer: Callable[[Any], Any] | None = None,
) -> Reranking:
    """The one ranking call of an evaluation, the same request every door runs: the pool
    carries what vectors it has, anything else the call asks for ``answer`` gives (the
    door's model and store; default the core's own embedder)."""
    from grapher_core.request import run_call

    return run_call(reranker.call(pool, query=query, query_embedding=query_embedding), answer)
