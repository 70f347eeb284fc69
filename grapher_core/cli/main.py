"""The ``grapher`` command. Each subcommand lives in its own module with a ``register`` hook.

A module in ``SUBCOMMANDS`` exposes ``register(subparsers)``, which adds its parser and sets
``func`` (called with the parsed args, returning an exit code). Modules are imported only when
the command line is parsed, and a missing optional backend is reported, not raised.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["SUBCOMMANDS", "build_parser", "main", "run"]

SUBCOMMANDS: tuple[str, ...] = (
    "grapher_core.cli.demo",
    "grapher_core.cli.enrich",
    "grapher_core.cli.rerank",
)


def build_parser(
    prog: str = "grapher",
    description: str = "Graph-based reranking for RAG (GraphER).",
    subcommands: Sequence[str] = SUBCOMMANDS,
) -> argparse.ArgumentParser:
    """The parser with every available subcommand of ``subcommands`` registered."""
    from grapher_core import __version__

    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in subcommands:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name and module_name.startswith(error.name):
                continue  # that part of the product is not there (yet)
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser(), argv)


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and call the chosen subcommand; expected errors become exit code 2."""
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, ImportError) as error:
        print(f"{parser.prog} {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
