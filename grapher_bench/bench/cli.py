"""``grapher-bench bench`` and ``grapher-bench tune`` subcommands."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from grapher_bench.cli import positive_int
from grapher_core.cli.arguments import alpha_argument, output_argument
from grapher_core.errors import ConfigError, InputError, InputFileNotFoundError

__all__ = ["register"]


def _csv(value: str) -> list[str]:
    """Comma-separated names; commas inside brackets (``ego-gcs[k=2,n=10]``) stay."""
    parts: list[str] = []
    depth, current = 0, ""
    for char in value:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part.strip() for part in parts if part.strip()]


def _ints(value: str) -> list[int]:
    try:
        out = [int(part) for part in _csv(value)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers like 5,10, got {value!r}") from None
    if not out or any(k < 1 for k in out):
        raise argparse.ArgumentTypeError(f"K values must be positive, got {value!r}")
    return out


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser(
        "bench",
        help="benchmark rankers on real data (PR@K tables, plot, results.json)",
        description="Retrieve with BM25/dense/hybrid, rerank with graph rankers, report PR@K.",
    )
    bench.add_argument(
        "--data",
        action="append",
        default=None,
        metavar="DIR",
        help="a dataset folder or a root of dataset folders (repeatable; "
        "default $GRAPHER_BENCHMARKS or ../shared/benchmarks)",
    )
    bench.add_argument(
        "--rankers",
        type=_csv,
        default=None,
        help="comma list (default baseline,ppr,gcs, plus db-first on tables); "
        "any name make_ranker knows works, e.g. gat; the peers (expand-gcs, ...); "
        "llm-rerank, llm-rerank+gcs and llm-scores+gcs (GraphER after it, seeded by its order / "
        "its scores) with --llm-base-url/--llm-model",
    )
    bench.add_argument(
        "--retriever",
        type=_csv,
        default=["auto"],
        help="bm25, dense, hybrid, all, or auto (best per task type; default)",
    )
    bench.add_argument(
        "--graphs",
        type=_csv,
        default=None,
        help="graph variants, e.g. entities,mentions,entities+mentions "
        "(default: every variant of the task type)",
    )
    bench.add_argument(
        "--task",
        choices=("tables", "passages", "chunks"),
        default=None,
        help="override the detected task type",
    )
    bench.add_argument("--k", type=_ints, default=[5, 10], help="K values (default 5,10)")
    bench.add_argument(
        "--limit", type=positive_int, default=None, help="first N queries per dataset"
    )
    bench.add_argument("--top-n", type=positive_int, default=200, help="candidates per query (200)")
    bench.add_argument("--alpha-gcs", type=alpha_argument, default=None)
    bench.add_argument("--alpha-ppr", type=alpha_argument, default=None)
    output_argument(
        bench, "--out", folder=True, type=Path, default=Path("bench_out"), help="output folder"
    )
    bench.add_argument(
        "--tune-results",
        type=Path,
        default=None,
        help="tune.json from `grapher-bench tune`, quoted in --write-doc",
    )
    output_argument(
        bench,
        "--write-doc",
        type=Path,
        default=None,
        metavar="MD",
        help="rewrite the bench section of this markdown file",
    )
    bench.add_argument("--no-progress", action="store_true", help="no progress bars")
    bench.add_argument(
        "--llm-base-url",
        default=None,
        help="OpenAI-compatible endpoint of the llm-rerank rankers, e.g. "
        "http://127.0.0.1:8080/v1 (default $GRAPHER_LLM_BASE_URL)",
    )
    bench.add_argument(
        "--llm-model",
        default=None,
        help="model of the llm-rerank rankers (default $GRAPHER_LLM_MODEL)",
    )
    output_argument(
        bench,
        "--llm-cache",
        type=Path,
        default=None,
        help="SQLite reply cache of the llm-rerank rankers (default: qa-eval's, "
        "<grapher cache>/qa-eval.sqlite)",
    )
    bench.add_argument(
        "--llm-concurrency",
        type=positive_int,
        default=1,
        help="llm-rerank requests in flight (1: a local one-thread server)",
    )
    bench.add_argument(
        "--from-results",
        type=Path,
        default=None,
        metavar="DIR",
        help="rebuild the tables (and --write-doc) from the DIR/<set>/<retriever>/results.json "
        "files a `bench --out DIR` wrote, instead of running anything",
    )
    bench.set_defaults(func=run_bench)

    tune = subparsers.add_parser(
        "tune",
        help="grid-search alpha for PPR and GCS on a training split",
        description="Grid-search alpha in {0.1..0.9} on a training split (default spider_train).",
    )
    tune.add_argument(
        "--data",
        type=Path,
        default=None,
        help="training split folder (default <benchmarks root>/spider_train)",
    )
    tune.add_argument("--retriever", type=_csv, default=["hybrid", "dense", "bm25"])
    tune.add_argument("--limit", type=positive_int, default=None)
    output_argument(tune, "--out", folder=True, type=Path, default=Path("bench_out/tune"))
    tune.add_argument("--no-progress", action="store_true")
    tune.set_defaults(func=run_tune)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_bench(args: argparse.Namespace) -> int:
    from grapher_bench.data import default_benchmarks_root, find_datasets
    from grapher_bench.peers.llm_rerank import using_llm
    from grapher_bench.report import combined_table, write_run, write_section
    from grapher_bench.retrievers import RETRIEVERS

    started = time.perf_counter()
    if args.from_results is not None:
        return _from_results(args)
    roots = args.data or [str(default_benchmarks_root())]
    folders = [folder for root in roots for folder in find_datasets(root)]
    if args.limit is not None and args.limit < 1:
        raise ConfigError("--limit must be a positive integer")
    for choice in args.retriever:
        if choice not in (*RETRIEVERS, "all", "auto"):
            raise ConfigError(
                f"unknown retriever {choice!r}; choose bm25, dense, hybrid, all, auto"
            )
    alphas = {k: v for k, v in (("gcs", args.alpha_gcs), ("ppr", args.alpha_ppr)) if v}
    with using_llm(_llm(args)):
        runs = _run_folders(args, folders, alphas)
    single = len(runs) == 1
    for run in runs:
        write_run(run, args.out if single else args.out / run.dataset / run.retriever, args.k)
    table = combined_table(runs, args.k)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "combined.md").write_text(table)
    elapsed = time.perf_counter() - started
    (args.out / "bench_meta.json").write_text(json.dumps({"seconds": round(elapsed, 1)}) + "\n")
    print(table)
    print(f"wrote {args.out} in {elapsed:.0f}s", file=sys.stderr)
    if args.write_doc is not None:
        from grapher_bench.notes import render_section

        tune_data = None
        if args.tune_results is not None and args.tune_results.is_file():
            tune_data = json.loads(args.tune_results.read_text())
        write_section(args.write_doc, render_section(runs, table, tune_data, elapsed, args))
        print(f"updated {args.write_doc}", file=sys.stderr)
    return 0


def _llm(args: argparse.Namespace) -> Any:
    """The llm-rerank endpoint, refused before any work when an llm ranker has none."""
    from grapher_bench.peers.llm_rerank import MISSING_ENDPOINT, endpoint_from, is_llm_ranker

    if args.llm_concurrency < 1:
        raise ConfigError(f"--llm-concurrency must be >= 1, got {args.llm_concurrency}")
    llm = endpoint_from(
        args.llm_base_url, args.llm_model, cache=args.llm_cache, concurrency=args.llm_concurrency
    )
    if llm is None and any(is_llm_ranker(name) for name in args.rankers or ()):
        raise ConfigError(MISSING_ENDPOINT)
    return llm


def _run_folders(
    args: argparse.Namespace, folders: list[Path], alphas: dict[str, float]
) -> list[Any]:
    """Every (dataset, retriever) run of the command."""
    from grapher_bench.data import load_dataset
    from grapher_bench.retrievers import RETRIEVERS
    from grapher_bench.runner import DEFAULT_RETRIEVER, run_dataset

    runs = []
    for folder in folders:
        dataset = load_dataset(folder, limit=args.limit, task_type=args.task)
        retrievers: list[str] = []
        for choice in args.retriever:
            retrievers += (
                list(RETRIEVERS)
                if choice == "all"
                else [DEFAULT_RETRIEVER[dataset.task_type]]
                if choice == "auto"
                else [choice]
            )
        rankers = args.rankers or (
            ["baseline", "db-first", "ppr", "gcs"]
            if dataset.task_type == "tables"
            else ["baseline", "ppr", "gcs"]
        )
        for retriever in dict.fromkeys(retrievers):
            run = run_dataset(
                dataset,
                rankers,
                retriever=retriever,
                graphs=args.graphs,
                ks=args.k,
                alphas=alphas,
                top_n=args.top_n,
                progress=not args.no_progress,
                log=_log,
            )
            runs.append(run)
    return runs


def result_files(folder: Path) -> list[Path]:
    """The runs ``bench --out folder`` writes: ``folder/results.json`` for a single run,
    ``folder/<set>/<retriever>/results.json`` for several. Other depths are other studies
    written under the same folder (``--out bench_out/x``) and must not leak into its tables."""
    single = folder / "results.json"
    return ([single] if single.is_file() else []) + sorted(folder.glob("*/*/results.json"))


def _from_results(args: argparse.Namespace) -> int:
    from grapher_bench.report import combined_table, write_section
    from grapher_bench.runner import load_run, read_json

    folder = args.from_results
    if folder.is_file():
        files = [folder]  # one results.json named directly
        folder = folder.parent
    else:
        if not folder.is_dir():
            raise InputFileNotFoundError(f"--from-results {folder}: no such folder")
        files = result_files(folder)
    if not files:
        raise InputFileNotFoundError(
            f"--from-results {folder}: no results.json or <set>/<retriever>/results.json in it"
        )
    try:
        runs = [load_run(path) for path in files]
    except InputError as error:
        raise InputError(f"--from-results: {error}") from None
    for path, loaded in zip(files, runs, strict=True):
        for label, result in loaded.results.items():
            missing = [f"PR@{k}" for k in args.k if f"PR@{k}" not in result.metrics]
            if missing:
                raise InputError(
                    f"--from-results: {path} has no {', '.join(missing)} for ranker "
                    f"{label!r} (--k {','.join(map(str, args.k))} asks for them)"
                )
    table = combined_table(runs, args.k)
    print(table)
    if args.write_doc is not None:
        from grapher_bench.notes import render_section

        tune_data = None
        if args.tune_results is not None and args.tune_results.is_file():
            tune_data = read_json(args.tune_results, "tune.json (--tune-results)")
        meta = folder / "bench_meta.json"
        seconds = _seconds(read_json(meta, "bench_meta.json")) if meta.is_file() else 0.0
        if seconds is None:
            raise InputError(f"{meta} is not a bench_meta.json: no number of 'seconds' in it")
        write_section(args.write_doc, render_section(runs, table, tune_data, seconds, args))
        print(f"updated {args.write_doc}", file=sys.stderr)
    return 0


def _seconds(meta: object) -> float | None:
    """``bench_meta.json``'s run time, or ``None`` when it holds no finite number of seconds."""
    value = meta.get("seconds") if isinstance(meta, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


def run_tune(args: argparse.Namespace) -> int:
    from grapher_bench.bench.tune import grid_table, tune
    from grapher_bench.data import default_benchmarks_root, load_dataset

    folder = args.data or default_benchmarks_root() / "spider_train"
    dataset = load_dataset(folder, limit=args.limit)
    started = time.perf_counter()
    result = tune(dataset, args.retriever, progress=not args.no_progress, log=_log)
    args.out.mkdir(parents=True, exist_ok=True)
    payload = result.to_json()
    payload["seconds"] = round(time.perf_counter() - started, 1)
    (args.out / "tune.json").write_text(json.dumps(payload, indent=2) + "\n")
    table = grid_table(result)
    (args.out / "grid.md").write_text(table)
    print(table)
    print(
        "chosen alpha: "
        + "; ".join(
            f"{r}: " + ", ".join(f"{n}={a}" for n, a in c.items()) for r, c in result.chosen.items()
        )
    )
    print(f"best retriever on {dataset.name}: {result.best_retriever}")
    return 0
