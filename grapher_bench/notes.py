"""The generated part of docs/benchmarks.md's bench section: tables and their legends only.

The prose (setup, commands, the reading of the numbers, the paper's reference numbers) lives in
docs/benchmarks.md around the ``<!-- bench:start/end -->`` markers; re-read it when the
numbers move.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from grapher_bench.runner import DatasetRun
from grapher_bench.sections import pct

__all__ = ["render_section"]


def _tune_section(tune: dict[str, Any] | None) -> str:
    if not tune:
        return (
            "No tuning results were given (`--tune-results`); run `make tune` first. "
            "The rankers' default alphas are used.\n"
        )
    alphas = tune["alphas"]
    lines = [
        f"`grapher-bench tune` on **{tune['dataset']}** "
        f"({tune.get('seconds', '?')} s), objective "
        f"{tune['objective']}; cells are PR@10 multi-gold (all), %. Chosen α in bold.",
        "",
        "| retriever | ranker | baseline | " + " | ".join(f"α={a}" for a in alphas) + " |",
        "|---|---|---|" + "---|" * len(alphas),
    ]
    for retriever, grid in tune["grid"].items():
        base = grid["baseline"]
        for name in ("gcs", "ppr"):
            cells = []
            for a in alphas:
                m = grid.get(f"{name}@{a:.1f}")
                if m is None:
                    cells.append("")
                    continue
                cell = f"{pct(m['PR@10>1'])} ({pct(m['PR@10'])})"
                chosen = tune["chosen"].get(retriever, {}).get(name)
                cells.append(f"**{cell}**" if chosen == a else cell)
            lines.append(
                f"| {retriever} | {name} | {pct(base['PR@10>1'])} "
                f"({pct(base['PR@10'])}) | " + " | ".join(cells) + " |"
            )
    lines.append("")
    lines.append(
        "Chosen: "
        + "; ".join(
            f"{r}: " + ", ".join(f"{n} α={a}" for n, a in c.items())
            for r, c in tune["chosen"].items()
        )
        + f". Best retriever on the training split "
        f"(by tuned GCS): **{tune['best_retriever']}**. The hybrid choices are the defaults in "
        "`grapher_core/ranking/propagation.py` (`DEFAULT_GCS_ALPHA`, `DEFAULT_PPR_ALPHA`) and are "
        "used for "
        "every retriever and dataset in the tables above, as in the paper. PPR 0.8 vs 0.9 differs "
        "by 0.7 points (about 3 queries): within noise."
    )
    return "\n".join(lines) + "\n"


def _diagnostics(runs: Sequence[DatasetRun]) -> str:
    lines = [
        "| dataset | retriever | ranker | PR@10>1 | Δ vs baseline | fixes / breaks @10 | "
        "top-5 from rank > 20 | rerank ms (median) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        base = run.results.get("baseline")
        for label, result in run.results.items():
            if label == "baseline":
                continue
            m = result.metrics
            key = "PR@10>1" if run.n_multi else "PR@10"
            delta = (100 * (m[key] - base.metrics[key])) if base else float("nan")
            fb = f"{int(m['fixes@10'])} / {int(m['breaks@10'])}" if "fixes@10" in m else ""
            lines.append(
                f"| {run.dataset} | {run.retriever} | {label} | {pct(m[key])} | "
                f"{delta:+.1f} | {fb} | {pct(m['top5_from_below_20'])} | "
                f"{m['rerank_ms_median']:.1f} |"
            )
    return "\n".join(lines) + "\n"


def _degrees(runs: Sequence[DatasetRun]) -> str:
    lines = [
        "| dataset | graph | mean degree | median | p99 | max | isolated |",
        "|---|---|---|---|---|---|---|",
    ]
    seen: set[tuple[str, str]] = set()
    for run in runs:
        for graph, stats in run.graph_stats.items():
            if (run.dataset, graph) in seen:
                continue
            seen.add((run.dataset, graph))
            lines.append(
                f"| {run.dataset} | {graph} | {stats['mean']:.1f} | "
                f"{stats['median']:.0f} | {stats['p99']:.0f} | {stats['max']:.0f} | "
                f"{100 * stats['isolated']:.0f}% |"
            )
    return "\n".join(lines) + "\n"


def render_section(
    runs: Sequence[DatasetRun],
    table: str,
    tune: dict[str, Any] | None,
    elapsed: float,
    args: argparse.Namespace,
) -> str:
    """What the run writes between the bench markers of docs/benchmarks.md: the tables and
    their legends. The setup, the commands, the reading and the paper's numbers are prose in
    the doc itself, around the markers."""
    limit = f" (first {args.limit} queries per dataset)" if args.limit else ""
    return f"""\
_The bench run that wrote the tables below took ≈ {elapsed / 60:.0f} min{limit}._

{table}
### α tuning

{_tune_section(tune)}
### Per-ranker diagnostics

Fixes/breaks: queries whose PR@10 the ranker turns from miss to hit / hit to miss against the
same retriever's order. "Top-5 from rank > 20": share of the reranked top 5 that the retriever
had ranked below 20 (lesson (d): PPR's hub failure).

{_diagnostics(runs)}
### Candidate-graph degrees (out-degree per candidate, over all queries)

{_degrees(runs)}"""
