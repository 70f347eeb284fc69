"""Paired comparison of two systems on the same questions: the exact McNemar test.

Only discordant questions carry information (``b``: the first system right and the second
wrong, ``c``: the reverse). Under the null hypothesis each discordant question goes either way
with probability 1/2, so the two-sided p-value is ``min(1, 2 * P[X <= min(b, c)])`` for
``X ~ Binomial(b + c, 1/2)`` -- exact, no continuity correction, valid for small counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grapher_core.errors import InputError
from grapher_core.utils.stats import mcnemar_exact

__all__ = ["PairedResult", "mcnemar_exact", "paired_compare"]


@dataclass(frozen=True)
class PairedResult:
    """Accuracy of two systems on the questions both were scored on, and the test."""

    n: int
    correct_a: int
    correct_b: int
    a_only: int
    b_only: int
    p_value: float

    @property
    def delta(self) -> float:
        """Accuracy of the second system minus the first, in points (0-100)."""
        return 100.0 * (self.correct_b - self.correct_a) / self.n if self.n else 0.0


def paired_compare(a: Sequence[bool | None], b: Sequence[bool | None]) -> PairedResult:
    """Pair two per-question outcome lists; questions where either is ``None`` are left out."""
    if len(a) != len(b):
        raise InputError(f"outcome lists differ in length ({len(a)} vs {len(b)})")
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    a_only = sum(1 for x, y in pairs if x and not y)
    b_only = sum(1 for x, y in pairs if y and not x)
    return PairedResult(
        len(pairs),
        sum(1 for x, _ in pairs if x),
        sum(1 for _, y in pairs if y),
        a_only,
        b_only,
        mcnemar_exact(a_only, b_only),
    )
