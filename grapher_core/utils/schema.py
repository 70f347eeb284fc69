"""What a file or payload may set: one declared field spec and one check, for every class a
config, a ``to_dict`` payload or a constructor can be handed values for.

The allow-list (:mod:`grapher_core.allowed`) decides which classes a file may *name*; this
module decides what it may *set* on them. A class declares its fields once, as a
:data:`Schema` (name -> :class:`Spec`: type, bounds, choices), and every door runs the same
:func:`check_values` over a payload before anything is built, or :func:`check_fields` over a
dataclass in its ``__post_init__`` (so a constructor call in code is checked by the same
declaration). A field a class has but does not declare is a :class:`ConfigError` the first
time the class is built: a new field cannot skip its check.

Types are strict, as JSON is: ``"no"`` is not a boolean, ``1`` is not a string, ``True`` is
not a number, and numbers must be finite and fit a float (a 401-digit JSON integer is refused,
naming the key, not an ``OverflowError``).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Literal

from grapher_core.errors import ConfigError, GraphERError, InputTypeError

__all__ = [
    "DeclaredFields",
    "FieldTypeError",
    "Schema",
    "Spec",
    "check_field_names",
    "check_fields",
    "check_values",
    "declared_schema",
    "grapher_error_in",
    "library_errors",
    "shown",
]

SpecType = Literal["str", "bool", "int", "float", "strs", "none", "rule"]
"""``str``; ``bool`` (a real boolean); ``int`` (an integer, never a bool); ``float`` (any
real number, never a bool); ``strs`` (a list or tuple of strings, a lone string read as one);
``none`` (only ``None``: a field a payload may not set to anything else); ``rule`` (a value
whose shape only its ``rule`` can judge, e.g. ``{kind: weight}`` pairs)."""


class FieldTypeError(InputTypeError, ConfigError):
    """A field given a value of the wrong type: a type error in code, a config error in a file
    (``except TypeError`` and ``except ConfigError`` both catch it)."""


_WHAT: dict[str, str] = {
    "str": "a string",
    "bool": "true or false (a real boolean)",
    "int": "an integer",
    "float": "a finite number",
    "strs": "a list of strings",
    "none": "null (it holds a live object: pass it in code)",
    "rule": "a value its rule accepts",
}


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters (a payload may hold anything, of any size)."""
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not replace the error being raised
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Spec:
    """One field's declaration: its ``type``; ``optional`` (``None`` allowed); ``low`` /
    ``high`` bounds for numbers (``open_low`` / ``open_high``: the bound itself excluded);
    ``choices`` (the only
    values allowed); ``nonblank`` (a string must hold more than whitespace); ``rule`` (one more
    check: the reason a value is refused, or ``None``); ``fix`` (how to do it right)."""

    type: SpecType
    optional: bool = False
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    choices: tuple[Any, ...] | None = None
    nonblank: bool = False
    rule: Callable[[Any], str | None] | None = None
    fix: str = ""

    def describe(self) -> str:
        """What a value must be, in words (for messages and docs)."""
        if self.choices is not None:
            what = "one of " + ", ".join(repr(c) for c in self.choices)
        else:
            what = _WHAT[self.type] + self._bounds()
        return what + (" or null" if self.optional and self.type != "none" else "")

    def _bounds(self) -> str:
        if self.low is not None and self.high is not None:
            left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
            return f" in {left}{self.low:g}, {self.high:g}{right}"
        if self.low is not None:
            return f" {'>' if self.open_low else '>='} {self.low:g}"
        if self.high is not None:
            return f" {'<' if self.open_high else '<='} {self.high:g}"
        return ""

    def check(self, label: str, value: Any) -> Any:
        """``value`` if it fits, a tuple for ``strs``; else an error starting with ``label``
        (``"ForeignKeys.field"``, ``"config.json: key 'proximities[0].field'"``)."""
        if value is None and (self.optional or self.type == "none"):
            return None
        fault = self._type_fault(value)
        if fault is None and self.choices is not None and value not in self.choices:
            fault = ""  # the right type, but not one of the choices
        if fault is None and self.rule is not None:
            reason = self.rule(value)
            if reason is not None:
                raise ConfigError(f"{label}: {shown(value)} is refused: {reason}{self._fix()}")
        if fault is not None:
            error = FieldTypeError if fault == "type" else ConfigError
            raise error(
                f"{label} must be {self.describe()}, got {shown(value)} "
                f"({type(value).__name__}){self._fix()}"
            )
        if self.type == "strs":
            return (value,) if isinstance(value, str) else tuple(value)
        return value

    def _fix(self) -> str:
        return f"; {self.fix}" if self.fix else ""

    def _type_fault(self, value: Any) -> str | None:
        """``"type"`` for the wrong type, ``""`` for a value out of range, ``None`` if fine."""
        kind = self.type
        if kind == "rule":
            return None  # judged by the rule alone
        if kind == "none":
            return "type"
        if kind == "str":
            if not isinstance(value, str):
                return "type"
            return "" if self.nonblank and not value.strip() else None
        if kind == "bool":
            return None if isinstance(value, bool) else "type"
        if kind == "strs":
            items = (value,) if isinstance(value, str) else value
            if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) for v in items):
                return "type"
            return None
        if isinstance(value, bool) or not isinstance(value, Integral if kind == "int" else Real):
            return "type"
        return None if self._in_range(value) else ""

    def _in_range(self, value: Any) -> bool:
        try:
            number = float(value)
        except OverflowError:  # an integer too large for a float: out of every range
            return False
        if not math.isfinite(number):
            return False
        if self.low is not None and (number <= self.low if self.open_low else number < self.low):
            return False
        return self.high is None or (number < self.high if self.open_high else number <= self.high)


Schema = Mapping[str, Spec]
"""A class's declared fields: name -> :class:`Spec`."""


def check_field_names(owner: str, given: Iterable[object], known: Iterable[str]) -> None:
    """Refuse a field ``owner`` does not have, naming the closest one it does (``top_k`` ->
    ``top_n``): a typo would otherwise be dropped and a default run in silence."""
    known = sorted(set(known))
    unknown = [str(name) for name in given if name not in known]
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
        hints.append(f"{shown(name)}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ConfigError(f"{owner} has no field {', '.join(hints)}; its fields: {', '.join(known)}")


class DeclaredFields:
    """Base of the dataclasses whose fields a file or a caller sets (proximities, rankers, the
    core's value types): a misspelt
    keyword is refused naming the closest field (``ForeignKeys(feild="x")`` -> ``field``), a
    ``ConfigError`` like every other refusal, not Python's bare ``TypeError``."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            known = _FIELD_NAMES.get(cls)
            if known is None:  # once per class: the values built per query stay cheap
                fields: tuple[dataclasses.Field[Any], ...] = (
                    dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ()
                )
                known = _FIELD_NAMES[cls] = frozenset(field.name for field in fields)
            if known and not known.issuperset(kwargs):
                check_field_names(cls.__name__, kwargs, known)
        return super().__new__(cls)


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def check_values(
    where: str, values: Mapping[str, Any], schema: Schema, *, key: str = "", owner: str = ""
) -> dict[str, Any]:
    """Every entry of a payload checked against ``schema`` before anything is built: an
    undeclared key is refused naming the closest declared one, a value that does not fit
    names ``where`` (the file or payload), the key, the value and what it must be."""
    prefix = f"{key}." if key else ""
    for name in values:
        if name not in schema:
            try:
                check_field_names(owner or "it", [name], schema)
            except ConfigError as error:
                raise ConfigError(
                    f"{where}: key '{prefix}{str(name)[:80]}': {error}; a payload may set "
                    "only these fields"
                ) from None
    return {
        name: schema[name].check(f"{where}: key '{prefix}{name}'", value)
        for name, value in values.items()
    }


@contextmanager
def library_errors() -> Iterator[None]:
    """Inside it, a framework's validation error that wraps a :class:`GraphERError` is raised
    as that error (the wrappers' constructors: every door raises the library's error)."""
    try:
        yield
    except ValueError as error:
        inner = None if isinstance(error, GraphERError) else grapher_error_in(error)
        if inner is None:
            raise
        raise inner from None


def grapher_error_in(error: BaseException) -> GraphERError | None:
    """The :class:`GraphERError` a framework's validation error wraps (pydantic turns a
    ``ValueError`` raised by a validator into its own ``ValidationError``), or ``None``: the
    wrappers re-raise it, so every door raises the library's error, naming the field."""
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return None
    try:
        details = errors()
    except Exception:  # not pydantic's: nothing to unwrap
        return None
    for detail in details if isinstance(details, list) else []:
        context = detail.get("ctx") if isinstance(detail, dict) else None
        inner = context.get("error") if isinstance(context, dict) else None
        if isinstance(inner, GraphERError):
            return inner
    return None


def declared_schema(cls: type) -> Schema | None:
    """The ``FIELDS`` a class declares (its own or inherited), or ``None``."""
    schema = getattr(cls, "FIELDS", None)
    return schema if isinstance(schema, Mapping) else None


def check_fields(instance: Any) -> None:
    """Check every dataclass field of ``instance`` against its class's ``FIELDS``, storing
    normalised values (a list of names as a tuple). A field without a declaration is refused:
    whoever adds a field adds its check."""
    cls = type(instance)
    schema = declared_schema(cls) or {}
    owner = cls.__name__
    for field in dataclasses.fields(instance):
        spec = schema.get(field.name)
        if spec is None:
            raise ConfigError(
                f"{owner}.{field.name} has no declared check: add it to {owner}.FIELDS "
                "(grapher_core.utils.schema.Spec) so configs and payloads cannot set it unchecked"
            )
        value = getattr(instance, field.name)
        checked = spec.check(f"{owner}.{field.name}", value)
        if spec.type == "strs" and checked is not None and not isinstance(value, tuple):
            object.__setattr__(instance, field.name, checked)  # a config's list, kept frozen
