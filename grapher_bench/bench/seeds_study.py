"""``grapher-bench seeds``: rank seeds vs score seeds, per retriever kind, on every shared set.

The wrappers must pick a default seed policy without knowing the data: this study measures
GCS with ``seed_transform="rank"`` (reciprocal rank, what a compressor without scores gets)
against ``"auto"`` (the retriever's scores) on the same candidates, for BM25, dense and hybrid
retrieval, and writes one table (``<!-- seeds:start -->`` section of docs/benchmarks.md).
Each task type uses its standard graph: foreign keys (tables), title mentions (passages),
adjacent chunks (chunks).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grapher_bench import sections
from grapher_bench.cli import positive_int
from grapher_core.cli.arguments import output_argument

__all__ = ["register", "run_seeds"]

POLICIES = ("rank", "auto")
START, END = "<!-- seeds:start -->", "<!-- seeds:end -->"


def register(subparsers: Any) -> None:
    seeds = subparsers.add_parser(
        "seeds",
        help="rank seeds vs score seeds for BM25, dense and hybrid on every set",
        description="GCS with rank seeds vs score seeds on the same candidates, per retriever.",
    )
    seeds.add_argument(
        "--data",
        action="append",
        default=None,
        metavar="DIR",
        help="dataset folder or root (default $GRAPHER_BENCHMARKS)",
    )
    seeds.add_argument(
        "--retriever",
        default="bm25,dense,hybrid",
        help="comma list of retrievers (default bm25,dense,hybrid)",
    )
    seeds.add_argument(
        "--limit",
        type=positive_int,
        default=None,
        help="first N queries per dataset (default: all)",
    )
    seeds.add_argument("--top-n", type=positive_int, default=200, help="candidates per query (200)")
    output_argument(
        seeds,
        "--out",
        folder=True,
        type=Path,
        default=Path("bench_out/seeds"),
        help="folder for seeds.json and seeds.md",
    )
    output_argument(
        seeds,
        "--write-doc",
        type=Path,
        default=None,
        metavar="MD",
        help="rewrite the seeds section of this markdown file",
    )
    seeds.add_argument("--no-progress", action="store_true", help="no progress bars")
    seeds.set_defaults(func=run_seeds)


def _measure(dataset: Any, retriever: str, top_n: int, progress: bool) -> dict[str, Any]:
    import numpy as np

    from grapher_bench.enrichment import proximities_for
    from grapher_bench.metrics import aggregate, evaluate_query
    from grapher_bench.runner import link_graph_candidates
    from grapher_core.rerank import GraphReranker

    graph, candidates, vectors = link_graph_candidates(dataset, retriever, top_n, progress)
    multi = [q.multi for q in dataset.queries]
    row: dict[str, Any] = {
        "dataset": dataset.name,
        "task": dataset.task_type,
        "retriever": retriever,
        "graph": graph,
        "n_queries": len(dataset.queries),
        "n_multi": dataset.n_multi,
    }
    baseline = [
        evaluate_query([c.id for c in cands], [c.score or 0.0 for c in cands], q.gold, (5, 10))
        for q, cands in zip(dataset.queries, candidates, strict=True)
    ]
    row["baseline"] = aggregate(baseline, multi, (5, 10))
    for policy in POLICIES:
        reranker = GraphReranker(proximities_for(graph), "gcs", seed_transform=policy, explain=0)
        rows = []
        for query, cands, vector in zip(dataset.queries, candidates, vectors, strict=True):
            ranked = reranker.rerank(cands, query=query.text, query_embedding=vector)
            rows.append(
                evaluate_query(
                    [r.id for r in ranked], np.array([r.score for r in ranked]), query.gold, (5, 10)
                )
            )
        row[policy] = aggregate(rows, multi, (5, 10))
    return row


def _cell(metrics: dict[str, float], k: int, all_multi: bool, no_multi: bool = False) -> str:
    if all_multi or no_multi:
        return f"{100 * metrics[f'PR@{k}']:.1f}"
    return f"{100 * metrics[f'PR@{k}>1']:.1f} ({100 * metrics[f'PR@{k}']:.1f})"


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: one line per (dataset, retriever): baseline, rank seeds, score seeds."""
    lines = [
        "| dataset | retriever | queries | baseline PR@5 | rank PR@5 | score PR@5 | "
        "baseline PR@10 | rank PR@10 | score PR@10 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        all_multi, none = r["n_multi"] == r["n_queries"], r["n_multi"] == 0
        cells = []
        for k in (5, 10):
            cells += [_cell(r[key], k, all_multi, none) for key in ("baseline", "rank", "auto")]
        lines.append(
            f"| {r['dataset']} ({r['graph']}) | {r['retriever']} | {r['n_queries']} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines) + "\n"


def wins(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per retriever: on how many sets rank seeds beat / tie / lose to score seeds at PR@10
    of multi-gold queries (all queries where no query is multi-gold)."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        key = "PR@10>1" if r["n_multi"] else "PR@10"
        rank, score = r["rank"][key], r["auto"][key]
        tally = out.setdefault(r["retriever"], {"rank": 0, "tie": 0, "score": 0})
        tally["rank" if rank > score + 1e-9 else "score" if score > rank + 1e-9 else "tie"] += 1
    return out


def _write_doc(path: Path, body: str) -> None:
    sections.write_section(path, START, END, body)


def run_seeds(args: argparse.Namespace) -> int:
    from grapher_bench.data import default_benchmarks_root, find_datasets, load_dataset

    started = time.perf_counter()
    roots = args.data or [str(default_benchmarks_root())]
    folders = [folder for root in roots for folder in find_datasets(root)]
    retrievers = [r.strip() for r in args.retriever.split(",") if r.strip()]
    rows = []
    for folder in folders:
        dataset = load_dataset(folder, limit=args.limit)
        for retriever in retrievers:
            tick = time.perf_counter()
            rows.append(_measure(dataset, retriever, args.top_n, not args.no_progress))
            r = rows[-1]
            print(
                f"{dataset.name}/{retriever}: rank PR@10 {r['rank']['PR@10']:.3f} "
                f"score PR@10 {r['auto']['PR@10']:.3f} ({time.perf_counter() - tick:.0f}s)",
                file=sys.stderr,
                flush=True,
            )
    args.out.mkdir(parents=True, exist_ok=True)
    elapsed = time.perf_counter() - started
    (args.out / "seeds.json").write_text(
        json.dumps({"rows": rows, "seconds": elapsed, "limit": args.limit}, indent=1) + "\n"
    )
    text = table(rows)
    tally = wins(rows)
    summary = "; ".join(
        f"{r}: rank better on {t['rank']}, score better on {t['score']}, tie on {t['tie']}"
        for r, t in tally.items()
    )
    (args.out / "seeds.md").write_text(text + "\n" + summary + "\n")
    print(text)
    print(summary)
    if args.write_doc is not None:
        limit = (
            "all queries of each shared set"
            if args.limit is None
            else f"the first {args.limit} queries of each shared set (all of them where a set "
            "has fewer)"
        )
        body = (
            "### Seeds: rank vs score, per retriever\n\n"
            f"GCS (default alpha) on {limit}, {args.top_n} candidates, the same "
            "candidates for both columns; cells are PR@K of multi-gold queries (all queries "
            "in parentheses when some are single-gold). Graph per task: foreign keys "
            "(tables), title mentions (passages), adjacent chunks (chunks). *rank* = seeds "
            "`1/rank` in the retriever's order (what `ContextualCompressionRetriever` + "
            "`GraphERReranker` gets, and `GraphERRetriever`'s default); *score* = the "
            'retriever\'s scores under the current seed policy (`seed_transform="auto"`: '
            "negative scores raised to 0, min-max only when no score is positive).\n"
            f"Reproduce: `grapher-bench seeds --limit {args.limit} --write-doc "
            f"docs/benchmarks.md` ({elapsed / 60:.0f} min on the shared 2-core machine, "
            f"load average {os.getloadavg()[0]:.1f} at the end).\n\n"
            + text
            + "\nPR@10 (multi-gold) winner per set: "
            + summary
            + ".\n"
        )
        _write_doc(args.write_doc, body)
    return 0
