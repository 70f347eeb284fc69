"""Tables for the expansion rows of ``grapher-bench bench``, into their own marked
section of docs/benchmarks.md (``<!-- expand:start -->`` ... ``<!-- expand:end -->``).

    python -m grapher_bench.expansion.report --runs bench_out/expand --write docs/benchmarks.md

``--runs`` holds one bench output folder per dataset (``results.json`` + ``per_query.json``).
Per dataset: the best candidate-only GCS graph of the run is the reference; every expansion row
shows PR@10 (PR@5) and its fixes / breaks against that reference, query by query.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grapher_bench import sections
from grapher_bench.sections import pct

__all__ = ["END", "START", "load_runs", "main", "markdown", "section"]

START, END = "<!-- expand:start -->", "<!-- expand:end -->"
MAIN_ROWS = (
    "baseline",
    "gcs*",
    "gat*",
    "expand-gcs-v1",
    "expand-gcs",
    "expand-gcs[seed=floor]",
    "expand-gcs[links=all]",
    "expand-gcs[keep=1]",
    "expand-gcs[prune=cosine]",
    "expand-gcs[prune=learned]",
    "expand-gat",
    "graph-retriever",
    "graph-retriever-tuned",
)
"""Rows of the main table; a row ending in ``*`` is the best graph of that ranker per dataset
(named in its own row), every other row is a ``grapher-bench bench --rankers`` name."""
TIMING_ROWS = (
    "gcs*",
    "expand-gcs-v1",
    "expand-gcs",
    "expand-gat",
    "ego-gcs[k=1,n=5]",
    "graph-retriever",
)
ORDER = (
    "musique",
    "hotpotqa",
    "2wikimultihopqa",
    "spider_dev",
    "spider_train",
    "bird_dev",
    "beaver_dev",
    "squad_chunks",
    "hotpotqa_sentences",
    "2wikimultihopqa_sentences",
)


def load_runs(root: Path) -> list[dict[str, Any]]:
    """results.json (+ per_query.json) of every dataset folder under ``root``."""
    runs = []
    for folder in sorted(p for p in Path(root).iterdir() if (p / "results.json").is_file()):
        run = json.loads((folder / "results.json").read_text())
        per_query = folder / "per_query.json"
        run["per_query"] = json.loads(per_query.read_text()) if per_query.is_file() else {}
        runs.append(run)
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(runs, key=lambda r: (rank.get(r["dataset"], len(ORDER)), r["dataset"]))


def _best(run: dict[str, Any], prefix: str) -> str | None:
    labels = [
        label for label in run["results"] if label == prefix or label.startswith(prefix + "[")
    ]
    return max(labels, key=lambda label: run["results"][label]["PR@10"]) if labels else None


def _cell(run: dict[str, Any], label: str | None, ref: str | None) -> str:
    if label is None or label not in run["results"]:
        return ""
    m = run["results"][label]
    text = f"{pct(m['PR@10'])} ({pct(m['PR@5'])})"
    per_query = run.get("per_query", {})
    if ref and label != ref and label in per_query and ref in per_query:
        mine, theirs = per_query[label], per_query[ref]
        fixes = sum(1 for q, row in mine.items() if row["PR@10"] > theirs[q]["PR@10"])
        breaks = sum(1 for q, row in mine.items() if row["PR@10"] < theirs[q]["PR@10"])
        text += f" +{fixes}/−{breaks}"
    return text


def markdown(runs: Sequence[dict[str, Any]]) -> str:
    """The main table (one row per configuration, one column per dataset) and the ego table."""
    names = [r["dataset"] for r in runs]
    refs = {r["dataset"]: _best(r, "gcs") for r in runs}
    lines = [
        "Cells: PR@10 (PR@5), all queries, %; `+f/−b` = queries fixed / broken at PR@10 "
        "against the best candidate-only GCS graph of that dataset (`gcs*`, named in the "
        "second row).",
        "",
        "| configuration | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    lines.append(
        "| best candidate-only graph | "
        + " | ".join(f"`{refs[n]}`" if refs[n] else "" for n in names)
        + " |"
    )
    gats = {r["dataset"]: _best(r, "gat") for r in runs}
    if any(gats.values()):
        lines.append(
            "| best GAT graph (`gat*`) | "
            + " | ".join(f"`{gats[n]}`" if gats[n] else "" for n in names)
            + " |"
        )
    for row in MAIN_ROWS:
        cells = []
        for run in runs:
            label = _best(run, row[:-1]) if row.endswith("*") else row
            cells.append(_cell(run, label, refs[run["dataset"]]))
        if any(cells):
            lines.append(f"| {row} | " + " | ".join(cells) + " |")
    ego = sorted(
        {label for r in runs for label in r["results"] if label.startswith("ego-gcs")},
        key=lambda label: ("links=all" in label, [int(x) for x in re.findall(r"\d+", label)]),
    )
    if ego:
        lines += [
            "",
            "Ego-graph index (GRAG §4.1): the top-N K-hop ego-graphs by query cosine "
            "join the candidates, GCS ranks the union. PR@10 (PR@5), %.",
            "",
            "| K, N | " + " | ".join(names) + " |",
            "|---|" + "---|" * len(names),
        ]
        for label in ego:
            k, n = re.findall(r"\d+", label)[:2]
            suffix = " (ranked on all links)" if "links=all" in label else ""
            lines.append(
                f"| K={k}, N={n}{suffix} | "
                + " | ".join(_cell(r, label, refs[r["dataset"]]) for r in runs)
                + " |"
            )
    lines += [
        "",
        "Median rerank milliseconds per query (in-memory source; the peers include "
        "their own search). Taken on the shared 2-core machine with other jobs running: "
        "compare within a column only.",
        "",
        "| configuration | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for row in TIMING_ROWS:
        cells = []
        for run in runs:
            label = refs[run["dataset"]] if row == "gcs*" else row
            m = run["results"].get(label or "")
            cells.append(f"{m['rerank_ms_median']:.1f}" if m else "")
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def section(body: str) -> str:
    """The doc section around the tables of :func:`markdown`: its title and how to rerun it."""
    return (
        "## Expansion, ego-graphs and soft pruning\n\n"
        "Written by `python -m grapher_bench.expansion.report`; method and reading in "
        "[expansion.md](expansion.md). Every row label is a bench ranker name: `grapher-bench "
        "bench --data <set> --retriever hybrid --graphs <graph> --rankers <label>` (graphs: "
        "passages `mentions,entities-capped,mentions+entities-capped`, tables `fk`, chunks "
        "`adjacent,adjacent+mentions`; `prune=learned` reads `$GRAPHER_PRUNER`, see "
        f"expansion.md).\n\n{body}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=Path, required=True)
    parser.add_argument("--write", type=Path, default=None, metavar="MD")
    args = parser.parse_args(argv)
    body = markdown(load_runs(args.runs))
    if args.write:
        sections.write_section(args.write, START, END, section(body))
    print(body, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
