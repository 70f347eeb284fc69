"""The one exact paired test: ``grapher eval``, the qa-eval harness and the G-RAG study all ask
whether one ordering beats another on the same questions."""

from __future__ import annotations

from scipy.stats import binomtest

from grapher_core.errors import InputError

__all__ = ["mcnemar_exact"]


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs -- the sign test on
    wins and losses, ties left out by the caller; 1.0 when there is none.

    scipy's exact binomial test (a core dependency) does the arithmetic, so there is no
    hand-rolled tail sum to get wrong; it stays finite on thousands of pairs."""
    if b < 0 or c < 0:
        raise InputError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0  # binomtest refuses n == 0: no discordant pair is no evidence
    return min(1.0, float(binomtest(int(b), n, 0.5).pvalue))
