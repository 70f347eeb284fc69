"""``grapher-bench bench-latency``: how long reranking takes, graph build and ranking timed apart.

Two workloads of candidates with entity metadata, at each size:

* **calibrated**: every object names ~10 entities, a few generic ones shared widely
  ("american", "first"), some shared within topical clusters, the rest its own -- calibrated
  so that at n = 200 the entity graph has the mean degree that ``grapher-bench bench`` measured
  with spaCy entities among the hybrid top-200 of the multi-hop sets (16.4 musique, 18.0
  2wikimultihopqa, 24.4 hotpotqa; docs/benchmarks.md): about 21.
* **zipf**: hub-dense -- 8 draws per object from 400 entities with weight ``1 / (i + 1)``
  (mean degree ~160 at n = 200: the entity graph is nearly complete).

Every row uses the default settings (``GraphReranker([SharedEntities("entities")])``, GCS at
its default alpha), and a plain numpy/scipy reference pipeline (dictionary vocabulary, sparse
product, literal Algorithm 1, ``argsort``; same hub rule) is timed in the same run for the
ratio. ``grapher-bench hub-memory`` prints the peak memory of reranking n candidates that all
share one entity. With ``--write``, numbers go to docs/benchmarks.md between markers.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from grapher_bench import sections
from grapher_bench.cli import positive_int
from grapher_bench.timing import median_p95_ms
from grapher_core.candidates import Candidate
from grapher_core.cli.arguments import output_argument
from grapher_core.edges.base import Proximity
from grapher_core.edges.entities import EDGE_BUDGET_FLOOR, SharedEntities
from grapher_core.edges.graph import build_graph
from grapher_core.metadata import normalised_set, read_list
from grapher_core.ranking.base import RankContext
from grapher_core.ranking.propagation import DEFAULT_DEGREE_EXPONENT, DEFAULT_GCS_ALPHA
from grapher_core.ranking.registry import make_ranker
from grapher_core.ranking.seeds import make_seeds
from grapher_core.rerank import GraphReranker

MARKERS = ("<!-- latency:start -->", "<!-- latency:end -->")
HUB_MARKERS = ("<!-- hub-memory:start -->", "<!-- hub-memory:end -->")


def synthetic_candidates(
    n: int,
    seed: int = 0,
    *,
    generic: int = 60,
    generic_rate: float = 0.04,
    cluster_size: int = 6,
    per_object: int = 10,
) -> list[Candidate]:
    """``n`` scored candidates with entity lists shaped like NER output on Wikipedia passages."""
    rng = np.random.default_rng(seed)
    candidates = []
    for i in range(n):
        entities = [f"generic {g}" for g in np.flatnonzero(rng.random(generic) < generic_rate)]
        cluster = i // cluster_size
        entities += [f"topic {cluster} entity {k}" for k in rng.choice(4, 2, replace=False)]
        entities += [f"object {i} entity {k}" for k in range(max(per_object - len(entities), 1))]
        candidates.append(
            Candidate(
                id=f"doc-{i}",
                text="",
                score=float(1.0 - i / (2 * n)),
                metadata={"entities": entities},
            )
        )
    order = rng.permutation(n)  # clusters should not sit next to each other in the ranking
    return [candidates[i] for i in order]


def zipf_candidates(
    n: int, seed: int = 0, *, vocabulary: int = 400, draws: int = 8
) -> list[Candidate]:
    """``n`` scored candidates naming ``draws`` entities each, drawn with weight ``1/(i+1)``."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, vocabulary + 1)
    picks = rng.choice(vocabulary, size=(n, draws), p=weights / weights.sum())
    scores = rng.random(n)
    return [
        Candidate(
            id=f"z{i}",
            text="",
            score=float(scores[i]),
            metadata={"entities": [f"zipf {e}" for e in picks[i]]},
        )
        for i in range(n)
    ]


WORKLOADS: dict[str, Callable[[int], list[Candidate]]] = {
    "calibrated": synthetic_candidates,
    "zipf": zipf_candidates,
}


def reference_rerank(
    candidates: Sequence[Candidate],
    top_n: int = 10,
    alpha: float = DEFAULT_GCS_ALPHA,
    edge_budget: float = 8.0,
    tol: float = 1e-8,
) -> np.ndarray:
    """The plain numpy/scipy way: vocabulary dict, incidence matrix, ``B D B^T``, the same
    hub rule as ``SharedEntities`` (largest entities dropped until the pairs fit), the
    default GCS (seeds ``1/rank``, degree normalisation with degrees of at least 1) with
    ``@``, ``argsort``. Returns the top ``top_n`` positions."""
    n = len(candidates)
    vocabulary: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    for i, candidate in enumerate(candidates):
        for entity in normalised_set(read_list(candidate.metadata.get("entities"))):
            rows.append(i)
            cols.append(vocabulary.setdefault(entity, len(vocabulary)))
    incidence = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, len(vocabulary)))
    holders = np.asarray(incidence.sum(axis=0)).ravel()
    budget = max(EDGE_BUDGET_FLOOR, int(edge_budget * n))
    order = np.sort(holders)
    if (order * (order - 1)).sum() > budget:
        fits = np.cumsum(order * (order - 1)) <= budget
        limit = order[fits].max() if fits.any() else 1
        limit = limit - 1 if (order[~fits] == limit).any() else limit
        incidence = (incidence @ sp.diags((holders <= limit).astype(float))).tocsr()
    sizes = np.asarray(incidence.sum(axis=1)).ravel()  # |E_j|, kept entities only
    adjacency = (incidence @ incidence.T @ sp.diags(1.0 / np.maximum(sizes, 1))).tocsr()
    adjacency.setdiag(0.0)
    adjacency.eliminate_zeros()
    seeds = 1.0 / np.arange(1, n + 1)
    sums = 0.5 * (
        np.asarray(adjacency.sum(axis=1)).ravel() + np.asarray(adjacency.sum(axis=0)).ravel()
    )
    degrees = np.maximum(sums, 1.0)
    exponent = DEFAULT_DEGREE_EXPONENT
    transition = sp.diags(degrees**-exponent) @ adjacency @ sp.diags(degrees ** (exponent - 1))
    p = seeds.copy()
    for _ in range(10_000):
        nxt = alpha * seeds + (1 - alpha) * (transition @ p)
        done = np.abs(nxt - p).sum() < tol
        p = nxt
        if done:
            break
    return np.argsort(-np.maximum(p, seeds), kind="stable")[:top_n]


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
    reference_ms: tuple[float, float] | None = None

    @property
    def ratio(self) -> float | None:
        """How many times faster than the reference pipeline (medians)."""
        if self.reference_ms is None:
            return None
        return self.reference_ms[0] / self.total_ms[0]


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
"""``wall``: elapsed time (what a caller waits). ``cpu``: this process's CPU time per call --
on a shared, loaded machine the part of the wait that is the call's own work, not the queue
for a core (cache contention from the other jobs still counts)."""


def measure(
    n: int,
    ranker_name: str,
    proximities: Sequence[Proximity],
    repeats: int,
    label: str = "entities",
    *,
    workload: str = "calibrated",
    reference: bool = False,
    clock: str = "wall",
) -> LatencyRow:
    candidates = WORKLOADS[workload](n)
    ranker = make_ranker(ranker_name)
    graph = build_graph(candidates, proximities)
    reranker = GraphReranker(proximities, ranker=ranker)
    seeds = make_seeds(candidates, reranker.seed_policy)  # what a call uses
    context = RankContext(candidates)
    tick = CLOCKS[clock]
    return LatencyRow(
        n=n,
        ranker=ranker_name,
        edges_from=label,
        edges=graph.n_edges,
        average_degree=graph.n_edges / n,
        graph_ms=median_p95_ms(lambda: build_graph(candidates, proximities), repeats, clock=tick),
        rank_ms=median_p95_ms(lambda: ranker.rank(graph, seeds, context), repeats, clock=tick),
        total_ms=median_p95_ms(lambda: reranker.rerank(candidates, top_n=10), repeats, clock=tick),
        reference_ms=median_p95_ms(
            lambda: reference_rerank(candidates), max(3, repeats // 4), clock=tick
        )
        if reference
        else None,
    )


def render(rows: Sequence[LatencyRow], command: str, load: str = "", clock: str = "wall") -> str:
    lines = [
        "## Reranking latency",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"{platform.python_implementation()} {platform.python_version()}, in-process, single "
        f"query at a time{load}; clock: "
        f"{'wall (elapsed)' if clock == 'wall' else 'CPU time of the process per call'}.  ",
        "Workloads (see `grapher_bench/latency/rerank.py`): *calibrated* = synthetic entity "
        "metadata "
        "shaped like spaCy NER output (about 10 entities per object, a few generic ones shared "
        "widely), calibrated to the mean degree of the real spaCy entity graphs (16-24 among "
        "the hybrid top-200); *zipf* = hub-dense, 8 draws per object from 400 entities with "
        "weight 1/(i+1). Default settings everywhere: `GraphReranker([SharedEntities("
        '"entities")])` (GCS, alpha 0.1; the default `edge_budget` ignores the most widely '
        "held entities once the pairs pass max(100 000, 8 n): it never acts at n = 200, "
        "it removes the generic hubs at 2 000 and 20 000). *Total* is "
        "`GraphReranker.rerank(..., top_n=10)` end to end: validation, seeds, graph, ranking, "
        "ordering, explanations. *Reference* is a plain numpy/scipy pipeline for the same "
        "result (vocabulary dict, incidence matrix, sparse product, same hub rule, literal "
        "Algorithm 1, argsort), timed in the same run; *speed-up* = reference / total "
        "(medians).",
        "",
        "| n | workload | ranker | edges | avg degree | graph ms (median / p95) "
        "| rank ms (median / p95) | total ms (median / p95) | reference ms (median) "
        "| speed-up |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        reference = "–" if row.reference_ms is None else f"{row.reference_ms[0]:.3f}"
        ratio = "–" if row.ratio is None else f"{row.ratio:.1f}x"
        lines.append(
            f"| {row.n} | {row.edges_from} | {row.ranker} | {row.edges} | "
            f"{row.average_degree:.1f} | "
            f"{row.graph_ms[0]:.3f} / {row.graph_ms[1]:.3f} | "
            f"{row.rank_ms[0]:.3f} / {row.rank_ms[1]:.3f} | "
            f"{row.total_ms[0]:.3f} / {row.total_ms[1]:.3f} | {reference} | {ratio} |"
        )
    return "\n".join(lines)


def write_section(path: Path, section: str, markers: tuple[str, str] = MARKERS) -> None:
    """Replace the text between ``markers`` in ``path`` (created if missing)."""
    sections.write_section(path, *markers, section)


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f", load average {one:.1f} (1 min) / {five:.1f} (5 min) at the end"


def run(args: argparse.Namespace) -> int:
    sizes = [int(x) for x in args.sizes.split(",")]
    rankers = args.rankers.split(",")
    workloads = args.workloads.split(",")
    for workload in workloads:
        if workload not in WORKLOADS:
            raise ValueError(f"unknown workload {workload!r}; choose from {sorted(WORKLOADS)}")
    rows = []
    for n in sizes:
        repeats = args.repeats if n <= 200 else max(3, args.repeats // (n // 100))
        for workload in workloads:
            for ranker in rankers:
                row = measure(
                    n,
                    ranker,
                    [SharedEntities("entities")],
                    repeats,
                    workload,
                    workload=workload,
                    reference=not args.no_reference,
                    clock=args.clock,
                )
                rows.append(row)
                reference = (
                    ""
                    if row.ratio is None or row.reference_ms is None
                    else f"  reference {row.reference_ms[0]:9.3f} ms ({row.ratio:.1f}x)"
                )
                print(
                    f"n={row.n:>6} {workload:<11} {row.ranker:<4} edges={row.edges:>8} "
                    f"graph {row.graph_ms[0]:8.3f} ms  rank {row.rank_ms[0]:8.3f} ms  "
                    f"total {row.total_ms[0]:8.3f} ms (p95 {row.total_ms[1]:.3f})"
                    f"{reference}",
                    flush=True,
                )
    load = _load()
    print(load.lstrip(", "))
    if args.write:
        command = (
            "grapher-bench bench-latency "
            + " ".join(
                f"--{k} {v}"
                for k, v in (
                    ("sizes", args.sizes),
                    ("workloads", args.workloads),
                    ("rankers", args.rankers),
                    ("repeats", args.repeats),
                )
            )
            + ("" if args.clock == "wall" else f" --clock {args.clock}")
            + f" --write {args.write}"
        )
        write_section(Path(args.write), render(rows, command, load, args.clock))
        print(f"written to {args.write}")
    return 0


def hub_memory(n: int) -> dict[str, float]:
    """Rerank ``n`` candidates that all name one entity (plus one of their own), defaults.

    Returns the time, the edges, the peak of Python/numpy allocations during the call
    (tracemalloc) and the process's peak resident memory (``ru_maxrss``, whole process)."""
    import warnings

    candidates = [
        Candidate(
            id=f"c{i}", score=1.0 - i / (2 * n), metadata={"entities": ["everyone", f"own {i}"]}
        )
        for i in range(n)
    ]
    reranker = GraphReranker([SharedEntities("entities")])
    tracemalloc.start()
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = reranker.rerank(candidates, top_n=10)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    edges = reranker.graph(candidates).n_edges
    return {
        "n": n,
        "seconds": seconds,
        "edges": edges,
        "results": len(results),
        "traced_peak_mb": peak / 2**20,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "warnings": len(caught),
    }


def run_hub_memory(args: argparse.Namespace) -> int:
    m = hub_memory(args.n)
    text = (
        f"{m['n']:.0f} candidates sharing one entity, default settings: first call "
        f"{m['seconds'] * 1e3:.0f} ms (entity parsing included, slowed by tracemalloc), "
        f"{m['edges']:.0f} edges, peak allocations during "
        f"rerank {m['traced_peak_mb']:.1f} MB (tracemalloc), process peak RSS "
        f"{m['max_rss_mb']:.0f} MB (interpreter, numpy, scipy and the candidates included), "
        f"{m['warnings']:.0f} warning(s)"
    )
    print(text)
    if args.write:
        section = (
            "## Memory with one hub entity\n\n"
            f"Command: `grapher-bench hub-memory --n {args.n} --write {args.write}`  \n"
            f"{text}. Before the default `edge_budget`, the same call built "
            "400 M edges: 12.6 GB peak and 32 s; details in docs/speed.md."
        )
        write_section(Path(args.write), section, HUB_MARKERS)
        print(f"written to {args.write}")
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("bench-latency", help="time graph build and ranking")
    parser.add_argument("--sizes", default="200,2000,20000", help="candidate counts")
    parser.add_argument(
        "--workloads", default="calibrated,zipf", help="comma list: calibrated, zipf"
    )
    parser.add_argument("--rankers", default="gcs", help="comma-separated ranker names")
    parser.add_argument("--repeats", type=positive_int, default=200, help="timed runs per size")
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall: elapsed time; cpu: this process's CPU time per call "
        "(robust to waiting for a core on a loaded machine)",
    )
    parser.add_argument(
        "--no-reference", action="store_true", help="skip the plain numpy/scipy reference pipeline"
    )
    output_argument(parser, "--write", metavar="FILE", help="update this markdown file")
    parser.set_defaults(func=run)
    hub = subparsers.add_parser(
        "hub-memory", help="peak memory of reranking n candidates sharing one entity"
    )
    hub.add_argument("--n", type=positive_int, default=20_000)
    output_argument(hub, "--write", metavar="FILE", help="update this markdown file")
    hub.set_defaults(func=run_hub_memory)
