"""Every setting of a request in one frozen value, and the engine it builds.

Both wrappers build a :class:`RerankSettings` from their flat fields in one place
(:meth:`RerankSettings.from_fields`), configs serialise exactly it (:meth:`to_config`,
:meth:`from_config`), ``grapher eval`` writes it, and :func:`engine_for` turns it into the one
engine a door holds. A door that cannot honour a setting refuses it when it loads
(:meth:`RerankSettings.refuse_unhonoured`), naming the field and the fix: it never runs
something else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from grapher_core.errors import ConfigError, GraphERError
from grapher_core.ranking.base import Ranker
from grapher_core.ranking.config import (
    CONFIG_VERSION,
    DOOR_DEFAULT_KEYS,
    load_config,
    refuse_unexpanded,
)
from grapher_core.request.validation import (
    check_bound,
    check_explain,
    check_proximities,
    check_score_threshold,
    check_seed_transform,
)

if TYPE_CHECKING:
    from grapher_core.expand.reach import Expansion, HubKeys
    from grapher_core.request.engine import Engine
    from grapher_core.rerank import GraphReranker

__all__ = ["SCORE_SEEDS", "RerankSettings", "config_fields", "engine_for", "settings_of"]

SCORE_SEEDS = ("auto", "raw", "minmax")
"""Seed rules that read the retriever's scores: a door must be able to hand them over."""

EXPAND_FIELDS: dict[str, str] = {
    "expand_seeds": "seeds",
    "expand_hops": "hops",
    "expand_budget": "budget",
    "prune_threshold": "prune_threshold",
    "expand_max_fetched": "max_fetched",
    "expand_max_seconds": "max_seconds",
    "expand_max_per_key": "max_per_key",
}
"""The wrappers' flat expansion fields and the :class:`Expansion` field each one sets."""


@dataclass(frozen=True)
class RerankSettings:
    """What one request does, validated once, the same for every door.

    ``proximities``: the edge builders (``None``: detected from the metadata on every call);
    ``auto_proximities``: also detect beside the given ones (``None``: only when none given);
    ``ranker`` a registered name or a :class:`~grapher_core.ranking.base.Ranker`, with
    ``alpha`` and ``ranker_options``; ``seed_transform`` (``None``: the core's rule); ``explain``
    neighbours per result; ``strict``; the bounds ``max_candidates`` and ``max_chars_per_doc``;
    ``score_threshold``; ``top_n``; ``expansion`` (``None``: rerank the candidates only; an
    :class:`~grapher_core.expand.Expansion` expands when the door has a neighbour source).
    """

    proximities: tuple[Any, ...] | None = None
    ranker: Any = "gcs"
    alpha: float | None = None
    ranker_options: Mapping[str, Any] = field(default_factory=dict)
    seed_transform: str | None = None
    explain: int = 3
    strict: bool = False
    auto_proximities: bool | None = None
    max_candidates: int | None = None
    max_chars_per_doc: int | None = None
    score_threshold: float | None = None
    top_n: int | None = None
    expansion: Expansion | None = None

    def __post_init__(self) -> None:
        if self.proximities is not None:
            object.__setattr__(self, "proximities", check_proximities(self.proximities))
        _check_ranker(self.ranker, self.alpha)
        if not isinstance(self.ranker_options, Mapping):
            raise ConfigError(f"ranker_options must be a mapping, got {self.ranker_options!r}")
        object.__setattr__(self, "ranker_options", MappingProxyType(dict(self.ranker_options)))
        check_seed_transform(self.seed_transform)
        check_explain(self.explain)
        for name in ("strict",) + (() if self.auto_proximities is None else ("auto_proximities",)):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be True or False, got {getattr(self, name)!r}")
        check_bound("max_candidates", self.max_candidates)
        check_bound("max_chars_per_doc", self.max_chars_per_doc)
        object.__setattr__(self, "score_threshold", check_score_threshold(self.score_threshold))
        if self.top_n is not None and (
            isinstance(self.top_n, bool) or not isinstance(self.top_n, int) or self.top_n < 0
        ):
            raise ConfigError(f"top_n must be an integer >= 0 or None, got {self.top_n!r}")
        if self.expansion is not None:
            from grapher_core.expand.reach import Expansion

            if not isinstance(self.expansion, Expansion):
                raise ConfigError(f"expansion must be an Expansion or None, got {self.expansion!r}")

    # -- building ------------------------------------------------------------------------------
    def reranker(self) -> GraphReranker:
        """The core reranker these settings describe (the ranker built and validated here)."""
        from grapher_core.rerank import GraphReranker

        return GraphReranker(
            None if self.proximities is None else list(self.proximities),
            self.ranker,
            self.alpha,
            seed_transform=self.seed_transform,
            explain=self.explain,
            strict=self.strict,
            auto_proximities=self.auto_proximities,
            max_candidates=self.max_candidates,
            max_chars_per_doc=self.max_chars_per_doc,
            score_threshold=self.score_threshold,
            **dict(self.ranker_options),
        )

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any], *, expand: bool) -> RerankSettings:
        """The settings of a wrapper's flat fields (``explain`` a bool, ``expand_*`` one each;
        an empty ``proximities`` list: detect). ``expand``: the wrapper has a neighbour source.
        The expansion fields are validated either way."""
        from grapher_core.expand.reach import Expansion

        expansion = Expansion(
            **{name: fields[key] for key, name in EXPAND_FIELDS.items() if key in fields}
        )
        proximities = fields.get("proximities") or None
        return cls(
            proximities=None if proximities is None else tuple(proximities),
            ranker=fields.get("ranker", "gcs"),
            alpha=fields.get("alpha"),
            seed_transform=fields.get("seed_transform"),
            explain=3 if fields.get("explain") else 0,
            strict=bool(fields.get("strict", False)),
            auto_proximities=fields.get("auto_proximities"),
            max_candidates=fields.get("max_candidates"),
            max_chars_per_doc=fields.get("max_chars_per_doc"),
            score_threshold=fields.get("score_threshold"),
            top_n=fields.get("top_n"),
            expansion=expansion if expand else None,
        )

    def wrapper_fields(self) -> dict[str, Any]:
        """The wrappers' flat fields for these settings (the inverse of :meth:`from_fields`;
        a wrapper gets ``[]`` for "detect" and a bool ``explain``)."""
        out: dict[str, Any] = {
            "proximities": list(self.proximities or []),
            "ranker": self.ranker,
            "alpha": self.alpha,
            "seed_transform": self.seed_transform,
            "explain": self.explain > 0,
            "strict": self.strict,
            "max_candidates": self.max_candidates,
            "max_chars_per_doc": self.max_chars_per_doc,
            "score_threshold": self.score_threshold,
        }
        if self.ranker_options:
            out["ranker"] = self.reranker().ranker
            out["alpha"] = None
        if self.top_n is not None:
            out["top_n"] = self.top_n
        if self.expansion is not None:
            for key, name in EXPAND_FIELDS.items():
                out[key] = getattr(self.expansion, name)
        return out

    # -- doors ---------------------------------------------------------------------------------
    def refuse_unhonoured(self, *, has_scores: bool, door: str, fix: str, where: str) -> None:
        """Refuse, naming the field and ``fix``, a setting ``door`` cannot honour: a seed rule
        that reads the retriever's scores in a door that has none would silently seed from the
        order instead -- what was evaluated would not be what runs."""
        if self.seed_transform in SCORE_SEEDS and not has_scores:
            raise ConfigError(
                f"{where}: key 'seed_transform': {self.seed_transform!r} seeds from the "
                f"retriever's scores, but {door} is given none: {fix}, or use "
                "seed_transform 'rank' (what ran instead would not be what was evaluated)"
            )

    # -- configs -------------------------------------------------------------------------------
    @classmethod
    def from_config(cls, path: str | Path) -> RerankSettings:
        """The settings a config file holds (validated in full by the config loader)."""
        return settings_of(load_config(path), str(path))

    def to_config(self, **extra: Any) -> dict[str, Any]:
        """These settings as a config (``grapher_config`` 1), ``extra`` keys (``note``,
        ``evaluation``, ``fetch_k``) added; a ranker given as an object cannot be written."""
        from grapher_core.edges.serialise import proximity_to_dict

        if not isinstance(self.ranker, str):
            raise ConfigError(
                f"ranker {self.ranker!r} is an object: a config names a registered ranker "
                "(register_ranker) so it can be rebuilt"
            )
        config: dict[str, Any] = {
            "grapher_config": CONFIG_VERSION,
            "ranker": self.ranker,
            "alpha": self.alpha,
            "seed_transform": self.seed_transform,
        }
        if self.ranker_options:
            config["ranker_options"] = dict(self.ranker_options)
        config["top_n"] = self.top_n
        config["proximities"] = (
            None if self.proximities is None else [proximity_to_dict(p) for p in self.proximities]
        )
        defaults = RerankSettings()
        for key in DOOR_DEFAULT_KEYS:  # left at the default: the loading door's own
            if getattr(self, key) != getattr(defaults, key):
                config[key] = getattr(self, key)
        if self.expansion is not None:
            config["expansion"] = dataclasses.asdict(self.expansion)
        return {**config, **extra}


def engine_for(
    settings: RerankSettings,
    source: Any = None,
    *,
    embedder: Any = None,
    hubs: HubKeys | None = None,
    ego_index: Any = None,
) -> Engine:
    """The engine a door holds for ``settings``: the core reranker; the core behind expansion
    when the settings expand and the door has a neighbour ``source``; or, given an
    ``ego_index`` (:class:`~grapher_core.expand.egograph.EgoGraphIndex`) and a ``source``, the
    core over the candidates joined with the query's nearest ego-graphs. ``embedder`` embeds
    what the source returns without vectors when the engine is run by the core itself;
    ``hubs``: the hub keys a door keeps across rebuilt engines."""
    core = settings.reranker()
    if ego_index is not None:
        from grapher_core.expand.egograph import EgoGraphReranker

        if source is None:
            raise ConfigError("an ego-graph index needs a neighbour source to fetch members from")
        return EgoGraphReranker(core, ego_index, source)
    if settings.expansion is None or source is None:
        return core
    from grapher_core.expand.expansion import ExpandingReranker

    return ExpandingReranker(core, source, settings.expansion, embedder=embedder, hubs=hubs)


def settings_of(config: Mapping[str, Any], where: str = "config") -> RerankSettings:
    """The settings a loaded (checked) ``config`` holds; errors name ``where`` and the key."""
    from grapher_core.expand.reach import Expansion

    expansion = config.get("expansion")
    if expansion is not None:
        try:
            expansion = Expansion(**expansion)
        except (GraphERError, TypeError) as error:
            raise ConfigError(
                f"{where}: key 'expansion': {expansion!r} is refused: {error}"
            ) from None
    proximities = config.get("proximities")
    return RerankSettings(
        proximities=None if proximities is None else tuple(proximities),
        ranker=config["ranker"],
        alpha=config["alpha"],
        ranker_options=config.get("ranker_options") or {},
        seed_transform=config.get("seed_transform"),
        explain=3 if config.get("explain") is None else config["explain"],
        strict=bool(config.get("strict")),
        max_candidates=config.get("max_candidates"),
        max_chars_per_doc=config.get("max_chars_per_doc"),
        score_threshold=config.get("score_threshold"),
        top_n=config.get("top_n"),
        expansion=expansion,
    )


def door_config(
    path: str | Path, door: str, fields: Mapping[str, Any], source: str
) -> tuple[dict[str, Any], RerankSettings]:
    """A config as a wrapper's ``from_config`` loads it: checked, with its settings; refused
    when it expands and ``fields`` give no ``neighbour_source`` (``source`` says what to pass)."""
    config = load_config(path)
    refuse_unexpanded(
        config,
        has_source=fields.get("neighbour_source") is not None,
        door=f"{door} without neighbour_source",
        fix=f"pass neighbour_source=<{source}>",
        where=str(path),
    )
    return config, settings_of(config, str(path))


def config_fields(config: Mapping[str, Any], settings: RerankSettings) -> dict[str, Any]:
    """The wrappers' fields for a loaded ``config``: its settings, the keys it leaves to the
    door (``null`` or absent) left out so the wrapper keeps its own defaults."""
    fields = settings.wrapper_fields()
    for key in DOOR_DEFAULT_KEYS:
        if config.get(key) is None:
            fields.pop(key, None)
    if config.get("expansion") is None:
        for key in [k for k in fields if k.startswith("expand_") or k == "prune_threshold"]:
            del fields[key]
    return fields


def _check_ranker(ranker: object, alpha: object) -> None:
    """A registered name or a :class:`Ranker` instance (a name's options are checked when the
    engine is built)."""
    if isinstance(ranker, str):
        from grapher_core.allowed import is_allowed
        from grapher_core.ranking.registry import available_rankers

        if not is_allowed("ranker", ranker.lower()):
            raise ConfigError(
                f"unknown ranker {ranker!r}; choose one of {', '.join(available_rankers())}"
            )
        return
    if isinstance(ranker, type) or not isinstance(ranker, Ranker):
        raise ConfigError(f"ranker must be a registered name or a Ranker, got {ranker!r}")
    if alpha is not None:
        raise ConfigError("alpha applies to named rankers only; set it on your Ranker instead")
