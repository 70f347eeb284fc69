"""The paired comparison of two orderings on the same questions: a gain is only worth
reporting with how many questions it won and lost on, and whether that split could be chance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from grapher_core.errors import InputError
from grapher_core.utils.stats import mcnemar_exact

__all__ = ["PairedComparison", "compare_paired"]


@dataclass(frozen=True)
class PairedComparison:
    """Questions won and lost (ties left out) and the exact two-sided sign-test p-value."""

    wins: int
    losses: int
    p: float

    def to_dict(self) -> dict[str, float]:
        """The form reports and configs keep (``{"wins", "losses", "p"}``)."""
        return {"wins": self.wins, "losses": self.losses, "p": self.p}


def compare_paired(
    mine: Sequence[float] | np.ndarray, theirs: Sequence[float] | np.ndarray
) -> PairedComparison:
    """Per-question values of one ordering against another's (same questions, same order):
    exact McNemar on per-question PR@K, the sign test on gold@K or any other score."""
    mine_values, their_values = np.asarray(mine).ravel(), np.asarray(theirs).ravel()
    if mine_values.shape != their_values.shape:
        raise InputError(
            f"paired values must cover the same questions: {mine_values.size} against "
            f"{their_values.size}"
        )
    wins = int((mine_values > their_values).sum())
    losses = int((mine_values < their_values).sum())
    return PairedComparison(wins, losses, mcnemar_exact(wins, losses))
