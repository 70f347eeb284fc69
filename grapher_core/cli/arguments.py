"""argparse types and options shared by the subcommands of ``grapher`` and ``grapher-bench``: a
bad value is refused by the parser, with its usage line, and a place a command writes to is
tried before any work starts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["OUTPUTS_DEFAULT", "alpha_argument", "check_outputs", "output_argument"]


def alpha_argument(value: str) -> float:
    """argparse type for a ranker's alpha: a number strictly between 0 and 1."""
    try:
        alpha = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"alpha must be a number, got {value!r}") from None
    if not 0 < alpha < 1:
        raise argparse.ArgumentTypeError(f"alpha must be in (0, 1), got {value}")
    return alpha


OUTPUTS_DEFAULT = "grapher_outputs"
"""The parsed arguments' attribute listing a command's outputs: ``(dest, option, folder)``."""


def output_argument(
    parser: argparse.ArgumentParser, *names: str, folder: bool = False, **kwargs: Any
) -> argparse.Action:
    """Add an option naming a place the command writes (a file, or a ``folder``); ``run``
    checks it can be written before the command starts (:func:`check_outputs`)."""
    kwargs.setdefault("type", Path)
    action = parser.add_argument(*names, **kwargs)
    declared = tuple(parser.get_default(OUTPUTS_DEFAULT) or ())
    option = max(action.option_strings, key=len)
    parser.set_defaults(**{OUTPUTS_DEFAULT: (*declared, (action.dest, option, folder))})
    return action


def check_outputs(args: argparse.Namespace) -> None:
    """Every output the chosen command declared, tried for writing (folders created, a
    temporary file made and removed), before any input is read or any model loaded."""
    from grapher_core.utils.outputs import check_output

    for dest, option, folder in getattr(args, OUTPUTS_DEFAULT, None) or ():
        check_output(getattr(args, dest, None), option, folder=folder)
