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

__all__ = ["EXIT_INTERRUPTED", "EXIT_USAGE", "SUBCOMMANDS", "build_parser", "main", "run"]

SUBCOMMANDS: tuple[str, ...] = (
    "grapher_core.cli.demo",
    "grapher_core.cli.enrich",
    "grapher_core.cli.eval",
    "grapher_core.cli.rerank",
    "grapher_core.cli.train",
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


#: Exit code of a bad command line or input (argparse's own code for usage errors).
EXIT_USAGE = 2


#: Exit code of a command stopped by Ctrl-C (128 + SIGINT, what a shell reports).
EXIT_INTERRUPTED = 130


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse ``argv``, try every place the chosen subcommand writes to
    (:func:`~grapher_core.cli.arguments.check_outputs`), then call it; expected errors --
    GraphER's own, bad values, files that cannot be read, missing extras -- become one line on
    stderr and exit code ``EXIT_USAGE`` (2), never a traceback. Ctrl-C is one line too (what
    was kept, when the subcommand says: its ``interrupted`` default) and ``EXIT_INTERRUPTED``."""
    from grapher_core.cli.arguments import check_outputs
    from grapher_core.errors import GraphERError

    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        check_outputs(args)
        return int(args.func(args) or 0)
    except (GraphERError, ValueError, OSError, ImportError) as error:
        message = " ".join(str(error).split("\n")).strip() or type(error).__name__
        print(f"{parser.prog} {args.command}: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        said = getattr(args, "interrupted", None)
        line = said(args) if callable(said) else "interrupted"
        print(f"\n{parser.prog} {args.command}: {line}", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
