"""``grapher-bench train`` (fit a GAT or MLP ranker on a benchmark split) and
``grapher-bench gat-latency`` (median forward time of a learned ranker on 200 candidates;
with ``--paths``, the GAT's inference paths against each other)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grapher_bench.cli import non_negative_int, positive_int
from grapher_bench.timing import median_p95_ms
from grapher_core.cli.arguments import alpha_argument, output_argument
from grapher_core.errors import ConfigError
from grapher_core.learned.gat.features import SEED_SCHEMES

__all__ = ["register"]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _int_or(kind: Any, flag: str) -> Any:
    """The argparse type of a training setting: integers are checked (``patience`` may be 0)."""
    if kind is not int:
        return kind
    return non_negative_int if flag == "patience" else positive_int


def count_or_share(text: str) -> int | float:
    """``--val-databases``: a count (20) or a share of each validation set's groups (0.2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value.is_integer() and value >= 1:
        return int(value)
    if 0.0 < value < 1.0:
        return value
    raise argparse.ArgumentTypeError(f"a count >= 1 or a share in (0, 1), got {text!r}")


def graph_choice(values: Sequence[str] | None) -> str | dict[str, str] | None:
    """``--graph G`` for every set, or ``--graph TASK=G`` per task type (repeatable), so a
    pool of tables and passages gets foreign keys and title mentions."""
    from grapher_bench.data import TASK_TYPES

    if not values:
        return None
    per_task = [v for v in values if "=" in v]
    if not per_task:
        if len(values) > 1:
            raise ConfigError(f"--graph names one graph for every set, got {list(values)}")
        return values[0]
    if len(per_task) != len(values):
        raise ConfigError("--graph: use either one GRAPH or TASK=GRAPH per task type")
    choice: dict[str, str] = {}
    for value in values:
        task, graph = (part.strip() for part in value.split("=", 1))
        if task not in TASK_TYPES or task in choice or not graph:
            raise ConfigError(f"--graph {value!r}: TASK=GRAPH, TASK one of {TASK_TYPES}, once")
        choice[task] = graph
    return choice


def register(subparsers: Any) -> None:
    from grapher_core.learned.gat.train import TrainConfig
    from grapher_core.learned.loop import LOSSES
    from grapher_core.ranking.propagation import DEFAULT_GCS_ALPHA

    train = subparsers.add_parser(
        "train",
        help="train a GraphER-GAT (or MLP) ranker on a benchmark split",
        description="Build per-query candidate graphs (base retriever top-N + the task's "
        "proximities + GCS scores), train with early stopping on a held-out part, "
        "and save <out>.safetensors + <out>.json.",
    )
    train.add_argument(
        "--data",
        type=Path,
        action="append",
        default=None,
        help="training split folder, repeatable: the sets are pooled (default <benchmarks "
        "root>/spider_train)",
    )
    train.add_argument(
        "--val-data",
        type=Path,
        action="append",
        default=None,
        help="validate on --val-databases databases of this set, left out of training (the "
        "paper: train on BIRD train, select on a Spider train sample); repeatable, each set "
        "gives its own; default: held-out databases of the training data",
    )
    train.add_argument(
        "--val-databases",
        type=count_or_share,
        default=20,
        help="databases of each --val-data set drawn with --seed for validation: a count (20) "
        "or a share (0.2); a set without databases (passages) has one per question",
    )
    output_argument(
        train,
        "--out",
        type=Path,
        default=Path("checkpoints/gat"),
        help="checkpoint stem (writes STEM.safetensors and STEM.json)",
    )
    train.add_argument("--arch", choices=("gat", "mlp"), default="gat")
    train.add_argument("--loss", choices=LOSSES, default="pairwise")
    train.add_argument(
        "--retriever",
        choices=("dense", "hybrid"),
        default=None,
        help="base retriever (default: the bench's choice for the task type)",
    )
    train.add_argument(
        "--graph",
        action="append",
        default=None,
        help="graph variant, e.g. fk, entities, adjacent (default: the task's); or TASK=GRAPH, "
        "repeatable, for a pool of task types (--graph tables=fk --graph passages=mentions)",
    )
    train.add_argument(
        "--alpha",
        type=alpha_argument,
        default=DEFAULT_GCS_ALPHA,
        help=f"GCS alpha of the GCS-score feature (default {DEFAULT_GCS_ALPHA})",
    )
    train.add_argument("--top-n", type=positive_int, default=200, help="candidates per query (200)")
    train.add_argument("--limit", type=positive_int, default=None, help="first N queries only")
    train.add_argument(
        "--seeds",
        choices=SEED_SCHEMES,
        default="score",
        help="seed feature: the retriever's scores (default) or 1/rank (then the checkpoint "
        "ranks the same in both wrappers, whatever a store's score scale)",
    )
    defaults = TrainConfig()
    for flag, kind in (
        ("epochs", int),
        ("patience", int),
        ("lr", float),
        ("weight_decay", float),
        ("hidden", int),
        ("heads", int),
        ("layers", int),
        ("dropout", float),
        ("batch_size", int),
        ("val_fraction", float),
    ):
        default = getattr(defaults, flag)
        train.add_argument(
            "--" + flag.replace("_", "-"),
            type=_int_or(kind, flag),
            default=default,
            help=f"(default {default})",
        )
    train.add_argument("--seed", type=non_negative_int, default=0)
    train.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda")
    train.add_argument(
        "--threads",
        type=non_negative_int,
        default=1,
        help="torch CPU threads (default 1: fastest on a shared 2-core CPU; 0 = torch's default)",
    )
    train.set_defaults(func=run_train)

    evaluate = subparsers.add_parser(
        "gat-eval",
        help="PR@K of a trained checkpoint next to baseline and GCS (bench runner)",
        description="Runs the bench's retrieval and metrics with your checkpoint as a ranker, so "
        "a model you trained is compared exactly as the shipped one is.",
    )
    evaluate.add_argument(
        "--checkpoint",
        type=Path,
        action="append",
        required=True,
        help="checkpoint stem or file (repeatable)",
    )
    evaluate.add_argument(
        "--data", type=Path, action="append", required=True, help="dataset folder (repeatable)"
    )
    evaluate.add_argument("--graphs", default=None, help="graph variants (default: the task's)")
    evaluate.add_argument("--limit", type=positive_int, default=None, help="first N queries")
    evaluate.set_defaults(func=run_eval)

    latency = subparsers.add_parser(
        "gat-latency",
        help="median time of a learned ranker on n candidates (CPU by default)",
        description="Times GraphReranker(ranker=gat|mlp).rerank and the ranker's forward pass "
        "alone on n candidates with precomputed embeddings.",
    )
    latency.add_argument("--rankers", default="gat,mlp", help="comma list: gat, mlp, gcs")
    latency.add_argument("--n", type=positive_int, default=200)
    latency.add_argument("--repeats", type=positive_int, default=200)
    latency.add_argument(
        "--data",
        type=Path,
        default=None,
        help="a table dataset to take real candidates from (default: "
        "<benchmarks root>/spider_dev; synthetic when absent)",
    )
    latency.add_argument(
        "--synthetic",
        action="store_true",
        help="random unit embeddings, each table linked to two others",
    )
    latency.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="torch threads (default: torch's choice; 1 with --paths)",
    )
    _path_arguments(latency)
    latency.set_defaults(func=run_latency)


def _path_arguments(latency: Any) -> None:
    """``--paths``: the GAT's inference paths (plan, plan-scatter, forward) against each other
    on synthetic table and entity graphs (grapher_bench.latency.gat)."""
    latency.add_argument(
        "--paths",
        action="store_true",
        help="time the GAT's inference paths against each other instead of the rankers",
    )
    latency.add_argument(
        "--end-to-end",
        action="store_true",
        help="the GAT reranker's whole call vs its network alone vs the GCS reranker, per "
        "--kinds / --sizes / --devices pool (docs/speed.md)",
    )
    latency.add_argument("--kinds", default="table,entity", help="with --paths: table, entity")
    latency.add_argument("--sizes", default="200,2000", help="with --paths: candidates per graph")
    latency.add_argument(
        "--devices",
        default="cpu,cuda",
        help="with --paths: comma list; a cuda row without a GPU says it was not measured",
    )
    latency.add_argument(
        "--budget-s",
        type=float,
        default=30.0,
        help="with --paths: fewer repeats (at least 5) when a case would take longer",
    )
    output_argument(
        latency,
        "--write-doc",
        type=Path,
        default=None,
        help="with --paths: put the table at the end of this markdown file (docs/speed.md)",
    )


def run_train(args: argparse.Namespace) -> int:
    from grapher_bench.data import default_benchmarks_root
    from grapher_bench.gat.data import train
    from grapher_core.learned.gat.train import TrainConfig

    config = TrainConfig(
        architecture=args.arch,
        loss=args.loss,
        epochs=args.epochs,
        patience=args.patience,
        lr=args.lr,
        weight_decay=args.weight_decay,
        hidden=args.hidden,
        heads=args.heads,
        layers=args.layers,
        dropout=args.dropout,
        batch_size=args.batch_size,
        val_fraction=args.val_fraction,
        seed=args.seed,
        device=args.device,
        threads=args.threads or None,
    )
    if args.limit is not None and args.limit < 2:
        raise ValueError("--limit must be at least 2 (train + validation)")
    folders = args.data or [default_benchmarks_root() / "spider_train"]
    result, paths = train(
        folders,
        args.out,
        config,
        retriever=args.retriever,
        graph=graph_choice(args.graph),
        alpha=args.alpha,
        top_n=args.top_n,
        limit=args.limit,
        log=_log,
        validation=args.val_data,
        val_databases=args.val_databases,
        seeds=args.seeds,
    )
    summary = {
        "checkpoint": [str(p) for p in paths],
        "best_epoch": result.best_epoch,
        "validation": result.best_metrics,
        "reference": result.reference,
        "train_seconds": round(result.seconds, 1),
        "device": result.device,
    }
    print(json.dumps(summary, indent=2))
    return 0


def checkpoint_label(architecture: str, path: Path, taken: Sequence[str]) -> str:
    """The row label of a checkpoint: its whole stem (``pooled_lr0.001_s0``, dots kept), with
    its folder when two checkpoints share a stem, so no row silently stands for another."""
    from grapher_core.learned.weights import checkpoint_paths

    weights = checkpoint_paths(path)[0]
    stem = weights.name.removesuffix(".safetensors")
    for name in (f"{architecture}:{stem}", f"{architecture}:{weights.parent.name}/{stem}"):
        if name not in taken:
            return name
    raise ConfigError(f"checkpoint {weights} is given twice")


def run_eval(args: argparse.Namespace) -> int:
    from functools import partial

    from grapher_bench.data import load_dataset
    from grapher_bench.report import combined_table
    from grapher_bench.runner import run_dataset
    from grapher_core.learned.gat.checkpoint import GAT
    from grapher_core.learned.gat.ranker import GATRanker, MLPRanker
    from grapher_core.ranking.registry import register_ranker

    names: list[str] = []
    for path in args.checkpoint:
        _, config = GAT.load(path)  # fail early, before any retrieval
        cls = GATRanker if config.model.architecture == "gat" else MLPRanker
        name = checkpoint_label(config.model.architecture, path, names)
        register_ranker(name, partial(cls, path), replace=True)  # a run names its checkpoints
        names.append(name)
    graphs = [g.strip() for g in args.graphs.split(",")] if args.graphs else None
    runs = []
    for folder in args.data:
        dataset = load_dataset(folder, limit=args.limit)
        runs.append(
            run_dataset(
                dataset, ["baseline", "gcs", *names], graphs=graphs, progress=False, log=_log
            )
        )
    print(combined_table(runs, [5, 10]))
    return 0


def _candidates(args: argparse.Namespace) -> tuple[list[Any], Any, str, Any]:
    """n real candidates (first query of a table set, the bench's retriever) or synthetic."""
    import numpy as np

    from grapher_bench.data import default_benchmarks_root
    from grapher_core.candidates import Candidate
    from grapher_core.edges.keys import ForeignKeys

    folder = args.data or default_benchmarks_root() / "spider_dev"
    if not args.synthetic and (folder / "corpus.jsonl").is_file():
        from grapher_bench.data import load_dataset
        from grapher_bench.runner import DEFAULT_RETRIEVER, prepare_candidates

        dataset = load_dataset(folder, limit=1)
        metadata = [dict(o.metadata) for o in dataset.corpus]
        retriever = DEFAULT_RETRIEVER[dataset.task_type]
        pool, queries = prepare_candidates(dataset, retriever, metadata, top_n=args.n)
        return (
            pool[0],
            queries[0],
            f"{dataset.name} query 1, {retriever} top-{args.n}",
            [ForeignKeys("foreign_keys")],
        )
    rng = np.random.default_rng(0)  # synthetic: random unit vectors, two FK links each
    vectors = rng.normal(size=(args.n + 1, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    candidates = [
        Candidate(
            f"t{i}",
            "",
            float(vectors[i] @ vectors[-1]),
            {"foreign_keys": [f"t{(i + k) % args.n}" for k in (1, 7)]},
            vectors[i],
        )
        for i in range(args.n)
    ]
    return candidates, vectors[-1], f"synthetic, {args.n} candidates", [ForeignKeys("foreign_keys")]


def run_paths(args: argparse.Namespace) -> int:
    """``gat-latency --paths``: the table of docs/speed.md's "GAT inference" section."""
    import torch

    from grapher_bench.latency import gat as paths

    kinds, sizes, devices = _pools(args)
    missing = [d for d in devices if d.startswith("cuda") and not torch.cuda.is_available()]
    threads = args.threads or 1
    present = [d for d in devices if d not in missing]
    rows = paths.measure(kinds, sizes, present, threads, args.repeats, args.budget_s, _log)
    for device in missing:
        rows += paths.unmeasured_rows(kinds, sizes, device, threads)
    note = (
        f"{', '.join(missing)} rows: {paths.NOT_MEASURED}. On CUDA a ranker's first call of "
        "each size class times the paths on that call (`InferencePlan.choose`) and keeps the "
        "fastest one equal to forward; `chosen` shows the path before that measurement."
        if missing
        else None
    )
    command = "grapher-bench gat-latency --paths " + " ".join(
        f"--{flag} {value}"
        for flag, value in (
            ("kinds", args.kinds), ("sizes", args.sizes), ("devices", args.devices),
            ("threads", threads), ("repeats", args.repeats), ("budget-s", args.budget_s),
        )
    )  # fmt: skip
    section = paths.render_section(rows, command, paths.machine_line(), note)
    print(section)
    if args.write_doc is not None:
        paths.write_section(args.write_doc, section)
        _log(f"wrote the section to {args.write_doc}")
    return 0


def _pools(args: argparse.Namespace) -> tuple[list[str], list[int], list[str]]:
    """``--kinds``, ``--sizes`` and ``--devices`` checked."""
    from grapher_bench.latency import gat as paths

    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if unknown := sorted(set(kinds) - set(paths.GRAPH_KINDS)):
        raise ConfigError(f"--kinds: unknown {unknown}; choose from {paths.GRAPH_KINDS}")
    try:
        sizes = [int(v) for v in args.sizes.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"--sizes: comma list of integers, got {args.sizes!r}") from None
    if not sizes or min(sizes) < 1:
        raise ConfigError(f"--sizes: positive integers, got {args.sizes!r}")
    devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    return kinds, sizes, devices


def run_end_to_end(args: argparse.Namespace) -> int:
    """``gat-latency --end-to-end``: docs/speed.md's "GAT end to end" table."""
    import torch

    from grapher_bench.latency import gat as paths

    kinds, sizes, devices = _pools(args)
    threads = args.threads or 1
    rows, missing = [], []
    for device in devices:
        if device.startswith("cuda") and not torch.cuda.is_available():
            _log(f"{device}: {paths.NOT_MEASURED}")
            missing.append(device)
            continue
        for kind in kinds:
            for n in sizes:
                row = paths.measure_end_to_end(kind, n, device, threads, args.repeats)
                _log(paths.end_to_end_line(row))
                rows.append(row)
    command = "grapher-bench gat-latency --end-to-end " + " ".join(
        f"--{flag} {value}"
        for flag, value in (
            ("kinds", args.kinds), ("sizes", args.sizes), ("devices", args.devices),
            ("threads", threads), ("repeats", args.repeats),
        )
    )  # fmt: skip
    note = f"{', '.join(missing)} rows: {paths.NOT_MEASURED}." if missing else ""
    section = paths.render_end_to_end(rows, command, paths.machine_line(), note)
    print(section)
    if args.write_doc is not None:
        paths.write_section(args.write_doc, section, paths.END_TO_END_SECTION)
        _log(f"wrote the section to {args.write_doc}")
    return 0


def run_latency(args: argparse.Namespace) -> int:
    if args.end_to_end:
        return run_end_to_end(args)
    if args.paths:
        return run_paths(args)
    import torch

    from grapher_core.edges.graph import build_graph
    from grapher_core.ranking.base import RankContext
    from grapher_core.ranking.seeds import make_seeds
    from grapher_core.rerank import GraphReranker

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    candidates, query, source, proximities = _candidates(args)
    print(f"candidates: {source}; torch threads {torch.get_num_threads()}")
    for name in [r.strip() for r in args.rankers.split(",") if r.strip()]:
        reranker = GraphReranker(proximities, ranker=name, explain=0)
        graph = build_graph(candidates, proximities)
        seeds = make_seeds(candidates)
        context = RankContext(candidates, None, query)

        def rank(
            reranker: GraphReranker = reranker,
            graph: Any = graph,
            seeds: Any = seeds,
            context: RankContext = context,
        ) -> None:
            reranker.ranker.rank(graph, seeds, context)

        def rerank(reranker: GraphReranker = reranker) -> None:
            reranker.rerank(candidates, query_embedding=query, top_n=10)

        rank_ms = median_p95_ms(rank, args.repeats, warmup=5)
        total_ms = median_p95_ms(rerank, args.repeats, warmup=5)
        cpu_ms = median_p95_ms(rerank, args.repeats, warmup=5, clock=time.process_time)
        print(
            f"{name:4s} n={len(candidates)} edges={graph.n_edges}  ranker.rank median "
            f"{rank_ms[0]:.2f} ms (p95 {rank_ms[1]:.2f})  GraphReranker.rerank median "
            f"{total_ms[0]:.2f} ms (p95 {total_ms[1]:.2f}), CPU time median "
            f"{cpu_ms[0]:.2f} ms"
        )
    return 0
