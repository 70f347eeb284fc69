"""Proximities as plain dicts and back, for framework configs (LlamaIndex ``to_dict``).

``{"class": "ForeignKeys", "field": "links", ...}``: a proximity is named by the name it is
registered under in :mod:`grapher_core.allowed` (the built-ins by class name, a user's own after
``register_proximity(MyProximity)``). A name that is not registered is refused naming the file
and the key; nothing a file names is imported. Every other key is checked against the class's
declared ``FIELDS`` (:mod:`grapher_core.utils.schema`) before the proximity is built; a class of
your own without ``FIELDS`` gets its dataclass fields' names checked, and its own
``__post_init__`` checks the values.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from grapher_core.allowed import Lazy, name_of, register, register_proximity, resolve
from grapher_core.edges.entities import SharedEntities
from grapher_core.edges.keys import AdjacentChunks, ForeignKeys
from grapher_core.edges.links import ChunkLinks
from grapher_core.edges.semantic import SemanticKNN
from grapher_core.errors import ConfigError, GraphERError
from grapher_core.utils.schema import check_field_names, check_values, declared_schema

__all__ = ["proximities_from_dicts", "proximity_from_dict", "proximity_to_dict"]

CLASS_KEY = "class"

BUILT_IN: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        ForeignKeys,
        AdjacentChunks,
        SharedEntities,
        SemanticKNN,
        ChunkLinks,
    )
}
"""The proximities a config names by class name alone, with nothing registered."""
for _cls in BUILT_IN.values():
    register_proximity(_cls)
# Concept graphs pull in the enrichment package: imported when a file names them, not before.
register("proximity", "SharedConcepts", Lazy("grapher_core.edges.concepts", "SharedConcepts"))


def proximity_to_dict(proximity: Any) -> dict[str, Any]:
    """The proximity's fields and its registered name; a non-dataclass proximity is refused.

    An unregistered dataclass is written as ``module:qualname``: the payload can be read back
    once the class is registered (``register_proximity``), never by importing it."""
    if not dataclasses.is_dataclass(proximity) or isinstance(proximity, type):
        raise ConfigError(
            f"{type(proximity).__name__} is not a dataclass: it cannot be "
            "serialised; build the postprocessor in code instead"
        )
    cls = type(proximity)
    name = name_of("proximity", cls) or f"{cls.__module__}:{cls.__qualname__}"
    fields = {f.name: getattr(proximity, f.name) for f in dataclasses.fields(proximity)}
    return {CLASS_KEY: name, **fields}


def proximity_from_dict(data: Any, where: str = "config", key: str = "proximities") -> Any:
    """The proximity a :func:`proximity_to_dict` dict describes; errors name ``where`` (the
    file or payload) and ``key``, and nothing is imported for an unknown class."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: key {key!r}: expected an object, got {type(data).__name__}")
    cls = resolve("proximity", data.get(CLASS_KEY), where=where, key=f"{key}.{CLASS_KEY}")
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise ConfigError(f"{where}: key {key!r}: {cls!r} is not a dataclass proximity")
    options = {k: v for k, v in data.items() if k != CLASS_KEY}
    schema = declared_schema(cls)
    if schema is not None:
        options = check_values(where, options, schema, key=key, owner=cls.__name__)
    else:
        try:
            check_field_names(cls.__name__, options, (f.name for f in dataclasses.fields(cls)))
        except ConfigError as error:
            raise ConfigError(f"{where}: key {key!r}: {error}") from None
    try:
        return cls(**options)
    except (GraphERError, TypeError, ValueError) as error:
        raise ConfigError(
            f"{where}: key {key!r}: {cls.__name__} refuses {options!r}: {error}"
        ) from None


def proximities_from_dicts(items: Any, where: str, key: str = "proximities") -> list[Any]:
    """Each dict of ``items`` rebuilt (other items kept as given: live proximities)."""
    if not isinstance(items, list):
        raise ConfigError(f"{where}: key {key!r}: must be a list, got {type(items).__name__}")
    return [
        proximity_from_dict(item, where, f"{key}[{position}]") if isinstance(item, dict) else item
        for position, item in enumerate(items)
    ]
