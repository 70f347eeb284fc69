"""The configurations an evaluation tries: each ranker at its alphas and both seed policies over
the graph detected in the metadata, plus the variants worth a row (chunk order at full share,
each detected graph alone), capped so an evaluation stays short."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from grapher_core.errors import GraphERError, InputError, MissingDependencyError

__all__ = [
    "ALPHAS",
    "DEFAULT",
    "FULL_CHUNK_ORDER",
    "MAX_CONFIGS",
    "SEEDS",
    "Setting",
    "build_grid",
    "missing_extras",
    "need_a_ranker",
    "rankers_available",
]

ALPHAS: dict[str, tuple[float | None, ...]] = {"gcs": (0.1, 0.3, 0.5), "ppr": (0.3, 0.8)}
"""Alphas tried per ranker (the first of each is its tuned default); other rankers: theirs."""
SEEDS = {"rank": "rank", "score": "auto"}
"""Seed policies tried: the table's name -> ``seed_transform``."""
MAX_CONFIGS = 16
FULL_CHUNK_ORDER: tuple[tuple[str, Any], ...] = (("alone_weights", {}), ("beside_weights", {}))
"""GCS options that let chunk order pass its whole share, alone or beside other kinds."""


@dataclass(frozen=True)
class Setting:
    """One configuration of the grid: what a written config would save for it."""

    ranker: str
    alpha: float | None
    seeds: str  # "rank" or "score"
    graph: str  # "detected" or a description of the one proximity used
    proximities: tuple[Any, ...] | None = field(default=None, compare=False)  # None: detect
    # the ranker's keyword options beyond alpha (values may be dicts: kept out of hash and ==)
    options: tuple[tuple[str, Any], ...] = field(default=(), compare=False)

    @property
    def seed_transform(self) -> str:
        return SEEDS[self.seeds]

    @property
    def alpha_text(self) -> str:
        """The alpha as the table and the label print it."""
        return "default" if self.alpha is None else f"{self.alpha:g}"

    @property
    def label(self) -> str:
        return f"{self.ranker} alpha={self.alpha_text} seeds={self.seeds} graph={self.graph}"


DEFAULT = Setting("gcs", ALPHAS["gcs"][0], "rank", "detected")
"""The configuration a user gets without choosing (GCS at its defaults, rank seeds, the graph
detected in the metadata): the one an alternative must beat, significantly, to be chosen."""


def build_grid(
    rankers: Sequence[str],
    detected: Sequence[Any],
    available: dict[str, str | None],
    seeds: Sequence[str] = tuple(SEEDS),
) -> list[Setting]:
    """The configurations tried: each ranker at its alphas x the seed policies (``seeds``:
    both, or ``("rank",)`` when the retriever hands over no score) over the detected graph,
    GCS with chunk order at full share when chunk order is detected, then (with several
    detected) GCS over each graph alone; at most :data:`MAX_CONFIGS`. ``available``: ranker
    -> ``None``, or why it is skipped."""
    from grapher_core.edges.detect import describe

    grid = [
        Setting(ranker, alpha, policy, "detected")
        for ranker in rankers
        if available.get(ranker) is None
        for alpha in ALPHAS.get(ranker, (None,))
        for policy in seeds
    ]
    if "gcs" in rankers and any(getattr(p, "kind", None) == "contextual" for p in detected):
        full_label = "detected, chunk order full"
        grid.append(Setting("gcs", ALPHAS["gcs"][0], "rank", full_label, None, FULL_CHUNK_ORDER))
    if len(detected) > 1 and "gcs" in rankers:
        grid += [Setting("gcs", ALPHAS["gcs"][0], "rank", describe([p]), (p,)) for p in detected]
    return grid[:MAX_CONFIGS]


def rankers_available(
    rankers: Sequence[str], embedder: Any, said: dict[str, tuple[str, ...]] | None = None
) -> tuple[dict[str, str | None], dict[str, Any]]:
    """Per ranker: ``None`` (usable) or the reason it is skipped; and the learned rankers
    built once (their checkpoint loads once, not per configuration). ``said``, when given,
    receives what each built ranker said while loading that it does not fit
    (:class:`~grapher_core.diagnostics.RankerUnfitWarning`, a checkpoint's own caveat), so
    the choice can read it."""
    reasons: dict[str, str | None] = {}
    built: dict[str, Any] = {}
    for name in rankers:
        if name in ALPHAS or name == "baseline":
            reasons[name] = None
            continue
        try:
            built[name], messages = _build_ranker(name, embedder)
        except (GraphERError, ImportError, OSError, TypeError) as error:
            reasons[name] = " ".join(str(error).split()) or type(error).__name__
            continue
        reasons[name] = None
        if said is not None and messages:
            said[name] = messages
    return reasons, built


def missing_extras(rankers: Sequence[str]) -> dict[str, str]:
    """Per requested ranker whose optional extra is not installed, the skip line naming the
    extra; when that is every requested ranker, a :class:`MissingDependencyError` before any
    input is read (a choice among no configuration is no choice)."""
    from grapher_core.allowed import Lazy, resolve

    extras: dict[str, str] = {}
    for name in rankers:
        target = resolve("ranker", name, load=False)
        if isinstance(target, Lazy):
            try:
                target.load()
            except MissingDependencyError:
                extras[name] = target.extra
    if extras and len(extras) == len(rankers):
        raise MissingDependencyError(
            f"--rankers {','.join(rankers)}: every requested ranker needs an extra that is not "
            f"installed: pip install 'grapher-rerank[{','.join(sorted(set(extras.values())))}]'"
            ", or add gcs or ppr (nothing to evaluate otherwise)"
        )
    return {
        name: f"needs the {extra} extra: pip install 'grapher-rerank[{extra}]'"
        for name, extra in extras.items()
    }


def need_a_ranker(rankers: Sequence[str], skipped: dict[str, str | None]) -> None:
    """Refuse an evaluation whose every requested ranker was skipped."""
    if any(skipped.get(name) is None for name in rankers):
        return
    reasons = "; ".join(f"{name}: {skipped[name]}" for name in rankers)
    raise InputError(
        f"--rankers {','.join(rankers)}: every requested ranker was skipped ({reasons}); "
        "nothing to evaluate: fix the reason or add gcs or ppr"
    )


def _build_ranker(name: str, embedder: Any) -> tuple[Any, tuple[str, ...]]:
    """The ranker, and what it said while loading that it does not fit these inputs."""
    from grapher_core.diagnostics import RankerUnfitWarning
    from grapher_core.ranking.registry import make_ranker

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:  # a learned ranker checks that the vectors are those it was trained on
            ranker = make_ranker(name, embedder=embedder)
        except TypeError:  # a ranker that takes no embedder
            ranker = make_ranker(name)
    heard = [str(w.message) for w in caught if issubclass(w.category, RankerUnfitWarning)]
    caveat = getattr(ranker, "caveat", None)  # said once per process: maybe before this run
    category = getattr(ranker, "caveat_category", None)
    if (
        caveat
        and getattr(ranker, "shipped", False)
        and isinstance(category, type)
        and issubclass(category, RankerUnfitWarning)
    ):
        heard.append(caveat)
    return ranker, tuple(dict.fromkeys(heard))
