"""``grapher-bench bench-latency``: how long reranking takes, graph build and ranking timed apart.

Candidates carry synthetic but realistic entity metadata: every object names ~10 entities, a
few generic ones shared widely ("american", "first"), some shared within topical clusters,
the rest its own -- calibrated so that at n = 200 the entity graph has the mean degree that
``grapher-bench bench`` measured with spaCy entities among the hybrid top-200 of the multi-hop sets
(16.4 musique, 18.0 2wikimultihopqa, 24.4 hotpotqa; docs/benchmarks.md): about 21.
The numbers are printed and, with ``--write``, placed in docs/benchmarks.md between the
latency markers.
"""

from __future__ import annotations

import argparse
import platform
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.graph import build_graph
from grapher_core.proximity import Proximity, SharedEntities
from grapher_core.rankers import RankContext, make_ranker
from grapher_core.rerank import GraphReranker
from grapher_core.seeds import make_seeds

MARKERS = ("<!-- latency:start -->", "<!-- latency:end -->")


def synthetic_candidates(n: int, seed: int = 0, *, generic: int = 60, generic_rate: float = 0.04,
                         cluster_size: int = 6, per_object: int = 10) -> list[Candidate]:
    """``n`` scored candidates with entity lists shaped like NER output on Wikipedia passages."""
    rng = np.random.default_rng(seed)
    candidates = []
    for i in range(n):
        entities = [f"generic {g}" for g in np.flatnonzero(rng.random(generic) < generic_rate)]
        cluster = i // cluster_size
        entities += [f"topic {cluster} entity {k}" for k in rng.choice(4, 2, replace=False)]
        entities += [f"object {i} entity {k}" for k in range(max(per_object - len(entities), 1))]
        candidates.append(Candidate(id=f"doc-{i}", text="", score=float(1.0 - i / (2 * n)),
                                    metadata={"entities": entities}))
    order = rng.permutation(n)  # clusters should not sit next to each other in the ranking
    return [candidates[i] for i in order]


@dataclass(frozen=True)
class LatencyRow:
    n: int
    ranker: str
    edges_from: str
    edges: int
    average_degree: float
    graph_ms: tuple[float, float]
    rank_ms: tuple[float, float]
    total_ms: tuple[float, float]


def _timed(function: Callable[[], Any], repeats: int) -> tuple[float, float]:
    function()  # warm caches (entity normalisation, imports) as a long-running service would
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1e3)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.95 * len(samples)))]


def measure(n: int, ranker_name: str, proximities: Sequence[Proximity], repeats: int,
            label: str = "entities") -> LatencyRow:
    candidates = synthetic_candidates(n)
    ranker = make_ranker(ranker_name)
    graph = build_graph(candidates, proximities)
    seeds = make_seeds(candidates)
    context = RankContext(candidates)
    reranker = GraphReranker(proximities, ranker=ranker)
    return LatencyRow(
        n=n,
        ranker=ranker_name,
        edges_from=label,
        edges=graph.n_edges,
        average_degree=graph.n_edges / n,
        graph_ms=_timed(lambda: build_graph(candidates, proximities), repeats),
        rank_ms=_timed(lambda: ranker.rank(graph, seeds, context), repeats),
        total_ms=_timed(lambda: reranker.rerank(candidates, top_n=10), repeats),
    )


def render(rows: Sequence[LatencyRow], command: str) -> str:
    lines = [
        "## Reranking latency",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, in-process, single query at a time.  ",
        "Candidates carry synthetic entity metadata shaped like spaCy NER output (about 10 "
        "entities per object, a few generic ones shared widely), calibrated to the mean degree "
        "of the real spaCy entity graphs measured below (16-24 among the hybrid top-200); "
        "edges are built by "
        "`SharedEntities` (paper A.3 weights). *Total* is `GraphReranker.rerank(..., top_n=10)` "
        "end to end: validation, seeds, graph, ranking, ordering, explanations. "
        "`max_holders=50` is the hub remedy: entities named by more than 50 candidates are "
        "ignored (at n = 200 it changes nothing; at 20 000 it removes the generic hubs).",
        "",
        "| n | edges from | ranker | edges | avg degree | graph ms (median / p95) "
        "| rank ms (median / p95) | total ms (median / p95) |",
        "|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.n} | {row.edges_from} | {row.ranker} | {row.edges} | "
            f"{row.average_degree:.1f} | "
            f"{row.graph_ms[0]:.3f} / {row.graph_ms[1]:.3f} | "
            f"{row.rank_ms[0]:.3f} / {row.rank_ms[1]:.3f} | "
            f"{row.total_ms[0]:.3f} / {row.total_ms[1]:.3f} |"
        )
    return "\n".join(lines)


def write_section(path: Path, section: str) -> None:
    """Replace the text between the latency markers of ``path`` (created if missing)."""
    start, end = MARKERS
    text = path.read_text() if path.exists() else f"# Benchmarks\n\n{start}\n{end}\n"
    if start not in text or end not in text:
        text = text.rstrip() + f"\n\n{start}\n{end}\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    path.write_text(pattern.sub(lambda _: f"{start}\n{section}\n{end}", text, count=1))


def run(args: argparse.Namespace) -> int:
    sizes = [int(x) for x in args.sizes.split(",")]
    rankers = args.rankers.split(",")
    configurations = [("entities", [SharedEntities("entities")]),
                      ("entities, max_holders=50", [SharedEntities("entities", max_holders=50)])]
    rows = []
    for n in sizes:
        repeats = args.repeats if n <= 200 else max(3, args.repeats // (n // 100))
        for label, proximities in configurations:
            for ranker in rankers:
                row = measure(n, ranker, proximities, repeats, label)
                rows.append(row)
                print(f"n={row.n:>6} {label:<24} {row.ranker:<4} edges={row.edges:>9} "
                      f"graph {row.graph_ms[0]:8.3f} ms  rank {row.rank_ms[0]:8.3f} ms  "
                      f"total {row.total_ms[0]:8.3f} ms (p95 {row.total_ms[1]:.3f})",
                      flush=True)
    if args.write:
        command = "grapher-bench bench-latency " + " ".join(
            f"--{k} {v}" for k, v in (("sizes", args.sizes), ("rankers", args.rankers),
                                     ("repeats", args.repeats))
        ) + f" --write {args.write}"
        write_section(Path(args.write), render(rows, command))
        print(f"written to {args.write}")
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("bench-latency", help="time graph build and ranking")
    parser.add_argument("--sizes", default="200,2000,20000", help="candidate counts")
    parser.add_argument("--rankers", default="gcs,ppr", help="comma-separated ranker names")
    parser.add_argument("--repeats", type=int, default=200, help="timed runs per size")
    parser.add_argument("--write", metavar="FILE", help="update this markdown file")
    parser.set_defaults(func=run)
