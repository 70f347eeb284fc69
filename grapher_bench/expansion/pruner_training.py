"""Train the learned soft pruner (:mod:`grapher_core.learned.pruner`) on benchmark data.

Examples are the objects the default expansion rule fetches for each query (same retriever,
enrichment and links as ``grapher-bench bench``), labelled 1 when gold. With ``--lodo`` one
pruner per dataset is trained on all the *other* datasets (leave one dataset out), so the bench's
``expand-gcs[prune=learned]`` row never scores a set its pruner saw; ``all`` is always trained
on everything given (used for sets outside the list).

    python -m grapher_bench.expansion.pruner_training --data ../shared/benchmarks \\
        --datasets musique hotpotqa spider_train --out pruners --lodo
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
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--datasets", nargs="+", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--lodo", action="store_true", help="one pruner per dataset, trained on the others"
    )
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args(argv)
    from grapher_core.learned.pruner import train_pruner

    examples = {name: build_examples(args.data / name, limit=args.limit) for name in args.datasets}
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
    for label, sources in runs.items():
        train = [e for n in sources for e in examples[n]]
        pruner, metrics = train_pruner(train)
        pruner.save(
            args.out / label,
            trained_on=sources,
            validation=metrics,
            loss="bce on fetched objects' gold labels (retrieval, not GRAG's LM loss)",
        )
        summary[label] = {**summary.get(label, {}), "trained_on": sources, "validation": metrics}
        print(f"{label}: trained on {sources}: {metrics}", flush=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
