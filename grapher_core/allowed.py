"""What a file may name: the one allow-list behind every name read from a config, a ``to_dict``
payload or a checkpoint.

A name read from a file is looked up here and nowhere else; a name not registered is a
:class:`~grapher_core.errors.ConfigError` naming the file (or payload) and the key, raised
*without importing anything*. Built-ins are registered below; a user makes their own class
loadable with :func:`register_proximity`, :func:`register_ranker` or :func:`register_embedding`,
in code, before loading the file. A name already registered (a built-in above all) is not
replaced unless the call says ``replace=True``: one import must not swap ``"ForeignKeys"`` or
``"gcs"`` for the whole process in silence.

What a file may *set* on a class it names is declared per class (:mod:`grapher_core.utils.schema`):
proximities and rankers declare ``FIELDS`` on the class; an embedding class's payload fields
are given when it is registered (``register_embedding(cls, fields=...)``) and read back with
:func:`fields_of`.

Optional backends (the learned rankers need torch) are registered as :class:`Lazy` targets:
module and attribute written here, in code, and imported only when a registered name asks for
them. A string from a file can never become a :class:`Lazy`: only code constructs one.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any, Literal

from grapher_core.errors import ConfigError, InputTypeError, MissingDependencyError
from grapher_core.utils.schema import Schema

__all__ = [
    "KINDS",
    "Kind",
    "Lazy",
    "allowed_names",
    "fields_of",
    "is_allowed",
    "name_of",
    "register",
    "register_embedding",
    "register_proximity",
    "resolve",
]

Kind = Literal["proximity", "ranker", "embedding"]
KINDS: tuple[Kind, ...] = ("proximity", "ranker", "embedding")

_HOW_TO_REGISTER: dict[str, str] = {
    "proximity": "grapher_core.register_proximity(MyProximity)",
    "ranker": "grapher_core.register_ranker('name', MyRanker)",
    "embedding": "grapher_core.register_embedding(MyEmbedding)",
}


@dataclass(frozen=True)
class Lazy:
    """A class or factory registered by module and attribute, imported on first use (so an
    optional backend costs nothing until a registered name needs it). Built in code only."""

    module: str
    attribute: str
    extra: str = "gat"

    def load(self) -> Any:
        """The target itself; a missing optional dependency names the extra to install."""
        try:
            module = importlib.import_module(self.module)
        except ImportError as error:
            raise MissingDependencyError(
                f"{self.module}:{self.attribute} needs an optional extra: "
                f"pip install 'grapher-rerank[{self.extra}]' ({error})"
            ) from error
        return getattr(module, self.attribute)

    @property
    def qualified(self) -> str:
        return f"{self.module}:{self.attribute}"


Target = Any  # a class, a factory, or a Lazy
_NAMES: dict[str, dict[str, Target]] = {kind: {} for kind in KINDS}
_FIELDS: dict[str, dict[str, Schema]] = {kind: {} for kind in KINDS}


def _check_kind(kind: str) -> None:
    if kind not in _NAMES:
        raise ConfigError(f"unknown kind of name {kind!r}; one of {', '.join(KINDS)}")


def _qualified(target: Target) -> str | None:
    """``module:qualname`` of a class or function (its other spelling in older files)."""
    if isinstance(target, Lazy):
        return target.qualified
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        return f"{module}:{qualname}"
    return None


def register(
    kind: Kind,
    name: str,
    target: Target,
    *,
    replace: bool = False,
    fields: Schema | None = None,
) -> None:
    """Allow files to name ``target`` as ``name`` for ``kind`` (a proximity also as its
    ``module:qualname``, the spelling older payloads used).

    ``target`` is a class or factory, or a :class:`Lazy` for an optional backend. Registering
    happens in code: this is how a user's own class becomes loadable from a config. A name
    registered with another target is refused unless ``replace=True``; ``fields``: what a
    payload may set on it (:mod:`grapher_core.utils.schema`)."""
    _check_kind(kind)
    if not isinstance(name, str) or not name or name != name.strip():
        raise InputTypeError(f"a registered {kind} name must be a non-blank string, got {name!r}")
    if not (isinstance(target, Lazy) or callable(target)):
        raise InputTypeError(
            f"register {kind} {name!r}: expected a class, a factory or a Lazy, got {target!r}"
        )
    names = _NAMES[kind]
    _refuse_replacing(kind, name, names.get(name), target, replace)
    names[name] = target
    if fields is not None:
        _FIELDS[kind][name] = fields
    elif replace:
        _FIELDS[kind].pop(name, None)
    qualified = _qualified(target)
    if kind == "proximity" and qualified is not None and qualified != name:
        names.setdefault(qualified, target)  # how older payloads named a proximity


def _refuse_replacing(kind: str, name: str, old: Target, new: Target, replace: bool) -> None:
    """A name already taken by another target stays as it is unless ``replace`` is asked."""
    if old is None or replace or old is new or old == new:
        return
    how = {
        "proximity": f"register_proximity(cls, name={name!r}, replace=True)",
        "ranker": f"register_ranker({name!r}, factory, replace=True)",
        "embedding": f"register_embedding(cls, name={name!r}, replace=True)",
    }[kind]
    raise ConfigError(
        f"{kind} name {name!r} is already registered (to {_qualified(old) or old!r}); "
        f"registering {_qualified(new) or new!r} would replace it for the whole process: "
        f"choose another name, or say so with {how}"
    )


def register_proximity(cls: type, name: str | None = None, *, replace: bool = False) -> type:
    """Make a dataclass proximity loadable from configs and ``from_dict`` payloads, by
    ``name`` (default: the class name); a taken name only with ``replace=True``. Its
    ``FIELDS`` (:mod:`grapher_core.utils.schema`), when declared, say what a payload may set.
    Returns the class, so it also works as a decorator."""
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
        raise InputTypeError(
            f"register_proximity expects a dataclass proximity class, got {cls!r} (a config "
            "rebuilds a proximity from its fields, so it must be a dataclass)"
        )
    register("proximity", name or cls.__name__, cls, replace=replace)
    return cls


def register_embedding(
    cls: type,
    name: str | None = None,
    *,
    fields: Schema | None = None,
    replace: bool = False,
) -> type:
    """Make an embedding class loadable from a ``to_dict`` payload (the LlamaIndex
    postprocessor's ``embed_model``), by ``name`` (default: its ``class_name()`` when it has
    one, else the class name); a taken name only with ``replace=True``. ``fields``: what a
    payload may set on it (:mod:`grapher_core.utils.schema`; without it the wrapper's common safe
    fields). Returns the class, so it also works as a decorator."""
    if not isinstance(cls, type):
        raise InputTypeError(f"register_embedding expects a class, got {cls!r}")
    if name is None:
        class_name = getattr(cls, "class_name", None)
        name = class_name() if callable(class_name) else cls.__name__
    register("embedding", str(name), cls, replace=replace, fields=fields)
    return cls


def fields_of(kind: Kind, name: str) -> Schema | None:
    """What a payload may set on the target registered as ``name`` (``None``: not declared at
    registration; a proximity or ranker declares ``FIELDS`` on its class instead)."""
    _check_kind(kind)
    return _FIELDS[kind].get(name)


def is_allowed(kind: Kind, name: object) -> bool:
    """Whether a file may name ``name`` for ``kind`` (nothing imported)."""
    _check_kind(kind)
    return isinstance(name, str) and name in _NAMES[kind]


def allowed_names(kind: Kind, *, qualified: bool = False) -> list[str]:
    """The names registered for ``kind``, sorted; proximities' ``module:qualname`` aliases
    only when asked."""
    _check_kind(kind)
    names = _NAMES[kind]
    return sorted(n for n in names if qualified or _qualified(names[n]) != n)


def name_of(kind: Kind, target: Target) -> str | None:
    """The short name ``target`` is registered under (for writing files), or ``None``."""
    _check_kind(kind)
    qualified = _qualified(target)
    for name, registered in _NAMES[kind].items():
        if ":" in name:
            continue
        if registered is target or (
            isinstance(registered, Lazy) and registered.qualified == qualified
        ):
            return name
    return None


def resolve(
    kind: Kind, name: object, *, where: str = "config", key: str = "class", load: bool = True
) -> Any:
    """The target a file names, or a :class:`ConfigError` naming ``where`` and ``key``.

    Nothing is imported for a name that is not registered; a registered :class:`Lazy` is
    imported only with ``load=True`` (after the name passed the allow-list)."""
    _check_kind(kind)
    names = _NAMES[kind]
    if not isinstance(name, str) or name not in names:
        shown = repr(name) if len(repr(name)) <= 120 else repr(name)[:117] + "..."
        raise ConfigError(
            f"{where}: key {key!r}: {shown} is not a registered {kind} (registered: "
            f"{', '.join(allowed_names(kind)) or 'none'}); nothing named in a file is "
            f"imported: register your own class in code first, {_HOW_TO_REGISTER[kind]}"
        )
    target = names[name]
    if load and isinstance(target, Lazy):
        return target.load()
    return target


def _unregister(kind: Kind, name: str) -> None:
    """Remove ``name`` and its alias (tests restore the registry with it)."""
    target = _NAMES[kind].pop(name, None)
    _FIELDS[kind].pop(name, None)
    if target is not None:
        qualified = _qualified(target)
        if qualified is not None and _NAMES[kind].get(qualified) is target:
            del _NAMES[kind][qualified]
