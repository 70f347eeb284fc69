"""The ``grapher-bench`` command: research tooling (benchmarks, tuning, latency, training).

It reuses the subcommand mechanism of :mod:`grapher_core.cli`; the user-facing commands
(``demo``, ``enrich``) stay on ``grapher``.
"""

from __future__ import annotations

from collections.abc import Sequence

from grapher_core.cli import build_parser, run

SUBCOMMANDS: tuple[str, ...] = (
    "grapher_bench.bench.cli",
    "grapher_bench.grag.cli",
    "grapher_bench.latency.rerank",
    "grapher_bench.gat.cli",
    "grapher_bench.qa_gnn.cli",
    "grapher_bench.bench.seeds_study",
    "grapher_bench.latency.wrappers",
    "grapher_bench.qa_eval.cli",
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(
        "grapher-bench",
        "GraphER research tooling: benchmarks, tuning, "
        "latency and training of the learned rankers.",
        SUBCOMMANDS,
    )
    return run(parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())
