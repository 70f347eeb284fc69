"""Train the learned soft pruner (:mod:`grapher_core.learned.pruner`) on benchmark data.

Examples are the objects the default expansion rule fetches for each query (same retriever,
enrichment and links as ``grapher-bench bench``), labelled 1 when gold. With ``--lodo`` one
pruner per dataset is trained on all the *other* datasets (leave one dataset out), so the bench's
``expand-gcs[prune=learned]`` row never scores a set its pruner saw; ``all`` is always trained
on everything given (used for sets outside the list).

    python -m grapher_bench.expansion.pruner_training --data ../shared/benchmarks \\
        --datasets musique hotpotqa spider_train --out pruners --lodo

With ``--train-splits`` the datasets are the TRAIN splits of ``$GRAPHER_TRAIN_DATA``
(``<name>/train``), so the pruner never sees a dev question; ``--seeds 0,1,2`` writes one
``all`` pruner per seed under ``<out>/seed<k>/`` (validation: 20 % of the train questions):

    python -m grapher_bench.expansion.pruner_training --train-splits \\
        --datasets hotpotqa 2wikimultihopqa musique --seeds 0,1,2 --out pruners
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["build_examples", "main"]


def build_examples(folder: Path, *, limit: int | None = None) -> list[Any]:
    """One :class:`PruningExample` per query whose expansion fetched anything."""
    from grapher_bench.data import load_dataset
    from grapher_bench.enrichment import FULL_GRAPH
    from grapher_bench.peers.rankers import expansion_reranker
    from grapher_bench.runner import RankerSpec, _enriched_metadata, prepare_candidates
    from grapher_core.expand import InMemorySource
    from grapher_core.learned.pruner import PruningExample, features

    dataset = load_dataset(folder, limit=limit)
    graph = FULL_GRAPH[dataset.task_type]
    metadata = _enriched_metadata(dataset, [RankerSpec("x", "gcs", graph)], [], False)
    candidates, query_vectors = prepare_candidates(dataset, "hybrid", metadata, progress=False)
    from grapher_bench.peers.rankers import _vectors

    corpus_vectors, _ = _vectors(dataset)
    source = InMemorySource(dataset.corpus, embeddings=corpus_vectors, metadata=metadata)
    expander = expansion_reranker("expand-gcs", dataset.task_type, source).expander
    out = []
    for query, cands, vector in zip(dataset.queries, candidates, query_vectors, strict=True):
        result = expander.expand(cands, query_embedding=vector)
        fetched = result.candidates[len(result.candidates) - len(result.added) :]
        if not fetched or vector is None:
            continue
        matrix = np.vstack([np.asarray(c.embedding) for c in fetched])
        gold = set(query.gold)
        labels = np.asarray([float(c.id in gold) for c in fetched], dtype=np.float32)
        group = f"{dataset.name}/{getattr(query, 'db_id', None) or query.id}"
        out.append(
            PruningExample(query.id, group, features(vector, matrix), labels, len(query.gold))
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="benchmarks root")
    parser.add_argument(
        "--train-splits",
        action="store_true",
        help="read <name>/train under $GRAPHER_TRAIN_DATA (or --data) instead",
    )
    parser.add_argument("--seeds", default="0", help="comma list; several: <out>/seed<k>/")
    parser.add_argument(
        "--verdict",
        type=Path,
        default=None,
        metavar="ROOT",
        help="only print the table of bench runs under ROOT/seed<k>/<dataset> (see verdict())",
    )
    parser.add_argument("--datasets", nargs="+", required=True)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--lodo", action="store_true", help="one pruner per dataset, trained on the others"
    )
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args(argv)
    if args.verdict is not None:
        print(verdict(args.verdict, args.datasets), end="")
        return 0
    if args.data is None and not args.train_splits:
        parser.error("--data is required without --train-splits")
    if args.out is None:
        parser.error("--out is required")
    examples = {
        name: build_examples(_folder(args, name), limit=args.limit) for name in args.datasets
    }
    summary: dict[str, Any] = {}
    for name, items in examples.items():
        positives = sum(int(e.labels.sum()) for e in items)
        total = sum(len(e.labels) for e in items)
        summary[name] = {"queries": len(items), "fetched": total, "gold_fetched": positives}
        print(
            f"{name}: {len(items)} queries with fetched objects, {total} fetched, {positives} gold",
            flush=True,
        )
    runs = (
        {name: [n for n in args.datasets if n != name] for name in args.datasets}
        if args.lodo
        else {}
    )
    runs["all"] = list(args.datasets)  # for sets outside the list (and the shipped one)
    seeds = [int(s) for s in str(args.seeds).split(",") if s]
    for seed in seeds:
        out = args.out if len(seeds) == 1 else args.out / f"seed{seed}"
        summary.update(_train_runs(examples, runs, out, seed, args.train_splits))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return 0


def _folder(args: argparse.Namespace, name: str) -> Path:
    """The dataset folder: ``<data>/<name>``, or its train split with ``--train-splits``."""
    if args.train_splits:
        from grapher_bench.data import train_folder

        return train_folder(name, args.data)
    return Path(args.data) / name


def _train_runs(
    examples: dict[str, list[Any]],
    runs: dict[str, list[str]],
    out: Path,
    seed: int,
    train_splits: bool,
) -> dict[str, Any]:
    """One pruner per run (``label -> source datasets``), saved under ``out``."""
    import time

    from grapher_core.learned.pruner import train_pruner

    summary: dict[str, Any] = {}
    for label, sources in runs.items():
        train = [e for n in sources for e in examples[n]]
        started = time.perf_counter()
        pruner, metrics = train_pruner(train, seed=seed)
        named = [f"{n}/train" for n in sources] if train_splits else sources
        pruner.save(
            out / label,
            trained_on=named,
            validation=metrics,
            loss="bce on fetched objects' gold labels (retrieval, not GRAG's LM loss)",
        )
        key = label if out.name != f"seed{seed}" else f"seed{seed}/{label}"
        seconds = round(time.perf_counter() - started, 1)
        summary[key] = {"trained_on": named, "validation": metrics, "seconds": seconds}
        print(f"{key}: trained on {named}: {metrics} ({seconds}s)", flush=True)
    return summary


PLAIN, PRUNED = "expand-gcs", "expand-gcs[prune=learned]"


def verdict(root: Path, sets: Sequence[str], ks: Sequence[int] = (5, 10)) -> str:
    """The pruner's verdict table from ``grapher-bench bench --out <root>/seed<k>/<set>`` runs
    (rows ``expand-gcs`` and ``expand-gcs[prune=learned]``): PR@k of expansion without and with
    the learned pruner, mean ± sd over the seeds, and each seed's exact McNemar test."""
    from grapher_core.evaluation.paired import compare_paired

    seeds = sorted(p for p in root.glob("seed*") if p.is_dir())
    head = " | ".join(f"no pruning PR@{k} | learned pruner PR@{k} | Δ PR@{k}" for k in ks)
    lines = [
        f"| dev set | n | {head} | McNemar p per seed, PR@{ks[-1]} (won/lost) |",
        "|---|---|" + "---|" * (3 * len(ks) + 1),
    ]
    for name in sets:
        rows = [json.loads(min((s / name).rglob("per_query.json")).read_text()) for s in seeds]
        cells, tests = [], []
        for k in ks:
            key = f"PR@{k}"
            plain = [np.mean([q[key] for q in r[PLAIN].values()]) for r in rows]
            pruned = [np.mean([r[PRUNED][i][key] for i in r[PLAIN]]) for r in rows]
            delta = 100 * (np.asarray(pruned) - np.asarray(plain))
            sd = delta.std(ddof=1) if delta.size > 1 else 0.0
            cells += [_ms(plain), _ms(pruned), f"{delta.mean():+.1f} ± {sd:.1f}"]
        for r in rows:
            key = f"PR@{ks[-1]}"
            ours = [float(r[PRUNED][i][key]) for i in r[PLAIN]]
            result = compare_paired(ours, [float(q[key]) for q in r[PLAIN].values()])
            tests.append(f"{result.p:.2g} ({result.wins}/{result.losses})")
        lines.append(
            f"| {name} | {len(rows[0][PLAIN])} | {' | '.join(cells)} | {', '.join(tests)} |"
        )
    return "\n".join(lines) + "\n"


def _ms(values: Sequence[float]) -> str:
    arr = 100 * np.asarray(values, dtype=np.float64)
    return f"{arr.mean():.1f} ± {arr.std(ddof=1) if arr.size > 1 else 0.0:.1f}"


if __name__ == "__main__":
    raise SystemExit(main())
