"""The one exact paired test: ``grapher eval``, the qa-eval harness and the G-RAG study all ask
whether one ordering beats another on the same questions."""

from __future__ import annotations

from math import comb

from grapher_core.errors import InputError

__all__ = ["mcnemar_exact"]


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs -- the sign test on
    wins and losses, ties left out by the caller -- in exact integer arithmetic (no scipy, no
    overflow on thousands of pairs); 1.0 when there is none."""
    if b < 0 or c < 0:
        raise InputError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2.0 * tail)
