"""argparse types shared by the subcommands of ``grapher`` and ``grapher-bench``: a bad value
is refused by the parser, with its usage line, before any work starts."""

from __future__ import annotations

import argparse

__all__ = ["alpha_argument"]


def alpha_argument(value: str) -> float:
    """argparse type for a ranker's alpha: a number strictly between 0 and 1."""
    try:
        alpha = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"alpha must be a number, got {value!r}") from None
    if not 0 < alpha < 1:
        raise argparse.ArgumentTypeError(f"alpha must be in (0, 1), got {value}")
    return alpha
