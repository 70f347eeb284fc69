"""Construction-time checks shared by the proximities.

A weight of NaN, inf, 0 or below would otherwise be accepted when the proximity is built and
only noticed (or not at all: NaN scales every edge to nothing) when a graph is made, far from
the line that set it. Every proximity in :mod:`grapher_core.edges` calls these from its
``__post_init__`` so the error names the class and the option at the point of the mistake.
"""

from __future__ import annotations

import math
from numbers import Real

from grapher_core.errors import ConfigError, InputTypeError

__all__ = ["check_weight"]


def check_weight(owner: str, value: object) -> float:
    """Refuse a proximity weight that is not a finite number > 0 (``True`` is not a weight).

    ``owner`` is the proximity's class name, used in the message. Returns the weight as a
    float so callers may store it normalised if they wish.
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InputTypeError(
            f"{owner}.weight must be a finite number > 0, got {value!r} ({type(value).__name__})"
        )
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ConfigError(f"{owner}.weight must be a finite number > 0, got {value!r}")
    return number
