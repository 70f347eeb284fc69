"""Construction-time checks shared by the proximities: one declared type-and-bounds check per
field.

Every proximity in :mod:`grapher_core.edges` declares its fields as ``FIELDS`` (a
:data:`~grapher_core.utils.schema.Schema`) built from the specs below, and calls
:func:`check_proximity` from its ``__post_init__``: strings where strings go (a list as
``field`` would only fail at the first query, ``unhashable type``), real booleans
(``symmetric="no"`` is not false), a known edge kind, finite numbers in range (a NaN weight
scales every edge to nothing; a 401-digit integer is refused naming the key, not an
``OverflowError``). The error names the class and the option at the point of the mistake, and a
config or payload runs the same declaration before anything is built
(:func:`grapher_core.edges.serialise.proximity_from_dict`). A field with no declaration fails
the first construction: a new field cannot skip its check.
"""

from __future__ import annotations

from typing import Any

from grapher_core.utils.schema import Spec, check_fields

__all__ = [
    "EDGE_KINDS",
    "FIELD_NAME",
    "FLAG",
    "KIND",
    "OPTIONAL_FIELD_NAME",
    "WEIGHT",
    "check_proximity",
    "check_weight",
]

EDGE_KINDS: tuple[str, ...] = ("structural", "conceptual", "contextual", "semantic")
"""The edge kinds a built-in proximity may be given: what explanations, typed rankers' shares
and the learned rankers' edge features know. A kind of your own belongs to a proximity of
your own (the :class:`~grapher_core.edges.base.Proximity` protocol)."""

FIELD_NAME = Spec("str", nonblank=True, fix="a metadata key such as 'doc_id'")
"""A metadata key: a non-blank string."""
OPTIONAL_FIELD_NAME = Spec("str", optional=True, nonblank=True, fix="a metadata key, or null")
"""A metadata key or ``None`` (not read)."""
FLAG = Spec("bool")
"""A real boolean: ``"no"``, ``"false"``, ``0`` are refused (``"no"`` is true in Python)."""
KIND = Spec(
    "str",
    choices=EDGE_KINDS,
    fix="for another kind, write your own proximity (grapher_core.edges.base.Proximity)",
)
"""One of :data:`EDGE_KINDS`."""
WEIGHT = Spec("float", low=0.0, open_low=True)
"""A finite number > 0 (``True`` is not a weight)."""


def check_proximity(proximity: Any) -> None:
    """Check every field of a dataclass proximity against its declared ``FIELDS`` (called from
    each proximity's ``__post_init__``)."""
    check_fields(proximity)


def check_weight(owner: str, value: object) -> float:
    """Refuse a proximity weight that is not a finite number > 0 (``True`` is not a weight).

    ``owner`` is the proximity's class name, used in the message. Returns the weight as a
    float so callers may store it normalised if they wish.
    """
    return float(WEIGHT.check(f"{owner}.weight", value))
