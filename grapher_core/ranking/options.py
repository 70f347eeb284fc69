"""What a config's ``ranker_options`` (or a constructor call) may set on the built-in rankers:
the field specs their ``FIELDS`` are made of (:mod:`grapher_core.schema`).

Iteration is bounded here, once: ``max_iter`` at most :data:`MAX_ITER` and ``tol`` at least
:data:`MIN_TOL`, so no file can make one query iterate for hours (``max_iter: 1e9`` with
``tol: 1e-300`` never converges in float64 and would run every step).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from grapher_core.schema import Spec

__all__ = [
    "ALPHA",
    "MAX_ITER",
    "MAX_ITER_SPEC",
    "MIN_TOL",
    "RANKER_NAME",
    "TOL",
    "kind_weights_spec",
]

MAX_ITER = 10_000
"""The most propagation steps a ranker may be given (the default: GCS converges in tens)."""
MIN_TOL = 1e-15
"""The smallest convergence tolerance: below float64's resolution of an L1 change over a few
hundred scores a smaller one is never met, and every allowed step would run."""

ALPHA = Spec("float", low=0.0, high=1.0, open_low=True, open_high=True)
"""A seed weight in (0, 1)."""
TOL = Spec("float", low=MIN_TOL, fix=f"a tolerance below {MIN_TOL:g} is never reached")
"""A convergence tolerance >= :data:`MIN_TOL`."""
MAX_ITER_SPEC = Spec("int", low=1, high=MAX_ITER, fix="the default is 10000")
"""A step count in [1, :data:`MAX_ITER`]."""
RANKER_NAME = Spec("str", nonblank=True)
"""The name a ranker reports (``"grapher-<name>"`` in events)."""


def _weights_reason(value: Any, allow_auto: bool) -> str | None:
    """Why ``value`` is not ``{kind: weight}`` / ``[(kind, weight), ...]`` with finite weights
    >= 0 (or ``"auto"`` where allowed); ``None`` when it is."""
    if isinstance(value, str):
        return None if allow_auto and value == "auto" else "the only name allowed is 'auto'"
    pairs = list(value.items()) if isinstance(value, Mapping) else value
    if not isinstance(pairs, (list, tuple)):
        return "expected {kind: weight} or [[kind, weight], ...]"
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not isinstance(pair[0], str):
            return f"{pair!r:.60} is not a (kind, weight) pair"
        weight = pair[1]
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            return f"the weight of {pair[0]!r} is not a number"
        try:
            finite = math.isfinite(float(weight))
        except OverflowError:
            finite = False
        if not finite or weight < 0:
            return f"the weight of {pair[0]!r} must be finite and >= 0"
    return None


def kind_weights_spec(*, allow_auto: bool = False) -> Spec:
    """Per-kind weights: ``{kind: weight}`` or ``(kind, weight)`` pairs, finite and >= 0
    (``"auto"`` too when ``allow_auto``)."""
    return Spec("rule", rule=lambda value: _weights_reason(value, allow_auto))
