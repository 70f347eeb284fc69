"""The ``grapher-bench`` command: research tooling (benchmarks, tuning, latency, training).

It reuses the subcommand mechanism of :mod:`grapher_core.cli`; the user-facing commands
(``demo``, ``enrich``) stay on ``grapher``. ``grapher-rerank`` installs without its extras, so a
subcommand that reaches a package it does not have says which extra to install, in one line
with exit code 2, instead of the bare name of a module the user never asked for.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from grapher_core.cli import build_parser, run
from grapher_core.cli.main import EXIT_USAGE
from grapher_core.errors import MissingDependencyError

SUBCOMMANDS: tuple[str, ...] = (
    "grapher_bench.bench.cli",
    "grapher_bench.grag.cli",
    "grapher_bench.latency.rerank",
    "grapher_bench.gat.cli",
    "grapher_bench.qa_gnn.cli",
    "grapher_bench.bench.seeds_study",
    "grapher_bench.bench.default_study",
    "grapher_bench.latency.wrappers",
    "grapher_bench.qa_eval.cli",
    "grapher_bench.qa_eval.reader",
)

# The extras each subcommand is documented with; installing them brings everything it imports.
# A command missing here needs the 'bench' extra.
COMMAND_EXTRAS: dict[str, tuple[str, ...]] = {
    "bench": ("bench",),
    "tune": ("bench",),
    "seeds": ("bench",),
    "default-study": ("bench",),
    "bench-latency": ("bench",),
    "hub-memory": ("bench",),
    "train": ("bench", "gat"),
    "gat-eval": ("bench", "gat"),
    "gat-latency": ("bench", "gat"),
    "qagnn-train": ("bench", "gat"),
    "qagnn-eval": ("bench", "gat"),
    "grag-study": ("bench", "grag"),
    "grag-compare": ("bench", "grag"),
    "grag-latency": ("bench", "grag"),
    "wrapper-latency": ("bench", "gat", "langchain", "llamaindex"),
    "qa-eval": ("bench", "llm"),
    "reader": ("bench", "llm"),
}
# Packages that no extra installs: named as they are, after the extras.
NOT_IN_EXTRAS: dict[str, str] = {
    "chromadb": "chromadb",
    "langchain_chroma": "langchain-chroma",
}
# What the installation always has: a missing one of these is a broken install, not an extra.
_ALWAYS_THERE = frozenset(
    {"grapher_core", "grapher_bench", "langchain_grapher", "llama_index_grapher", "numpy", "scipy"}
)


def int_argument(low: int = 1, high: int | None = None) -> Callable[[str], int]:
    """argparse type for an integer option in ``[low, high]``: a count, a size, a limit.

    ``int`` alone takes ``--n -3`` and the command fails later, deep in the work, without
    naming the option; this refuses it at parse time (argparse prefixes the option's name).
    """
    bounds = f">= {low}" if high is None else f"in [{low}, {high}]"

    def parse(value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer {bounds}, got {value!r}"
            ) from None
        if number < low or (high is not None and number > high):
            raise argparse.ArgumentTypeError(f"must be an integer {bounds}, got {number}")
        return number

    parse.__name__ = f"integer {bounds}"
    return parse


positive_int = int_argument(1)
"""argparse type of grapher-bench's counts, sizes and limits: an integer >= 1."""

non_negative_int = int_argument(0)
"""argparse type of the integers where 0 means none (a seed, retries, warm-up runs)."""


def one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` report a bad command line in one line (exit code 2), as every other
    error of the command is reported, instead of argparse's usage block."""

    def error(message: str) -> NoReturn:
        parser.exit(EXIT_USAGE, f"{parser.prog}: error: {message} (see {parser.prog} --help)\n")

    parser.error = error  # type: ignore[method-assign]


def missing_module(error: BaseException) -> str | None:
    """The optional module whose absence raised ``error`` (or caused it), if any."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            return None if seen.name.split(".")[0] in _ALWAYS_THERE else seen.name
        seen = seen.__cause__ or seen.__context__
    return None


def install_hint(command: str, module: str) -> str:
    """``needs the 'bench' extra: pip install 'grapher-rerank[bench]'`` for ``command``."""
    extras = COMMAND_EXTRAS.get(command, ("bench",))
    quoted = [f"'{extra}'" for extra in extras]
    names = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"
    hint = f"needs the {names} extra{'s' if len(extras) > 1 else ''}: "
    hint += f"pip install 'grapher-rerank[{','.join(extras)}]'"
    extra_package = next(
        (pkg for prefix, pkg in NOT_IN_EXTRAS.items() if module.startswith(prefix)), None
    )
    return hint + (f" {extra_package}" if extra_package else "")


def naming_the_extra(command: str, func: Callable[[argparse.Namespace], Any]) -> Any:
    """``func``, raising a ``MissingDependencyError`` naming the extras when a module is missing."""

    @functools.wraps(func)
    def call(args: argparse.Namespace) -> Any:
        try:
            return func(args)
        except ImportError as error:
            module = missing_module(error)
            if module is None:
                raise
            raise MissingDependencyError(install_hint(command, module)) from error

    return call


def bench_parser() -> argparse.ArgumentParser:
    """``grapher-bench``'s parser: every subcommand, each naming its extra when one is missing."""
    parser = build_parser(
        "grapher-bench",
        "GraphER research tooling: benchmarks, tuning, "
        "latency and training of the learned rankers.",
        SUBCOMMANDS,
    )
    one_line_errors(parser)
    for action in parser._actions:  # argparse has no public listing of subparsers
        if isinstance(action, argparse._SubParsersAction):
            for command, subparser in action.choices.items():
                one_line_errors(subparser)
                func = subparser.get_default("func")
                if func is not None:
                    subparser.set_defaults(func=naming_the_extra(command, func))
    return parser


#: The arguments of the running command (what ``qa_meta.json`` records as its command line).
INVOKED: list[str] = []


def main(argv: Sequence[str] | None = None) -> int:
    INVOKED[:] = ["grapher-bench", *(sys.argv[1:] if argv is None else argv)]
    return run(bench_parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
