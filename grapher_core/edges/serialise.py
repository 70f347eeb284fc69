"""Proximities as plain dicts and back, for framework configs (LlamaIndex ``to_dict``).

``{"class": "ForeignKeys", "field": "links", ...}``: the built-in proximities of
:mod:`grapher_core.edges` by name, any other dataclass proximity by ``"module:Class"``
(imported only when it lives in ``grapher_core``: a config never imports arbitrary code).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from grapher_core.edges.entities import SharedEntities
from grapher_core.edges.keys import AdjacentChunks, ForeignKeys
from grapher_core.edges.links import ChunkLinks
from grapher_core.edges.semantic import SemanticKNN
from grapher_core.errors import ConfigError

__all__ = ["proximity_from_dict", "proximity_to_dict"]

CLASS_KEY = "class"

BUILT_IN: dict[str, type] = {
    cls.__name__: cls
    for cls in (ForeignKeys, AdjacentChunks, SharedEntities, SemanticKNN, ChunkLinks)
}
"""The proximities a config names by class name alone."""


def proximity_to_dict(proximity: Any) -> dict[str, Any]:
    """The proximity's fields and its class; a non-dataclass proximity is refused by name."""
    if not dataclasses.is_dataclass(proximity) or isinstance(proximity, type):
        raise ConfigError(
            f"{type(proximity).__name__} is not a dataclass: it cannot be "
            "serialised; build the postprocessor in code instead"
        )
    cls = type(proximity)
    name = (
        cls.__name__
        if BUILT_IN.get(cls.__name__) is cls
        else f"{cls.__module__}:{cls.__qualname__}"
    )
    fields = {f.name: getattr(proximity, f.name) for f in dataclasses.fields(proximity)}
    return {CLASS_KEY: name, **fields}


def proximity_from_dict(data: dict[str, Any]) -> Any:
    """The proximity a :func:`proximity_to_dict` dict describes."""
    name = data.get(CLASS_KEY)
    if not isinstance(name, str):
        raise ConfigError(f"a serialised proximity needs a {CLASS_KEY!r} key, got {data!r}")
    if ":" in name:
        module, _, attribute = name.partition(":")
        if not module.startswith("grapher_core."):
            raise ConfigError(
                f"refusing to import {module!r} from a config: only grapher_core "
                "proximities are rebuilt from dicts"
            )
        cls = getattr(importlib.import_module(module), attribute, None)
    else:
        cls = BUILT_IN.get(name)
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
        raise ConfigError(f"unknown proximity class {name!r}")
    options = {k: v for k, v in data.items() if k != CLASS_KEY}
    return cls(**options)
