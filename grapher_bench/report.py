"""Paper-style markdown tables, the PR@K plot, and results.json / per-query files."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from grapher_bench import sections
from grapher_bench.paired import paired_json, paired_table, paired_tests
from grapher_bench.runner import DatasetRun
from grapher_bench.sections import pct

__all__ = ["combined_table", "plot_pr_curve", "run_table", "write_run", "write_section"]

TASK_TITLES = {
    "tables": "Table retrieval",
    "passages": "Multi-hop QA (passages)",
    "chunks": "Chunked documents",
}


def _cell(run: DatasetRun, label: str, k: int) -> str:
    result = run.results.get(label)
    if result is None:
        return ""
    m = result.metrics
    if run.n_multi == run.n_queries:
        return pct(m[f"PR@{k}"])
    return f"{pct(m.get(f'PR@{k}>1'))} ({pct(m[f'PR@{k}'])})"


def _bold_best(cells: list[str]) -> list[str]:
    def head(cell: str) -> float:
        try:
            return float(cell.split(" ")[0])
        except ValueError:
            return -1.0

    best = max((head(c) for c in cells), default=-1.0)
    if best < 0:
        return cells
    return [f"**{c}**" if head(c) == best else c for c in cells]


def combined_table(runs: Sequence[DatasetRun], ks: Sequence[int] = (5, 10)) -> str:
    """One markdown table per task type: rows retriever + ranker, columns datasets; cells are
    PR@K of multi-gold queries with all queries in parentheses (one number when every query is
    multi-gold). The best row of each retriever block is in bold."""
    blocks: list[str] = []
    for task in ("tables", "passages", "chunks"):
        task_runs = [r for r in runs if r.task_type == task]
        if not task_runs:
            continue
        datasets = list(dict.fromkeys(r.dataset for r in task_runs))
        retrievers = list(dict.fromkeys(r.retriever for r in task_runs))
        by_key = {(r.dataset, r.retriever): r for r in task_runs}
        lines = [
            f"#### {TASK_TITLES[task]}",
            "",
            "| retriever + ranker | " + " | ".join(datasets) + " |",
            "|---|" + "---|" * len(datasets),
        ]
        for k in ks:
            lines.append(f"| **PR@{k} (%)** |" + " |" * len(datasets))
            for retriever in retrievers:
                labels = list(
                    dict.fromkeys(
                        label for r in task_runs if r.retriever == retriever for label in r.results
                    )
                )
                rows = []
                for label in labels:
                    rows.append(
                        [
                            _cell(by_key[(d, retriever)], label, k)
                            if (d, retriever) in by_key
                            else ""
                            for d in datasets
                        ]
                    )
                columns = [_bold_best([row[i] for row in rows]) for i in range(len(datasets))]
                for j, label in enumerate(labels):
                    cells = [columns[i][j] for i in range(len(datasets))]
                    lines.append(f"| {retriever} + {label} | " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def run_table(run: DatasetRun, ks: Sequence[int] = (5, 10)) -> str:
    """One dataset's table with every metric (fractions shown as percentages)."""
    header = (
        ["ranker"]
        + [f"PR@{k}>1 (all)" for k in ks]
        + [
            "recall@10",
            "FirstRR",
            "MRR",
            "MHits@10",
            "MTRR",
            "TMHits@10",
            "fixes/breaks @10",
            "top-5 from rank>20",
            "rerank ms",
        ]
    )
    lines = [
        f"**{run.dataset}** ({run.task_type}, retriever {run.retriever}, "
        f"{run.n_queries} queries, {run.n_multi} multi-gold, top-{run.n_candidates})",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for label, result in run.results.items():
        m = result.metrics
        fixes = f"{int(m['fixes@10'])}/{int(m['breaks@10'])}" if "fixes@10" in m else ""
        cells = [label] + [f"{pct(m.get(f'PR@{k}>1'))} ({pct(m[f'PR@{k}'])})" for k in ks]
        cells += [
            pct(m["recall@10"]),
            pct(m.get("FirstRR")),
            pct(m.get("MRR")),
            pct(m.get("MHits@10")),
            pct(m["MTRR"]),
            pct(m["TMHits@10"]),
            fixes,
            pct(m["top5_from_below_20"]),
            f"{m['rerank_ms_median']:.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_pr_curve(run: DatasetRun, path: Path, max_k: int = 20) -> None:
    """PR@K (all queries) against K = 1..max_k, one line per ranker."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4.5))
    ks = list(range(1, max_k + 1))
    for label, result in run.results.items():
        axis.plot(
            ks, [result.metrics[f"PR@{k}"] for k in ks], marker="o", markersize=3, label=label
        )
    axis.set_xlabel("K")
    axis.set_ylabel("perfect recall@K (all queries)")
    axis.set_title(f"{run.dataset} — {run.retriever} retriever, top-{run.n_candidates}")
    axis.set_xticks(ks)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_run(run: DatasetRun, folder: Path, ks: Sequence[int] = (5, 10)) -> None:
    """results.json (with the paired tests), per_query.json, table.md and pr_at_k.png for one
    run."""
    folder.mkdir(parents=True, exist_ok=True)
    tests = paired_tests(run, ks)
    payload = {**run.to_json(), "paired": paired_json(tests)}
    (folder / "results.json").write_text(json.dumps(payload, indent=2) + "\n")
    per_query = {label: r.per_query for label, r in run.results.items()}
    (folder / "per_query.json").write_text(json.dumps(per_query) + "\n")
    paired = paired_table(tests)
    table = run_table(run, ks)
    (folder / "table.md").write_text(table + (f"\nPaired tests:\n\n{paired}" if paired else ""))
    plot_pr_curve(run, folder / "pr_at_k.png")


START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def write_section(doc: Path, body: str) -> None:
    """Replace the text between the bench markers of ``doc`` (and nothing else)."""
    sections.write_section(doc, START, END, body)
