"""Reading enrichment fields from metadata, whatever shape a vector store left them in.

Stores differ: Chroma keeps non-empty same-typed lists, others keep only scalars, so a list may
arrive as a native list, a JSON-encoded list, a Python ``str(list)`` or a delimited string.
Everything here accepts each of them and treats a missing, empty or malformed field as "no
values" -- never an error -- because one odd object must not break the ranking of the other 199.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from grapher_core.errors import InputError

DEFAULT_DELIMITERS = "|;,\n"


def read_list(value: Any, delimiters: str = DEFAULT_DELIMITERS) -> list[str]:
    """Return the values of a list-like metadata field as non-empty strings.

    Accepts a native list/tuple/set, a JSON-encoded list (``'["a", "b"]'``), a list written with
    Python's ``str()`` (``"['a', 'b']"``), a delimited string
    (``"a|b"``; the first delimiter of ``delimiters`` present in the string is used) or a scalar.
    ``None``, empty values and unparseable shapes give ``[]``. Nested lists are flattened one
    level (e.g. ``fk_pairs``-like values are not lists of ids and give their string items).
    """
    if value is None:
        return []
    if type(value) is list and all(type(item) is str for item in value):  # the common case, fast
        return [stripped for item in value if (stripped := item.strip())]
    if isinstance(value, str):
        return _read_string(value, delimiters)
    if isinstance(value, bytes):
        return _read_string(value.decode("utf-8", errors="replace"), delimiters)
    if isinstance(value, Mapping):
        return []
    if isinstance(value, Iterable):
        out: list[str] = []
        for item in value:
            if isinstance(item, (list, tuple)):
                out.extend(_scalar(x) for x in item if _scalar(x))
            elif (text := _scalar(item)) != "":
                out.append(text)
        return out
    text = _scalar(value)
    return [text] if text else []


def _scalar(value: Any) -> str:
    if value is None or isinstance(value, (Mapping, list, tuple, set)):
        return ""
    if isinstance(value, float) and value != value:  # NaN
        return ""
    return str(value).strip()


def _read_string(text: str, delimiters: str) -> list[str]:
    text = text.strip()
    if not text:
        return []
    if text[0] == "[" and text[-1] == "]":
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):  # malformed, or nested past the parser's stack
            parsed = _python_list(text)
        if isinstance(parsed, list):
            return read_list(parsed, delimiters)
    for delimiter in delimiters:
        if delimiter in text:
            return [part.strip() for part in text.split(delimiter) if part.strip()]
    return [text]


PYTHON_LIST_MAX_CHARS = 100_000
"""Longest ``str(list)`` value read as a Python literal; a longer one is split on delimiters."""


def _python_list(text: str) -> Any:
    """A list written with Python's ``str()`` (``"['Berlin', 'Paris']"``: what a store gets when
    a list is coerced to a string), read as a literal -- data only, never code -- so the values
    do not keep their quotes; anything else gives ``None``."""
    if len(text) > PYTHON_LIST_MAX_CHARS:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def read_int(value: Any) -> int | None:
    """Return an integer metadata value (``3``, ``3.0``, ``"3"``), or ``None`` if it is not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


@lru_cache(maxsize=1 << 17)
def normalise_entity(entity: str) -> str:
    """Canonical form used to compare entities: case-folded, whitespace collapsed and stripped.

    Both extractors (LLM and spaCy) and the ``SharedEntities`` proximity use this one function,
    so "Barack  Obama" and "barack obama" are the same entity everywhere.
    """
    return " ".join(entity.split()).casefold()


def normalised_set(values: Iterable[str]) -> set[str]:
    """The distinct normalised, non-empty entities of ``values``."""
    return {n for n in (normalise_entity(v) for v in values) if n}


LIST_FORMATS: tuple[str, ...] = ("list", "json", "delimited")


def encode_list(
    values: Iterable[Any], fmt: str = "list", *, delimiter: str = "|"
) -> list[Any] | str | None:
    """Write a list field in a shape a given vector store keeps; :func:`read_list` reads all three.

    ``"list"``: a native list, or ``None`` when empty (Chroma rejects empty lists: drop the key),
    written as JSON when an item is itself a list or dict (Chroma rejects nested lists too);
    ``"json"``: a JSON-encoded string (stores that keep only scalars); ``"delimited"``: values
    joined by ``delimiter`` (``ValueError`` when :func:`read_list` would not read the same values
    back, e.g. a value containing the delimiter). The input is never modified.
    """
    if fmt not in LIST_FORMATS:
        raise InputError(f"list format must be one of {LIST_FORMATS}, got {fmt!r}")
    items = list(values)
    if fmt == "list":
        if any(isinstance(item, (list, tuple, dict)) for item in items):
            return json.dumps(items, ensure_ascii=False)
        return items or None
    if fmt == "json":
        return json.dumps(items, ensure_ascii=False)
    text = delimiter.join(str(item) for item in items)
    if read_list(text, delimiter + DEFAULT_DELIMITERS) != [str(i).strip() for i in items]:
        raise InputError(
            f"these values do not survive a {delimiter!r}-delimited string "
            f"(a value contains a delimiter?): {items[:5]}; use fmt='json'"
        )
    return text
