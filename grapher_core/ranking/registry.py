"""Rankers by name: ``make_ranker("gcs")``; optional backends are imported on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

try:  # scipy's compiled csr kernels: the same ones `@` ends in, without their dispatch cost
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
    from scipy.sparse._sparsetools import csr_scale_rows as _csr_scale_rows
except ImportError:  # pragma: no cover
    _csr_matvec = None
    _csr_scale_rows = None

from grapher_core.errors import ConfigError, InputTypeError, MissingDependencyError
from grapher_core.ranking.base import BaselineRanker, Ranker
from grapher_core.ranking.propagation import GCSRanker, PPRRanker

RankerFactory = Callable[..., Ranker]


# Built-in names. Entries given as "module:attribute" are imported on first use, so optional
# backends (torch for the GAT) cost nothing until someone asks for them.
_REGISTRY: dict[str, RankerFactory | str] = {
    "baseline": BaselineRanker,
    "gcs": GCSRanker,
    "ppr": PPRRanker,
    "gat": "grapher_core.learned.gat.ranker:GATRanker",
    "mlp": "grapher_core.learned.gat.ranker:MLPRanker",
    "g-rag": "grapher_core.learned.grag.ranker:GRAGRanker",
    "qa-adjust": "grapher_core.ranking.score_adjust:ScoreAdjustRanker",
    "qa-gnn": "grapher_core.learned.qa_gnn.ranker:QAGNNRanker",
}


def register_ranker(name: str, factory: RankerFactory | str) -> None:
    """Make ``make_ranker(name)`` (and ``GraphReranker(ranker=name)``) build ``factory``."""
    _REGISTRY[name] = factory


def available_rankers() -> list[str]:
    return sorted(_REGISTRY)


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
    try:
        factory = _REGISTRY[ranker.lower()]
    except KeyError:
        raise ConfigError(
            f"unknown ranker {ranker!r}; choose one of {', '.join(available_rankers())}"
        ) from None
    if isinstance(factory, str):
        module_name, _, attribute = factory.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attribute)
        except ImportError as error:
            raise MissingDependencyError(
                f"ranker {ranker!r} needs an optional extra: "
                f"pip install 'grapher-rerank[gat]' ({error})"
            ) from error
    if alpha is not None:
        options["alpha"] = alpha
    return factory(**options)
