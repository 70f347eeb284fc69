"""mcnemar_exact delegates to scipy's binomtest: its p-values must stay those of the exact
integer tail sum it replaced, on every small table a comparison can produce."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from grapher_core.errors import InputError
from grapher_core.utils.stats import mcnemar_exact


def _reference(b: int, c: int) -> float:
    """The former implementation: twice the smaller tail of Binomial(b + c, 1/2), exactly."""
    n = b + c
    if n == 0:
        return 1.0
    tail = Fraction(sum(comb(n, i) for i in range(min(b, c) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def test_matches_the_exact_tail_sum_up_to_sixty() -> None:
    for b in range(61):
        for c in range(61):
            assert mcnemar_exact(b, c) == pytest.approx(_reference(b, c), rel=1e-12, abs=0), (b, c)


def test_symmetric_and_bounded() -> None:
    for b, c in [(0, 7), (3, 9), (20, 21)]:
        assert mcnemar_exact(b, c) == mcnemar_exact(c, b)
        assert 0.0 < mcnemar_exact(b, c) <= 1.0
    assert mcnemar_exact(5, 5) == 1.0


def test_large_counts_stay_finite_and_tiny() -> None:
    p = mcnemar_exact(3000, 1000)
    assert 0 < p < 1e-100
    assert p == pytest.approx(_reference(3000, 1000), rel=1e-6)


def test_negative_counts_are_an_input_error() -> None:
    with pytest.raises(InputError, match="must be >= 0"):
        mcnemar_exact(-1, 2)
