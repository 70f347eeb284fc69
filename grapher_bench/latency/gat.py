"""``grapher-bench gat-latency --paths``: the GAT's inference paths timed against each other.

For each graph kind, size and device it times, interleaved in one loop, the ways
:class:`~grapher_core.learned.gat.model.InferencePlan` runs the shipped GAT on one query:
``plan`` (sorted CSR segments), ``plan-scatter`` (the scatter kernel, the plan before the CSR
kernel), ``plan-graph`` (the scatter kernel replayed as a CUDA graph per size bucket; timed on
CUDA only, since elsewhere it is an eager padded run that nothing picks) and ``forward``
(``GraphERNet.forward``, torch-geometric). A ``plan-graph`` timing is the steady state: the
bucket's capture happens in the untimed first call. It reports wall-clock median
and p95, CPU-time median (on a shared box, what a call costs without waiting for a core),
the largest output difference from ``forward`` and the path
:func:`~grapher_core.learned.gat.model.inference_path` picks.

Graphs are synthetic at the densities the rankers meet, built with the library's own
proximities so that edge features are the real ones:

* **table**: Spider-like schemas, tables of 10-table databases linked by two foreign keys
  each (``ForeignKeys``): sparse, a few edges per node;
* **entity**: candidates naming two entities each from a pool sized so that the shared-entity
  cliques (``SharedEntities``) give about 20 edges per node at 200 candidates (4k edges) and
  about 43 at 2,000 (87k edges), the densities measured on the multi-hop sets.
"""

from __future__ import annotations

import functools
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "END_TO_END_SECTION",
    "GRAPH_KINDS",
    "NOT_MEASURED",
    "PATHS",
    "SECTION",
    "EndToEndRow",
    "PathTiming",
    "Row",
    "end_to_end_line",
    "graph_inputs",
    "machine_line",
    "measure",
    "measure_end_to_end",
    "render_end_to_end",
    "render_section",
    "unmeasured_rows",
    "write_section",
]

GRAPH_KINDS: tuple[str, ...] = ("table", "entity")
PATHS: tuple[str, ...] = ("plan", "plan-scatter", "plan-graph", "forward")
CUDA_ONLY: frozenset[str] = frozenset({"plan-graph"})
"""Paths timed on CUDA devices only (their cell elsewhere says so)."""
SECTION = "## GAT inference: plan vs forward"
ENTITY_EDGES_PER_NODE = {200: 20.0, 2000: 43.0}
"""Directed shared-entity edges per node to aim for (the sizes measured elsewhere); other
sizes interpolate in log n."""


@dataclass(frozen=True)
class PathTiming:
    """One path on one case: wall median and p95, CPU-time median, in ms."""

    median_ms: float
    p95_ms: float
    cpu_median_ms: float


@dataclass(frozen=True)
class Row:
    """One case: graph kind, size, device, threads, each path's timing and the checks."""

    kind: str
    n: int
    edges: int
    device: str
    threads: int
    repeats: int
    timings: dict[str, PathTiming]
    max_diff: float
    chosen: str
    why: str = ""

    @property
    def fastest(self) -> str:
        """The path with the lowest wall median in this run ("-" when nothing was timed)."""
        if not self.timings:
            return "-"
        return min(self.timings, key=lambda path: self.timings[path].median_ms)


def _edges_per_node(n: int) -> float:
    low, high = ENTITY_EDGES_PER_NODE[200], ENTITY_EDGES_PER_NODE[2000]
    position = (np.log(max(n, 2)) - np.log(200)) / (np.log(2000) - np.log(200))
    return float(low + (high - low) * np.clip(position, 0.0, 1.0))


def _candidates(kind: str, n: int, seed: int) -> tuple[list[Any], list[Any], np.ndarray]:
    """``n`` candidates with unit embeddings and the metadata of ``kind``, their proximity,
    and a unit query vector."""
    from grapher_core.candidates import Candidate
    from grapher_core.edges.entities import SharedEntities
    from grapher_core.edges.keys import ForeignKeys

    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n + 1, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = np.sort(rng.random(n))[::-1]
    if kind == "table":  # 10-table databases, two foreign keys per table within its database
        links = [
            [f"t{(i // 10) * 10 + int(j)}" for j in rng.choice(10, 2, replace=False)]
            for i in range(n)
        ]
        metadata = [{"foreign_keys": link} for link in links]
        proximities: list[Any] = [ForeignKeys("foreign_keys")]
    elif kind == "entity":  # two entities each; pool sized for the target density
        held = 2
        pool = max(1, round((n * held) ** 2 / (n * _edges_per_node(n))))
        metadata = [
            {"entities": [f"e{int(e)}" for e in rng.choice(pool, held, replace=False)]}
            for _ in range(n)
        ]
        proximities = [SharedEntities("entities")]
    else:
        raise ValueError(f"graph kind must be one of {GRAPH_KINDS}, got {kind!r}")
    candidates = [
        Candidate(f"t{i}", "", float(scores[i]), metadata[i], vectors[i]) for i in range(n)
    ]
    return candidates, proximities, vectors[-1]


def graph_inputs(kind: str, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The GAT's numpy inputs for one synthetic query: scalars, objects, query, edge arrays
    (self-loops included), built by the ranker's own feature code."""
    from grapher_core.edges.graph import build_graph
    from grapher_core.learned.gat.features import graph_arrays
    from grapher_core.ranking.seeds import make_seeds

    candidates, proximities, query = _candidates(kind, n, seed)
    graph = build_graph(candidates, proximities)
    arrays = graph_arrays(graph, make_seeds(candidates), 0.1)
    return {
        "scalars": arrays.scalars,
        "objects": np.stack([c.embedding for c in candidates]).astype(np.float32),
        "query": query,
        "edge_index": arrays.edge_index,
        "edge_attr": arrays.edge_attr,
    }


def _time_interleaved(
    calls: dict[str, Callable[[], Any]], repeats: int, sync: Callable[[], None]
) -> dict[str, PathTiming]:
    """Each repeat calls every path once, in a rotated order, so that load drifts hit all."""
    names = list(calls)
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            started, started_cpu = time.perf_counter(), time.process_time()
            calls[name]()
            sync()
            wall[name].append((time.perf_counter() - started) * 1e3)
            cpu[name].append((time.process_time() - started_cpu) * 1e3)
    out = {}
    for name in names:
        samples = sorted(wall[name])
        p95 = samples[min(len(samples) - 1, int(0.95 * len(samples)))]
        out[name] = PathTiming(statistics.median(samples), p95, statistics.median(cpu[name]))
    return out


def _repeats_for(calls: dict[str, Callable[[], Any]], repeats: int, budget_s: float) -> int:
    """``repeats``, fewer when one round of all paths would not fit ``budget_s`` (at least 5)."""
    started = time.perf_counter()
    for call in calls.values():
        call()
    one_round = max(time.perf_counter() - started, 1e-6)
    return max(5, min(repeats, int(budget_s / one_round)))


def measure_case(
    plan: Any, kind: str, n: int, device: str, threads: int, repeats: int, budget_s: float
) -> Row:
    """Time the three paths on one synthetic graph; ``plan`` is an ``InferencePlan``."""
    import torch

    from grapher_core.utils.threads import torch_threads

    arrays = graph_inputs(kind, n)
    tensors = {k: torch.from_numpy(v).to(device) for k, v in arrays.items()}
    args = [tensors[k] for k in ("scalars", "objects", "query", "edge_index", "edge_attr")]

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    timed = [p for p in PATHS if device.startswith("cuda") or p not in CUDA_ONLY]
    calls: dict[str, Callable[[], Any]] = {
        path: functools.partial(plan, *args, path=path) for path in timed
    }
    with torch_threads(threads, device), torch.inference_mode():
        outputs = {path: call() for path, call in calls.items()}
        rounds = _repeats_for(calls, repeats, budget_s)
        timings = _time_interleaved(calls, rounds, sync)
        choice = plan.choose(*args)  # what a ranker runs here: measured on CUDA, a rule on CPU
    reference = outputs["forward"]
    max_diff = max(float((output - reference).abs().max()) for output in outputs.values())
    edges = int(arrays["edge_index"].shape[1])
    return Row(
        kind, n, edges, device, threads, rounds, timings, max_diff, choice.path, choice.reason
    )


def measure(
    kinds: Sequence[str],
    sizes: Sequence[int],
    devices: Sequence[str],
    threads: int,
    repeats: int,
    budget_s: float,
    log: Callable[[str], None] = print,
) -> list[Row]:
    """Every (kind, size, device) case with the shipped GAT loaded once per device."""
    from grapher_core.learned.gat.checkpoint import GAT
    from grapher_core.learned.gat.model import InferencePlan

    rows = []
    for device in devices:
        model, _ = GAT.load(GAT.default_path("gat"), device)
        plan = InferencePlan(model.eval())
        for kind in kinds:
            for n in sizes:
                row = measure_case(plan, kind, n, device, threads, repeats, budget_s)
                log(_row_line(row))
                rows.append(row)
    return rows


NOT_MEASURED = "not measured here (no GPU)"


def unmeasured_rows(
    kinds: Sequence[str], sizes: Sequence[int], device: str, threads: int
) -> list[Row]:
    """Rows for a device this machine lacks: sizes and the path the ranker would take there,
    no timings (the table says so instead of leaving the device out)."""
    from grapher_core.learned.gat.model import path_choice

    rows = []
    for kind in kinds:
        for n in sizes:
            edges = int(graph_inputs(kind, n)["edge_index"].shape[1])
            choice = path_choice(device, n, edges)
            rows.append(
                Row(
                    kind, n, edges, device, threads, 0, {}, float("nan"), choice.path, choice.reason
                )
            )
    return rows


def _cell(timing: PathTiming | None, path: str, measured: bool) -> str:
    if timing is None:
        return "CUDA only" if measured and path in CUDA_ONLY else NOT_MEASURED
    return f"{timing.median_ms:.2f} / {timing.p95_ms:.2f} ({timing.cpu_median_ms:.2f})"


def _row_line(row: Row) -> str:
    measured = bool(row.timings)
    cells = " | ".join(_cell(row.timings.get(path), path, measured) for path in PATHS)
    repeats = row.repeats if row.timings else "-"
    diff = f"{row.max_diff:.1e}" if row.timings else "-"
    return (
        f"| {row.kind} | {row.n} | {row.edges} | {row.device} | {row.threads} | "
        f"{repeats} | {cells} | {diff} | {row.fastest} | {row.chosen} |"
    )


def why_lines(rows: Sequence[Row]) -> list[str]:
    """One line per row: why its path was chosen (a measurement's timings or the rule)."""
    return [f"- {row.kind} {row.n} on {row.device}: {row.chosen}, {row.why}" for row in rows]


def machine_line() -> str:
    """CPU model, cores, load average, torch and Python versions, for the table's caption."""
    import torch

    model = "unknown CPU"
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        model = next(
            (line.split(":", 1)[1].strip() for line in lscpu.splitlines() if "Model name" in line),
            model,
        )
    except (OSError, subprocess.SubprocessError):
        pass
    one, five, fifteen = os.getloadavg()
    return (
        f"{model}, `nproc` = {os.cpu_count()}, load average {one:.1f} / {five:.1f} / "
        f"{fifteen:.1f} (1 / 5 / 15 min) at the end, torch {torch.__version__}, "
        f"Python {platform.python_version()}"
    )


def render_section(
    rows: Sequence[Row], command: str, machine: str, cuda_note: str | None, notes: str = ""
) -> str:
    """The markdown section: command, machine, one table row per case, CUDA rows as a note."""
    header = " | ".join(f"{path} median / p95 (CPU)" for path in PATHS)
    lines = [
        SECTION,
        "",
        f"`{command}`, on {machine}. Times in ms: wall-clock median / p95 over interleaved "
        "repeats, and in parentheses the median CPU time of the call (on this shared box, what "
        "it costs without waiting for a core). `max |diff|`: the largest difference of any "
        "path's scores from `forward`. `fastest here`: the lowest wall median of this run. "
        "`chosen`: what a ranker runs (`InferencePlan.choose`: measured on the call's size "
        "class on CUDA, the shipped rule on CPU), with why below the table.",
        "",
        f"| graph | n | edges | device | threads | repeats | {header} | max \\|diff\\| "
        "| fastest here | chosen |",
        "|---|---:|---:|---|---:|---:|" + "---:|" * (len(PATHS) + 1) + "---|---|",
        *(_row_line(row) for row in rows),
        "",
        "Why each path was chosen:",
        "",
        *why_lines(rows),
    ]
    if cuda_note:
        lines += ["", cuda_note]
    if notes:
        lines += ["", notes.strip()]
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str, heading: str = SECTION) -> None:
    """Put ``section`` at the end of ``path``: the file is re-read right before writing (other
    sections may have been appended meanwhile) and only this section's own old text, from its
    ``heading`` to the next ``## `` heading, is replaced."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    start = text.find("\n" + heading + "\n")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[:start] + ("" if end < 0 else text[end:])
    text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text, encoding="utf-8")


END_TO_END_SECTION = "## GAT end to end vs its kernel vs GCS"


@dataclass(frozen=True)
class EndToEndRow:
    """One pool: the GAT reranker's whole call, its network alone and the default GCS
    reranker on the same pool, each as wall median / p95 and CPU median (ms)."""

    kind: str
    n: int
    edges: int
    device: str
    threads: int
    repeats: int
    gat: PathTiming
    kernel: PathTiming
    gcs: PathTiming
    path: str

    def over(self, other: PathTiming) -> str:
        """``gat / other`` on wall medians, and on CPU medians in parentheses (on a loaded
        machine the wall clock also counts waits for a core, which a torch call meets more
        often than a short numpy one)."""
        wall = self.gat.median_ms / other.median_ms
        cpu = self.gat.cpu_median_ms / max(other.cpu_median_ms, 1e-9)
        return f"{wall:.2f}x ({cpu:.2f}x)"


def measure_end_to_end(kind: str, n: int, device: str, threads: int, repeats: int) -> EndToEndRow:
    """``GraphReranker(..., ranker=GATRanker(device=...)).run(n candidates, vectors given,
    top_n=10)``, the ranker's own plan on the same inputs already on the device (its chosen
    path, synchronised: the kernel) and ``GraphReranker(...)`` with the default GCS, timed
    interleaved in one loop."""
    import torch

    from grapher_core.learned.gat.ranker import GATRanker
    from grapher_core.rerank import GraphReranker
    from grapher_core.utils.threads import torch_threads

    candidates, proximities, query = _candidates(kind, n, seed=0)
    ranker = GATRanker(device=device, threads=threads)
    gat, gcs = GraphReranker(proximities, ranker=ranker), GraphReranker(proximities)
    arrays = graph_inputs(kind, n)
    keys = ("scalars", "objects", "query", "edge_index", "edge_attr")
    scalars, objects, query_vector, edge_index, edge_attr = (
        torch.from_numpy(arrays[k]).to(device) for k in keys
    )
    inputs = (scalars, objects, query_vector, edge_index, edge_attr)

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def kernel() -> None:
        with torch_threads(threads, device), torch.inference_mode():
            ranker._plan.run(*inputs, True)

    calls: dict[str, Callable[[], Any]] = {
        "gat": lambda: gat.run(candidates, query_embedding=query, top_n=10),
        "kernel": kernel,
        "gcs": lambda: gcs.run(candidates, query_embedding=query, top_n=10),
    }
    for call in calls.values():  # warm-up; the GAT's path is measured here on CUDA
        call()
    sync()
    timings = _time_interleaved(calls, repeats, sync)
    with torch.inference_mode():
        path = ranker._plan.choose(*inputs, True).path
    edges = int(arrays["edge_index"].shape[1])
    return EndToEndRow(
        kind, n, edges, device, threads, repeats, timings["gat"], timings["kernel"],
        timings["gcs"], path,
    )  # fmt: skip


def _timing_cell(timing: PathTiming) -> str:
    return f"{timing.median_ms:.3f} / {timing.p95_ms:.3f} ({timing.cpu_median_ms:.3f})"


def end_to_end_line(row: EndToEndRow) -> str:
    return (
        f"| {row.kind} | {row.n} | {row.edges} | {row.device} | {row.threads} | {row.repeats} "
        f"| {_timing_cell(row.gat)} | {_timing_cell(row.kernel)} | {_timing_cell(row.gcs)} "
        f"| {row.over(row.kernel)} | {row.over(row.gcs)} | {row.path} |"
    )


def render_end_to_end(
    rows: Sequence[EndToEndRow], command: str, machine: str, note: str = ""
) -> str:
    """The markdown section of ``gat-latency --end-to-end`` (``note``: devices not measured)."""
    return (
        "\n".join(
            [
                END_TO_END_SECTION,
                "",
                f"`{command}`, on {machine}. Times in ms, wall median / p95 (CPU median), "
                "interleaved in one loop: *GAT* = `GraphReranker([...], ranker=GATRanker("
                "device=...)).run(candidates, query_embedding=..., top_n=10)` with the candidates' "
                "vectors given; *kernel* = the same ranker's network alone on the same inputs "
                "already on the device (its chosen path, synchronised); *GCS* = the default "
                "`GraphReranker([...]).run(...)` on the same pool. Targets: GAT <= 1.5x kernel "
                "on CUDA at 200 candidates, GAT <= 4x GCS on one CPU thread.",
                "",
                "| graph | n | edges | device | threads | repeats | GAT | kernel | GCS "
                "| GAT / kernel wall (CPU) | GAT / GCS wall (CPU) | path |",
                "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
                *(end_to_end_line(row) for row in rows),
                *(["", note] if note else []),
            ]
        )
        + "\n"
    )
