"""qa-gnn trained on the multi-hop TRAIN splits, scored on the shared dev sentence sets.

``python -m grapher_bench.qa_gnn.train_splits --seeds 0,1,2 --out DIR``: for each seed, one
model (alpha, the two stages, the fusion; the epoch chosen on a validation part of the train
queries) and one position prior are fitted on the pooled sentence-split train splits
(:func:`grapher_bench.data.sentence_folder`; gold = every sentence of a gold passage, a
proxy: the train splits have no sentence-level supporting facts), then every dev set is scored
by dense, qa-adjust, qa-gnn and the prior. The dev questions are never trained on, so the
numbers are clean transfer numbers; mean ± sd over the seeds and a paired test per seed.
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

DEV_SETS = ("hotpotqa_sentences", "2wikimultihopqa_sentences")
ROWS = ("dense", "position-prior", "qa-adjust", "qa-gnn")


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_train_split_arguments(parser, DEV_SETS, top_n=50, epochs=8)
    parser.add_argument("--stage1-epochs", type=int, default=4)
    parser.add_argument("--patience", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="first N queries (smoke runs)")
    parser.add_argument("--out", type=Path, default=Path("bench_out/qagnn_train_splits"))
    return parser.parse_args(argv)


def _save_checkpoint(trained: dict[str, Any], names: list[str], seed: int, stem: Path) -> None:
    """The seed's model as a loadable checkpoint (never written into grapher_core/data)."""
    from grapher_bench.qa_gnn.cli import checkpoint_config
    from grapher_core.learned.qa_gnn.checkpoint import QA_GNN

    training = {"datasets": [f"{n}/train (sentence split)" for n in names], "seed": seed}
    QA_GNN.save(trained["result"].model, checkpoint_config(trained, training), stem)


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    from grapher_bench.data import default_benchmarks_root, sentence_folder
    from grapher_bench.qa_gnn.cli import _base_config, _scores, _train, summarize
    from grapher_bench.qa_gnn.data import build_qa_set, merge_sets

    args = _parse(argv)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    config = _base_config()
    names = [n for n in args.sets.split(",") if n]

    def load(folder: Path) -> Any:
        return build_qa_set(folder, config, top_n=args.top_n, limit=args.limit)

    train = merge_sets([load(sentence_folder(n, args.train_data)) for n in names], "train")
    root = args.benchmarks or default_benchmarks_root()
    dev = {name: load(root / name) for name in args.dev.split(",") if name}
    runs: dict[str, Any] = {}
    for seed in [int(s) for s in args.seeds.split(",")]:
        args.seed = seed
        started = time.perf_counter()
        trained = _train(train, args)
        seconds = time.perf_counter() - started
        _save_checkpoint(trained, names, seed, args.out / f"qa_gnn_train_splits_seed{seed}")
        runs[str(seed)] = {
            "seconds": seconds,
            "val": trained["result"].stage2["val"],
            "alpha": trained["alpha"],
            "sets": {
                name: summarize(data, data.examples, _scores(trained, data, extra_rankers=False))
                for name, data in dev.items()
            },
        }
        print(f"seed {seed}: trained in {seconds:.0f}s", flush=True)
    report = {"train": names, "n_train": len(train.examples), "runs": runs}
    (args.out / "train_splits.json").write_text(json.dumps(report, indent=1) + "\n")
    table = render(aggregate(report))
    (args.out / "table.md").write_text(table)
    print(table)
    return 0


def _mean_sd(values: Sequence[float] | np.ndarray) -> str:
    arr = 100 * np.asarray(values, dtype=np.float64)
    return f"{arr.mean():+.1f} ± {arr.std(ddof=1) if arr.size > 1 else 0.0:.1f}"


def aggregate(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per dev set: every row's Recall@5 per seed, the differences to the prior and to dense,
    and each seed's paired test of qa-gnn (and qa-adjust) against the prior."""
    from grapher_bench.qa_gnn.cli import paired_test

    out: dict[str, dict[str, Any]] = {}
    for seed, run in report["runs"].items():
        for name, summary in run["sets"].items():
            entry = out.setdefault(name, {"n": summary["n"], "R@5": {}, "p": {}})
            per_query = summary["per_query_R@5"]
            for row in ROWS:
                entry["R@5"].setdefault(row, []).append(summary["metrics"][row]["R@5"])
            for row in ("qa-gnn", "qa-adjust"):
                test = paired_test(per_query["position-prior"], per_query[row])
                entry["p"].setdefault(row, []).append(
                    (test["p_permutation"], int(test["better"]), int(test["worse"]), seed)
                )
    return out


def render(agg: dict[str, dict[str, Any]]) -> str:
    """The verdict table: Recall@5 (%) mean ± sd over seeds, differences in points."""
    lines = [
        "| dev set | n | dense | position-prior | qa-adjust | qa-gnn | qa-gnn − prior | "
        "qa-adjust − prior | qa-gnn − dense | paired p vs prior per seed (qa-gnn ↑/↓) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in agg.items():
        r = {k: np.asarray(v) for k, v in entry["R@5"].items()}
        cells = [_mean_sd(r[row]).lstrip("+") for row in ROWS]
        tests = ", ".join(f"{p:.2g} ({b}↑ {w}↓)" for p, b, w, _ in entry["p"]["qa-gnn"])
        lines.append(
            f"| {name} | {entry['n']} | {' | '.join(cells)} | "
            f"{_mean_sd(r['qa-gnn'] - r['position-prior'])} | "
            f"{_mean_sd(r['qa-adjust'] - r['position-prior'])} | "
            f"{_mean_sd(r['qa-gnn'] - r['dense'])} | {tests} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
