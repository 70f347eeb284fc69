"""G-RAG-RL trained on the multi-hop TRAIN splits, scored on the shared dev passage sets.

``python -m grapher_bench.grag.train_splits --seeds 0,1,2 --out DIR``: the shipped recipe (fast
concept text, document-only paths, question graph, pairwise loss, hidden 64, lr 1e-4, every
epoch scored and the best validation MRR kept, the untrained network as epoch 0), trained on the
pooled train splits of ``$GRAPHER_TRAIN_DATA`` (dense MiniLM top-``top_n`` over each train
corpus, labels ``gold``; validation = 20 % of those train questions, drawn by the seed). Every
dev question is scored beside the retriever's order and the untrained network (``y · x``), with
a paired bootstrap per seed.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from grapher_bench.data import add_train_split_arguments

__all__ = ["aggregate", "main", "render"]

DEV_SETS = ("hotpotqa", "2wikimultihopqa", "musique")
BASE = "w/o reranker"
UNTRAINED = "untrained (y·x)"
TRAINED = "G-RAG-RL (train splits)"


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_train_split_arguments(parser, DEV_SETS, top_n=20, epochs=20)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--limit", type=int, default=None, help="first N questions (smoke runs)")
    parser.add_argument("--out", type=Path, default=Path("bench_out/grag_train_splits"))
    return parser.parse_args(argv)


def _question_sets(args: argparse.Namespace) -> tuple[list[Any], dict[str, Any]]:
    """The train splits' and the dev sets' questions with fast document-path features."""
    from grapher_bench.cache import CachedEmbedder, EmbeddingCache
    from grapher_bench.data import default_benchmarks_root, load_dataset, load_train_set
    from grapher_bench.grag.bench import build_question_set, fast_concept_features
    from grapher_core.embeddings import default_embedder

    embedder = CachedEmbedder(default_embedder(), EmbeddingCache(), progress=False)
    root = args.benchmarks or default_benchmarks_root()

    def ready(dataset: Any) -> Any:
        qs = build_question_set(dataset, args.top_n, embedder, _log)
        fast_concept_features(qs, embedder, _log, "document")
        return qs

    train = [ready(load_train_set(n, args.train_data, args.limit)) for n in args.sets.split(",")]
    dev = {n: ready(load_dataset(root / n, limit=args.limit)) for n in args.dev.split(",") if n}
    return train, dev


def _log(message: str) -> None:
    print(message, flush=True)


def _train(examples: list[Any], args: argparse.Namespace, seed: int) -> Any:
    from grapher_core.learned.grag.model import GRAGSpec
    from grapher_core.learned.grag.train import train_grag
    from grapher_core.learned.loop import LoopConfig

    spec = GRAGSpec(hidden=args.hidden, dropout=0.1)
    loop = LoopConfig(
        loss="pairwise",
        epochs=args.epochs,
        patience=args.epochs,
        lr=args.lr,
        weight_decay=1e-4,
        batch_size=16,
        metric="MRR",
        seed=seed,
    )
    return spec, loop, train_grag(examples, spec, loop)


def _save(spec: Any, loop: Any, result: Any, args: argparse.Namespace, seed: int) -> None:
    """The seed's model as a loadable checkpoint under ``--out`` (never grapher_core/data)."""
    from grapher_core.embeddings import default_embedder
    from grapher_core.learned.grag import checkpoint
    from grapher_core.learned.grag.checkpoint import GRAGConfig

    config = GRAGConfig(
        spec=spec,
        embedding_model=default_embedder().name,
        embedding_dim=spec.embedding_dim,
        text="fast",
        graph="question",
        loss="pairwise",
        paths="document",
        training={
            "dataset": "+".join(f"{n}/train" for n in args.sets.split(",")),
            "labels": "gold",
            "retriever": "dense",
            "top_n": args.top_n,
            "epochs": args.epochs,
            "lr": args.lr,
            "best_epoch": result.best_epoch,
            "seed": seed,
            "n_train": result.n_train,
            "n_val": result.n_val,
        },
        metrics={"validation": result.best_metrics},
    )
    stem = args.out / f"grag_train_splits_seed{seed}"
    checkpoint.GRAG.save(result.model, config, stem)


def _rows(qs: Any, model: Any) -> dict[str, list[dict[str, float]]]:
    """Per-question metrics of the retriever, the untrained network and the trained one."""
    from grapher_bench.grag.bench import examples_for, query_metrics
    from grapher_core.learned.grag.train import GRAGAdapter
    from grapher_core.learned.loop import predict

    examples = examples_for(qs, "fast", "question", "gold")
    index = {q: k for k, q in enumerate(qs.query_ids)}
    base = [np.asarray([c.score for c in qs.candidates[index[e.query_id]]]) for e in examples]
    return {
        BASE: query_metrics(qs, examples, base),
        UNTRAINED: query_metrics(qs, examples, [e.x @ e.query for e in examples]),
        TRAINED: query_metrics(qs, examples, predict(model, GRAGAdapter(), examples, "cpu")),
    }


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    from grapher_bench.grag.bench import examples_for, paired_bootstrap

    args = _parse(argv)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    train_sets, dev = _question_sets(args)
    examples = [e for qs in train_sets for e in examples_for(qs, "fast", "question", "gold")]
    runs: dict[str, Any] = {}
    for seed in [int(s) for s in args.seeds.split(",")]:
        started = time.perf_counter()
        spec, loop, result = _train(examples, args, seed)
        seconds = time.perf_counter() - started
        _save(spec, loop, result, args, seed)
        _log(f"seed {seed}: val {result.best_metrics} epoch {result.best_epoch} ({seconds:.0f}s)")
        sets = {}
        for name, qs in dev.items():
            rows = _rows(qs, result.model)
            mrr = {label: [r["MRR"] for r in values] for label, values in rows.items()}
            sets[name] = {
                "n": len(rows[BASE]),
                "metrics": {
                    label: {m: float(np.mean([r[m] for r in values])) for m in ("MRR", "PR@10")}
                    for label, values in rows.items()
                },
                "vs_base": paired_bootstrap(mrr[TRAINED], mrr[BASE]),
                "vs_untrained": paired_bootstrap(mrr[TRAINED], mrr[UNTRAINED]),
            }
        runs[str(seed)] = {
            "seconds": seconds,
            "best_epoch": result.best_epoch,
            "val": result.best_metrics,
            "n_train": result.n_train,
            "n_val": result.n_val,
            "sets": sets,
        }
    report = {"train": args.sets.split(","), "n_examples": len(examples), "runs": runs}
    (args.out / "train_splits.json").write_text(json.dumps(report, indent=1) + "\n")
    table = render(aggregate(report))
    (args.out / "table.md").write_text(table)
    print(table)
    return 0


def aggregate(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per dev set and row: MRR and PR@10 per seed; each seed's paired intervals."""
    out: dict[str, dict[str, Any]] = {}
    for run in report["runs"].values():
        for name, entry in run["sets"].items():
            agg = out.setdefault(name, {"n": entry["n"], "rows": {}, "vs_base": []})
            for label, metrics in entry["metrics"].items():
                for metric, value in metrics.items():
                    agg["rows"].setdefault(label, {}).setdefault(metric, []).append(value)
            agg["vs_base"].append(entry["vs_base"])
    return out


def _ms(values: Sequence[float] | np.ndarray, sign: bool = False) -> str:
    arr = 100 * np.asarray(values, dtype=np.float64)
    sd = arr.std(ddof=1) if arr.size > 1 else 0.0
    return f"{arr.mean():+.1f} ± {sd:.1f}" if sign else f"{arr.mean():.1f} ± {sd:.1f}"


def render(agg: dict[str, dict[str, Any]]) -> str:
    """The verdict table: MRR / PR@10 (%), trained rows mean ± sd over the seeds."""
    lines = [
        f"| dev set | n | {BASE} MRR / PR@10 | {UNTRAINED} MRR / PR@10 | {TRAINED} MRR | "
        f"{TRAINED} PR@10 | trained − w/o, MRR | trained − untrained, MRR | "
        "trained − w/o, MRR [95 % CI] per seed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in agg.items():
        rows = {
            label: {m: np.asarray(v) for m, v in ms.items()} for label, ms in entry["rows"].items()
        }
        base, untrained, trained = rows[BASE], rows[UNTRAINED], rows[TRAINED]
        cis = ", ".join(
            f"{100 * t['diff']:+.1f} [{100 * t['low']:+.1f}, {100 * t['high']:+.1f}]"
            for t in entry["vs_base"]
        )
        lines.append(
            f"| {name} | {entry['n']} | "
            f"{100 * base['MRR'][0]:.1f} / {100 * base['PR@10'][0]:.1f} | "
            f"{100 * untrained['MRR'][0]:.1f} / {100 * untrained['PR@10'][0]:.1f} | "
            f"{_ms(trained['MRR'])} | {_ms(trained['PR@10'])} | "
            f"{_ms(trained['MRR'] - base['MRR'], True)} | "
            f"{_ms(trained['MRR'] - untrained['MRR'], True)} | {cis} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
