"""Training sets for the learned rankers built from benchmark folders (``grapher-bench train``).

Per query, the training graph is built exactly as the bench builds evaluation candidates: the
same base retriever (top-200, embeddings from the shared disk cache), the same proximities, the
same seed transform and GCS alpha as ``GraphReranker``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.learned.gat.features import graph_arrays
from grapher_core.learned.gat.train import (
    Example,
    TrainConfig,
    TrainingSet,
    TrainResult,
    train_model,
)
from grapher_core.learned.loop import Log
from grapher_core.ranking.propagation import DEFAULT_GCS_ALPHA

__all__ = ["build_training_set", "train"]


def _metadata_for(dataset: Any, graph: str, progress: bool) -> list[dict[str, Any]]:
    """Enrich as the bench does: title mentions and/or spaCy entities when the graph uses them."""
    from grapher_bench.enrichment import add_entities, add_mentions

    metadata = [dict(o.metadata) for o in dataset.corpus]
    parts = set(graph.split("+"))
    if "mentions" in parts:
        metadata = add_mentions(dataset.corpus, metadata)
    if any(p.startswith("entities") for p in parts):
        from grapher_bench.cache import cache_root

        metadata, _ = add_entities(
            dataset.corpus, metadata, cache_root() / "entities-spacy.sqlite", progress=progress
        )
    return metadata


def build_training_set(
    dataset: Any,
    *,
    retriever: str | None = None,
    graph: str | None = None,
    alpha: float = DEFAULT_GCS_ALPHA,
    embedder: Any | None = None,
    top_n: int = 200,
    progress: bool = False,
) -> TrainingSet:
    """Candidate graphs for every query of a loaded bench ``Dataset``."""
    from grapher_bench.enrichment import graphs_for, proximities_for
    from grapher_bench.runner import DEFAULT_RETRIEVER, prepare_candidates
    from grapher_core.edges.graph import build_graph
    from grapher_core.ranking.seeds import make_seeds

    retriever = retriever or DEFAULT_RETRIEVER[dataset.task_type]
    if retriever == "bm25":
        raise ValueError("the learned rankers need embeddings: use a dense or hybrid retriever")
    graph = graph or graphs_for(dataset.task_type)[0]
    proximities = proximities_for(graph)
    if embedder is None:
        from grapher_bench.cache import CachedEmbedder, EmbeddingCache
        from grapher_core.embeddings import default_embedder

        embedder = CachedEmbedder(default_embedder(), EmbeddingCache())
    metadata = _metadata_for(dataset, graph, progress)
    candidates, query_vectors = prepare_candidates(dataset, retriever, metadata, embedder, top_n)
    row_of: dict[str, int] = {}
    object_vectors: list[np.ndarray] = []
    examples: list[Example] = []
    for position, (query, cands) in enumerate(zip(dataset.queries, candidates, strict=True)):
        rows = np.empty(len(cands), dtype=np.int64)
        for i, candidate in enumerate(cands):
            row = row_of.get(candidate.id)
            if row is None:
                row = row_of[candidate.id] = len(object_vectors)
                if candidate.embedding is None:
                    raise ValueError(f"candidate {candidate.id!r} has no embedding")
                object_vectors.append(np.asarray(candidate.embedding, dtype=np.float32))
            rows[i] = row
        seeds = make_seeds(cands)
        arrays = graph_arrays(build_graph(cands, proximities), seeds, alpha)
        gold = set(query.gold)
        labels = np.array([1.0 if c.id in gold else 0.0 for c in cands], dtype=np.float32)
        group = str(query.extra.get("db_id", query.id))
        examples.append(
            Example(
                query.id,
                group,
                len(gold),
                position,
                rows,
                arrays.scalars,
                arrays.edge_index,
                arrays.edge_attr,
                labels,
            )
        )
    queries = np.vstack([np.asarray(v, dtype=np.float32) for v in query_vectors])
    return TrainingSet(
        examples,
        np.vstack(object_vectors),
        queries,
        str(getattr(embedder, "name", "unknown")),
        dataset.name,
        retriever,
        graph,
        alpha,
        top_n,
    )


def train(
    dataset_path: str | Path,
    out: str | Path,
    config: TrainConfig,
    *,
    retriever: str | None = None,
    graph: str | None = None,
    alpha: float = DEFAULT_GCS_ALPHA,
    top_n: int = 200,
    limit: int | None = None,
    embedder: Any | None = None,
    log: Log | None = None,
    data: TrainingSet | None = None,
) -> tuple[TrainResult, tuple[Path, Path]]:
    """Load a dataset, build its graphs, train, and save ``<out>.safetensors`` + ``.json``."""
    from grapher_bench.data import load_dataset
    from grapher_core.learned.gat.checkpoint import CheckpointConfig, save_checkpoint

    started = time.perf_counter()
    if data is None:
        dataset = load_dataset(dataset_path, limit=limit)
        data = build_training_set(
            dataset, retriever=retriever, graph=graph, alpha=alpha, embedder=embedder, top_n=top_n
        )
        if log:
            log(
                f"built {len(data.examples)} graphs from {dataset.name} ({data.retriever} "
                f"top-{top_n}, graph {data.graph}) in {time.perf_counter() - started:.1f}s"
            )
    result = train_model(data, config, log)
    checkpoint = CheckpointConfig(
        model=result.model.spec,
        embedding_model=data.embedding_model,
        embedding_dim=int(data.objects.shape[1]),
        alpha=data.alpha,
        graph=data.graph,
        retriever=data.retriever,
        training={
            "data": data.dataset,
            "queries": len(data.examples),
            "train_queries": result.n_train,
            "val_queries": result.n_val,
            "top_n": data.top_n,
            "loss": config.loss,
            "lr": config.lr,
            "weight_decay": config.weight_decay,
            "batch_size": config.batch_size,
            "dropout": config.dropout,
            "seed": config.seed,
            "epochs_run": len(result.history),
            "best_epoch": result.best_epoch,
            "seconds": round(result.seconds, 1),
            "seconds_total": round(time.perf_counter() - started, 1),
            "device": result.device,
        },
        metrics={"validation": result.best_metrics, "validation_reference": result.reference},
    )
    paths = save_checkpoint(result.model, checkpoint, out)
    return result, paths
