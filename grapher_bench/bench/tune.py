"""``grapher-bench tune``: grid-search alpha for PPR and GCS on a training split.

The paper tuned GCS's alpha on BIRD train (not available here); we tune on ``spider_train``
and fix the chosen values for every dataset, as the paper does. The objective is PR@10 over
multi-gold queries (ties broken by PR@10 over all queries, then by the larger alpha, which
stays closer to the retriever).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from grapher_bench.data import Dataset
from grapher_bench.enrichment import graphs_for
from grapher_bench.runner import DatasetRun, RankerSpec, run_dataset

__all__ = ["ALPHA_GRID", "TuneResult", "grid_table", "tune"]

ALPHA_GRID: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


@dataclass
class TuneResult:
    dataset: str
    objective: str
    runs: dict[str, DatasetRun]  # by retriever
    chosen: dict[str, dict[str, float]]  # retriever -> ranker -> alpha
    best_retriever: str

    def to_json(self) -> dict[str, Any]:
        grid: dict[str, dict[str, dict[str, float]]] = {}
        for retriever, run in self.runs.items():
            grid[retriever] = {
                label: {
                    "PR@10>1": r.metrics["PR@10>1"],
                    "PR@10": r.metrics["PR@10"],
                    "PR@5>1": r.metrics["PR@5>1"],
                    "PR@5": r.metrics["PR@5"],
                }
                for label, r in run.results.items()
            }
        return {
            "dataset": self.dataset,
            "objective": self.objective,
            "alphas": list(ALPHA_GRID),
            "chosen": self.chosen,
            "best_retriever": self.best_retriever,
            "grid": grid,
        }


def _key(metrics: dict[str, float], alpha: float) -> tuple[float, float, float]:
    return (round(metrics["PR@10>1"], 9), round(metrics["PR@10"], 9), alpha)


def tune(
    dataset: Dataset,
    retrievers: Sequence[str] = ("hybrid", "dense", "bm25"),
    rankers: Sequence[str] = ("gcs", "ppr"),
    graph: str | None = None,
    alphas: Sequence[float] = ALPHA_GRID,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> TuneResult:
    """Run baseline + every (ranker, alpha) for each retriever; pick alpha per ranker."""
    if not alphas or any(not 0 < a < 1 for a in alphas):
        raise ValueError(f"alphas must be in (0, 1), got {list(alphas)}")
    graph = graph or graphs_for(dataset.task_type)[0]
    specs = [RankerSpec("baseline", "baseline", "none")]
    specs += [
        RankerSpec(f"{name}@{alpha:.1f}", name, graph, alpha)
        for name in rankers
        for alpha in alphas
    ]
    runs: dict[str, DatasetRun] = {}
    chosen: dict[str, dict[str, float]] = {}
    for retriever in retrievers:
        run = run_dataset(dataset, [], retriever=retriever, specs=specs, progress=progress, log=log)
        runs[retriever] = run
        chosen[retriever] = {}
        for name in rankers:
            scored = {a: _key(run.results[f"{name}@{a:.1f}"].metrics, a) for a in alphas}
            best = max(alphas, key=scored.__getitem__)
            chosen[retriever][name] = best
    best_retriever = max(
        runs,
        key=lambda r: (
            runs[r].results[f"gcs@{chosen[r]['gcs']:.1f}"].metrics["PR@10>1"]
            if "gcs" in rankers
            else runs[r].results["baseline"].metrics["PR@10>1"]
        ),
    )
    return TuneResult(dataset.name, "PR@10>1", runs, chosen, best_retriever)


def grid_table(result: TuneResult) -> str:
    """Markdown: one row per (retriever, ranker), one column per alpha; PR@10 multi-gold (all)."""
    alphas = sorted(
        {
            float(label.split("@")[1])
            for run in result.runs.values()
            for label in run.results
            if "@" in label
        }
    )
    lines = [
        f"Grid on **{result.dataset}** — PR@10 of multi-gold queries (all queries), %; "
        "chosen alpha in bold.",
        "",
        "| retriever | ranker | baseline | " + " | ".join(f"α={a:.1f}" for a in alphas) + " |",
        "|---|---|---|" + "---|" * len(alphas),
    ]
    for retriever, run in result.runs.items():
        base = run.results["baseline"].metrics
        base_cell = f"{100 * base['PR@10>1']:.1f} ({100 * base['PR@10']:.1f})"
        names = list(dict.fromkeys(label.split("@")[0] for label in run.results if "@" in label))
        for name in names:
            cells = []
            for a in alphas:
                m = run.results[f"{name}@{a:.1f}"].metrics
                cell = f"{100 * m['PR@10>1']:.1f} ({100 * m['PR@10']:.1f})"
                cells.append(f"**{cell}**" if result.chosen[retriever][name] == a else cell)
            lines.append(f"| {retriever} | {name} | {base_cell} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
