"""Rankers by name: ``make_ranker("gcs")``; optional backends are imported on first use.

The names live in the one allow-list of :mod:`grapher_core.allowed`, so a name a config file
holds resolves through the same table as a name given in code, and nothing else is imported.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from grapher_core.allowed import Lazy, allowed_names, is_allowed, name_of, register, resolve
from grapher_core.errors import ConfigError, GraphERError, InputTypeError
from grapher_core.ranking.base import BaselineRanker, Ranker
from grapher_core.ranking.propagation import GCSRanker, PPRRanker
from grapher_core.utils.schema import Schema, check_field_names, check_values, declared_schema

__all__ = [
    "RANKER_CLASS_KEY",
    "available_rankers",
    "declared_options",
    "make_ranker",
    "ranker_from_payload",
    "ranker_to_payload",
    "register_ranker",
]

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


def register_ranker(
    name: str, factory: RankerFactory | Lazy | str, *, replace: bool = False
) -> None:
    """Make ``make_ranker(name)``, ``GraphReranker(ranker=name)`` and a config naming ``name``
    build ``factory``: a class or factory, a :class:`~grapher_core.allowed.Lazy`, or a
    ``"module:attribute"`` string written in code (imported on first use). A name already
    registered (``"gcs"``, ...) is refused unless ``replace=True``."""
    if isinstance(factory, str):
        module, colon, attribute = factory.partition(":")
        if not colon or not module or not attribute:
            raise InputTypeError(f"register_ranker: expected 'module:attribute', got {factory!r}")
        factory = Lazy(module, attribute)
    if not isinstance(name, str) or not name:
        raise InputTypeError(f"register_ranker: the name must be a non-empty string, got {name!r}")
    register("ranker", name.lower(), factory, replace=replace)


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
    schema = declared_schema(factory) if isinstance(factory, type) else None
    if schema is not None:  # a misspelt option names the closest one, not a bare TypeError
        check_field_names(f"ranker {name!r} ({factory.__name__})", options, schema)
    if alpha is not None:
        options["alpha"] = alpha
    return factory(**options)


def declared_options(name: str) -> Schema | None:
    """The ``FIELDS`` the ranker registered as ``name`` declares (what ``ranker_options`` may
    set), its backend imported as building it would; ``None`` when it declares none or its
    backend is not installed (building it then says so)."""
    try:
        target = resolve("ranker", name.lower())
    except GraphERError:
        return None
    return declared_schema(target) if isinstance(target, type) else None


RANKER_CLASS_KEY = "class"
"""The key naming a ranker's registered name in a payload's ``ranker`` object."""


def ranker_to_payload(ranker: object, where: str = "to_dict") -> str | dict[str, Any]:
    """A ranker as a payload writes it: a name as is; a dataclass ranker whose class is
    registered as ``{"class": name, **fields}`` (read back by :func:`ranker_from_payload`);
    anything else is refused naming the key, as ``to_config`` refuses a ranker object."""
    if isinstance(ranker, str):
        return ranker
    cls = type(ranker)
    name = name_of("ranker", cls)
    if name is None or not dataclasses.is_dataclass(ranker):
        raise ConfigError(
            f"{where}: key 'ranker': {cls.__name__} is not a registered dataclass ranker, so "
            "a payload cannot name it; register it (register_ranker('name', MyRanker)) or "
            "pass it in code: from_dict(data, ranker=...)"
        )
    fields = {f.name: _plain(getattr(ranker, f.name)) for f in dataclasses.fields(ranker)}
    try:
        json.dumps(fields)
    except (TypeError, ValueError) as error:
        raise ConfigError(
            f"{where}: key 'ranker': {cls.__name__}'s fields are not plain data ({error}); "
            "pass the ranker in code: from_dict(data, ranker=...)"
        ) from None
    return {RANKER_CLASS_KEY: name, **fields}


def _plain(value: Any) -> Any:
    """Tuples (a ranker's frozen pairs) as lists, as JSON writes them."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def ranker_from_payload(value: object, where: str = "payload", key: str = "ranker") -> Any:
    """The ranker a payload's ``ranker`` holds: a registered name (kept as the name), or a
    ``{"class": name, **fields}`` object whose fields are checked against the ranker's
    declared ``FIELDS`` (:mod:`grapher_core.utils.schema`) before it is built."""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where}: key {key!r}: expected a ranker name or an object, got "
            f"{type(value).__name__}; pass a Ranker in code: from_dict(data, ranker=...)"
        )
    name = value.get(RANKER_CLASS_KEY)
    resolve("ranker", name, where=where, key=f"{key}.{RANKER_CLASS_KEY}", load=False)
    options = {k: v for k, v in value.items() if k != RANKER_CLASS_KEY}
    schema = declared_options(str(name))
    if schema is None:
        raise ConfigError(
            f"{where}: key {key!r}: ranker {name!r} declares no fields a payload may set; "
            f"name it alone ({name!r}) or pass it in code: from_dict(data, ranker=...)"
        )
    options = check_values(where, options, schema, key=key, owner=str(name))
    try:
        return make_ranker(str(name), **options)
    except (GraphERError, TypeError, ValueError) as error:
        raise ConfigError(f"{where}: key {key!r}: {name!r} refuses {options!r}: {error}") from None
