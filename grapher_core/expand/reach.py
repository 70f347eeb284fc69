"""How far expansion reaches and what it may cost: one value, validated once.

:class:`Expansion` (seeds, hops, budget, pruning, reverse links, entities, the seed rule and the
per-query bounds), what one expansion did (:class:`ExpansionResult`), and the hub keys a
reranker remembers across queries (:class:`HubKeys`).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any

from grapher_core.candidates import Candidate
from grapher_core.edges.base import LinkKey
from grapher_core.errors import ConfigError, InputTypeError

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_HOPS",
    "DEFAULT_MAX_FETCHED",
    "DEFAULT_MAX_PER_KEY",
    "DEFAULT_MAX_SECONDS",
    "DEFAULT_SEEDS",
    "SEED_RULES",
    "Expansion",
    "ExpansionResult",
    "HubKeys",
    "check_expansion",
]

DEFAULT_SEEDS = 3
DEFAULT_HOPS = 1
DEFAULT_BUDGET = 10
DEFAULT_MAX_FETCHED = 200
"""Most objects fetched per query: 20 times the objects a default query adds (``budget``), so
choosing the 10 most query-similar has a pool, while a store answer is never unbounded."""
DEFAULT_MAX_SECONDS = 0.2
"""Seconds after the first fetch of a query after which no hop starts: the default single hop
always runs; a second hop runs only if the first one took less."""
DEFAULT_MAX_PER_KEY = 50
"""A link key matching more objects than this is a hub (a category page, a list article) and
is skipped: it links everything and says nothing about any one object."""
SEED_RULES = ("calibrated", "floor")
"""How fetched objects are seeded: ``calibrated`` (query cosine on the candidates' score
scale) or ``floor`` (the lowest candidate score: the retriever ranked them below every
candidate, so only links may lift them)."""


@dataclass(frozen=True)
class Expansion:
    """How far expansion reaches, one value validated here for every caller (the core, the
    LangChain and LlamaIndex wrappers' flat ``expand_*`` fields, the bench).

    ``seeds`` (m): how many top candidates to expand from; ``hops`` (k): link steps;
    ``budget``: most objects added per query (0: none); ``prune_threshold``: minimum query
    cosine of a fetched object (``None``: no threshold); ``reverse``: also fetch objects linking
    *to* the seeds (needs the store to filter on list fields); ``follow_entities``: follow
    shared entities too (capped by the proximity's ``max_share``); ``seed_rule``: how fetched
    objects are seeded (:data:`SEED_RULES`).

    What one query may cost (``None``: no bound; each bound reached is said once):
    ``max_fetched`` (default 200): most objects fetched from the source over all hops;
    ``max_seconds`` (default 0.2): no hop starts this long after the query's first fetch (a
    fetch already running is not interrupted, so a query takes at most this plus one hop);
    ``max_per_key`` (default 50): a link key matching more objects in one fetch is a hub and
    its objects are skipped (kept only when another key found them too).
    """

    seeds: int = DEFAULT_SEEDS
    hops: int = DEFAULT_HOPS
    budget: int = DEFAULT_BUDGET
    prune_threshold: float | None = None
    reverse: bool = False
    follow_entities: bool = False
    seed_rule: str = "calibrated"
    max_fetched: int | None = DEFAULT_MAX_FETCHED
    max_seconds: float | None = DEFAULT_MAX_SECONDS
    max_per_key: int | None = DEFAULT_MAX_PER_KEY

    def __post_init__(self) -> None:
        for name, low in (("seeds", 1), ("hops", 1), ("budget", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"expansion {name} must be an integer >= {low}, got {value!r}")
        for name in ("max_fetched", "max_per_key"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ConfigError(
                    f"expansion {name} must be an integer >= 1 or None, got {value!r}"
                )
        seconds = self.max_seconds
        if seconds is not None:
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, (int, float))
                or not math.isfinite(float(seconds))
                or seconds <= 0
            ):
                raise ConfigError(
                    f"expansion max_seconds must be a finite number > 0 or None, got {seconds!r}"
                )
            object.__setattr__(self, "max_seconds", float(seconds))
        threshold = self.prune_threshold
        if threshold is not None:
            if (
                isinstance(threshold, bool)
                or not isinstance(threshold, (int, float))
                or not -1.0 <= float(threshold) <= 1.0
            ):
                raise ConfigError(
                    f"expansion prune_threshold is a cosine in [-1, 1] or None, got {threshold!r}"
                )
            object.__setattr__(self, "prune_threshold", float(threshold))
        for name in ("reverse", "follow_entities"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(
                    f"expansion {name} must be True or False, got {getattr(self, name)!r}"
                )
        if not isinstance(self.seed_rule, str) or self.seed_rule not in SEED_RULES:
            raise ConfigError(
                f"expansion seed_rule must be one of {SEED_RULES}, got {self.seed_rule!r}"
            )


@dataclass(frozen=True)
class ExpansionResult:
    """The enlarged candidate list (originals first, in order, then fetched objects) and what
    it cost: ``fetch_calls`` store round trips, ``fetched`` objects returned by the store,
    ``seconds`` from the first fetch to the end of the last hop; ``stopped`` names the bound
    that ended it early (``"max_fetched"`` or ``"max_seconds"``, else ``None``) and
    ``hub_keys`` the link keys skipped as hubs (found now or remembered)."""

    candidates: tuple[Candidate, ...]
    added: tuple[str, ...]
    fetch_calls: int
    fetched: int
    similarities: dict[str, float] = field(default_factory=dict)
    stopped: str | None = None
    hub_keys: tuple[LinkKey, ...] = ()
    seconds: float = 0.0


class HubKeys:
    """Link keys found to be hubs, with the number of objects they matched: later queries skip
    them before any fetch. Bounded (the oldest are forgotten first) and thread-safe; one is
    shared by the expanders a wrapper builds per call."""

    def __init__(self, size: int = 4096) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"HubKeys size must be an integer >= 1, got {size!r}")
        self.size = size
        self._counts: dict[LinkKey, int] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """Picklable and copyable (a wrapper sent to a worker): the lock stays behind."""
        with self._lock:
            return {"size": self.size, "counts": dict(self._counts)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["size"])  # type: ignore[misc]
        self._counts = dict(state["counts"])

    def __len__(self) -> int:
        return len(self._counts)

    def count(self, key: LinkKey) -> int:
        """Objects ``key`` was seen to match in one fetch (0: not known as a hub)."""
        return self._counts.get(key, 0)

    def add(self, key: LinkKey, count: int) -> None:
        """Remember ``key`` as matching at least ``count`` objects."""
        with self._lock:
            self._counts[key] = max(count, self._counts.pop(key, 0))
            while len(self._counts) > self.size:
                del self._counts[next(iter(self._counts))]


def check_expansion(value: object) -> Expansion:
    """``None`` as the defaults; anything but an :class:`Expansion` named."""
    if value is None:
        return Expansion()
    if not isinstance(value, Expansion):
        raise InputTypeError(
            f"expansion must be an Expansion(seeds=..., hops=...), got {type(value).__name__}"
        )
    return value
