"""Rankers by name: ``make_ranker("gcs")``; optional backends are imported on first use.

The names live in the one allow-list of :mod:`grapher_core.allowed`, so a name a config file
holds resolves through the same table as a name given in code, and nothing else is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grapher_core.allowed import Lazy, allowed_names, is_allowed, register, resolve
from grapher_core.errors import ConfigError, InputTypeError
from grapher_core.ranking.base import BaselineRanker, Ranker
from grapher_core.ranking.propagation import GCSRanker, PPRRanker

RankerFactory = Callable[..., Ranker]

# Built-in names. Lazy entries are imported on first use, so optional backends (torch for the
# GAT) cost nothing until someone asks for them.
_BUILT_IN: dict[str, RankerFactory | Lazy] = {
    "baseline": BaselineRanker,
    "gcs": GCSRanker,
    "ppr": PPRRanker,
    "gat": Lazy("grapher_core.learned.gat.ranker", "GATRanker"),
    "mlp": Lazy("grapher_core.learned.gat.ranker", "MLPRanker"),
    "g-rag": Lazy("grapher_core.learned.grag.ranker", "GRAGRanker", extra="grag"),
    "qa-adjust": Lazy("grapher_core.ranking.score_adjust", "ScoreAdjustRanker"),
    "qa-gnn": Lazy("grapher_core.learned.qa_gnn.ranker", "QAGNNRanker"),
}
for _name, _factory in _BUILT_IN.items():
    register("ranker", _name, _factory)


def register_ranker(name: str, factory: RankerFactory | Lazy | str) -> None:
    """Make ``make_ranker(name)``, ``GraphReranker(ranker=name)`` and a config naming ``name``
    build ``factory``: a class or factory, a :class:`~grapher_core.allowed.Lazy`, or a
    ``"module:attribute"`` string written in code (imported on first use)."""
    if isinstance(factory, str):
        module, colon, attribute = factory.partition(":")
        if not colon or not module or not attribute:
            raise InputTypeError(f"register_ranker: expected 'module:attribute', got {factory!r}")
        factory = Lazy(module, attribute)
    if not isinstance(name, str) or not name:
        raise InputTypeError(f"register_ranker: the name must be a non-empty string, got {name!r}")
    register("ranker", name.lower(), factory)


def available_rankers() -> list[str]:
    return allowed_names("ranker")


def make_ranker(ranker: str | Ranker, alpha: float | None = None, **options: Any) -> Ranker:
    """Resolve a ranker name ("gcs", "ppr", "baseline", "gat", ...) or pass a Ranker through."""
    if not isinstance(ranker, str):
        if isinstance(ranker, type):
            raise InputTypeError(
                f"ranker {ranker.__name__} is a class: pass an instance, "
                f"{ranker.__name__}(), or a name such as 'gcs'"
            )
        if not isinstance(ranker, Ranker):
            raise InputTypeError(f"ranker must be a name or implement Ranker.rank, got {ranker!r}")
        if alpha is not None:
            raise ConfigError("alpha applies to named rankers only; set it on your Ranker instead")
        return ranker
    name = ranker.lower()
    if not is_allowed("ranker", name):
        raise ConfigError(
            f"unknown ranker {ranker!r}; choose one of {', '.join(available_rankers())}"
        )
    factory = resolve("ranker", name, key="ranker")
    if alpha is not None:
        options["alpha"] = alpha
    return factory(**options)
