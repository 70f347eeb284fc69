"""Training sets for the learned rankers built from benchmark folders (``grapher-bench train``).

Per query, the training graph is built exactly as the bench builds evaluation candidates: the
same base retriever (top-200, embeddings from the shared disk cache), the same proximities, the
same seed transform and GCS alpha as ``GraphReranker``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.learned.gat.train import (
    Example,
    ObjectTable,
    TrainConfig,
    TrainingSet,
    TrainResult,
    pool_example,
    train_model,
)
from grapher_core.learned.loop import Log
from grapher_core.ranking.propagation import DEFAULT_GCS_ALPHA

__all__ = [
    "GraphChoice",
    "build_training_set",
    "graph_for",
    "held_out_databases",
    "merge_training_sets",
    "train",
]

GraphChoice = str | Mapping[str, str] | None
"""One graph variant for every set, one per task type (``{"tables": "fk", "passages":
"mentions"}``: a pool of tables and passages), or None for each task's default."""


def graph_for(graph: GraphChoice, task_type: str) -> str | None:
    """A set's graph variant: a mixed pool cannot share one (title mentions on tables link
    nothing), so a mapping names one per task type; a task it leaves out gets its default."""
    if graph is None or isinstance(graph, str):
        return graph
    return graph.get(task_type)


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
    seeds: str = "score",
) -> TrainingSet:
    """Candidate graphs for every query of a loaded bench ``Dataset``; ``seeds``: the seed
    feature from the retriever's scores (``"score"``) or its order (``"rank"``, ``1/rank``)."""
    from grapher_bench.enrichment import graphs_for, proximities_for
    from grapher_bench.runner import DEFAULT_RETRIEVER, prepare_candidates
    from grapher_core.edges.graph import build_graph
    from grapher_core.learned.gat.features import SEED_SCHEMES
    from grapher_core.ranking.seeds import make_seeds

    if seeds not in SEED_SCHEMES:
        raise ValueError(f"seeds must be one of {SEED_SCHEMES}, got {seeds!r}")
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
    table = ObjectTable()
    examples: list[Example] = []
    for position, (query, cands) in enumerate(zip(dataset.queries, candidates, strict=True)):
        seed_scores = make_seeds(cands, "rank" if seeds == "rank" else "auto")
        examples.append(
            pool_example(
                query.id,
                str(query.extra.get("db_id", query.id)),
                position,
                cands,
                query.gold,
                build_graph(cands, proximities),
                seed_scores,
                alpha,
                table,
            )
        )
    queries = np.vstack([np.asarray(v, dtype=np.float32) for v in query_vectors])
    return TrainingSet(
        examples,
        np.vstack(table.vectors),
        queries,
        str(getattr(embedder, "name", "unknown")),
        dataset.name,
        retriever,
        graph,
        alpha,
        top_n,
        seeds,
    )


def _set_name(path: Path) -> str:
    """``bird/train`` for a split folder named only ``train`` (the train data's layout), else
    the folder's name: two sets' names must not clash in the pooled groups and the record."""
    return f"{path.parent.name}/{path.name}" if path.name in ("train", "dev", "test") else path.name


def merge_training_sets(sets: Sequence[TrainingSet]) -> TrainingSet:
    """One training set from several (BIRD train + Spider train, say): embedding rows and query
    rows offset, each query's group prefixed with its set's name so two sets' databases of the
    same name stay apart. The sets must agree on the features' meaning (embedding model, alpha,
    pool size, seeds); their graphs may differ (tables on foreign keys, passages on title
    mentions: the edge kinds tell the model which is which) and are recorded ``a|b``."""
    if not sets:
        raise ValueError("no training set to merge")
    first = sets[0]
    for other in sets[1:]:
        for name in ("embedding_model", "alpha", "top_n", "seeds"):
            if getattr(other, name) != getattr(first, name):
                raise ValueError(
                    f"training sets disagree on {name}: {first.dataset} has "
                    f"{getattr(first, name)!r}, {other.dataset} {getattr(other, name)!r}"
                )
    if len(sets) == 1:
        return first
    examples: list[Example] = []
    rows = queries = 0
    for data in sets:
        examples += [
            replace(
                e,
                group=f"{data.dataset}/{e.group}",
                query_row=e.query_row + queries,
                object_rows=e.object_rows + rows,
            )
            for e in data.examples
        ]
        rows += data.objects.shape[0]
        queries += data.queries.shape[0]
    retrievers = sorted({d.retriever for d in sets})
    graphs = "|".join(dict.fromkeys(d.graph for d in sets))
    return TrainingSet(
        examples,
        np.vstack([d.objects for d in sets]),
        np.vstack([d.queries for d in sets]),
        first.embedding_model,
        "+".join(d.dataset for d in sets),
        "+".join(retrievers),
        graphs,
        first.alpha,
        first.top_n,
        first.seeds,
    )


def _held_groups(
    validations: Sequence[TrainingSet], databases: int | float, seed: int
) -> list[set[str]]:
    """Per validation set, the groups drawn (one seeded stream, so the first set's draw is
    what one set alone gets): ``databases`` of them, or that share of them when a float."""
    rng = random.Random(seed)
    held: list[set[str]] = []
    for validation in validations:
        groups = sorted({e.group for e in validation.examples})
        count = databases if isinstance(databases, int) else round(databases * len(groups))
        if not 1 <= count < len(groups):
            raise ValueError(
                f"validation needs 1 to {len(groups) - 1} of the {len(groups)} databases of "
                f"{validation.dataset}, got {databases}"
            )
        held.append(set(rng.sample(groups, count)))
    return held


def held_out_databases(
    train_sets: Sequence[TrainingSet],
    validation: TrainingSet | Sequence[TrainingSet],
    databases: int | float,
    seed: int,
) -> tuple[TrainingSet, tuple[list[int], list[int]]]:
    """The paper's selection split: validate on every query of ``databases`` databases drawn
    (seeded) from ``validation``, train on the training sets' queries of every *other*
    database. A held-out database is dropped from every training set by its name (Spider's
    train questions come in two sets over the same databases), so its schema stays unseen.
    ``validation`` may be one of ``train_sets``; its other queries are then trained on.
    Several validation sets each give ``databases`` (a count, or a share when a float) of
    their groups; a set without databases has one group per question, so the three small
    multi-hop train splits each keep a share of their questions apart."""
    validations = [validation] if isinstance(validation, TrainingSet) else list(validation)
    drawn = _held_groups(validations, databases, seed)
    held_of = {id(v): groups for v, groups in zip(validations, drawn, strict=True)}
    held: set[str] = set().union(*drawn)
    inside = [any(v is t for t in train_sets) for v in validations]
    sets = list(train_sets) + [v for v, i in zip(validations, inside, strict=True) if not i]
    merged = merge_training_sets(sets)
    train_idx: list[int] = []
    val_idx: list[int] = []
    index = 0
    for data in sets:
        trained = any(data is t for t in train_sets)
        held_here = held_of.get(id(data), set())
        for e in data.examples:
            if e.group in held_here:
                val_idx.append(index)
            elif trained and e.group not in held:
                train_idx.append(index)
            index += 1
    if not train_idx:
        raise ValueError("no training query is left outside the held-out databases")
    return merged, (train_idx, val_idx)


def _validation_note(
    validation: Sequence[Path], databases: int | float, val_fraction: float
) -> str:
    """How the checkpoint's epoch was chosen, in its record."""
    if not validation:
        return f"held-out databases of the training data ({val_fraction})"
    names = ", ".join(_set_name(p) for p in validation)
    if isinstance(databases, int):
        return f"{databases} databases of {names}"
    return f"{databases:g} of the databases (questions without one) of each of {names}"


def _record(
    data: TrainingSet, result: TrainResult, config: TrainConfig, trained_on: str, note: str
) -> dict[str, Any]:
    """The ``training`` block of the checkpoint's config."""
    return {
        "data": trained_on,
        "validation": note,
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
        "device": result.device,
    }


def _paths(value: str | Path | Sequence[str | Path] | None) -> list[Path]:
    if value is None:
        return []
    return [Path(value)] if isinstance(value, (str, Path)) else [Path(p) for p in value]


def train(
    dataset_path: str | Path | Sequence[str | Path],
    out: str | Path,
    config: TrainConfig,
    *,
    retriever: str | None = None,
    graph: GraphChoice = None,
    alpha: float = DEFAULT_GCS_ALPHA,
    top_n: int = 200,
    limit: int | None = None,
    embedder: Any | None = None,
    log: Log | None = None,
    data: TrainingSet | None = None,
    validation: str | Path | Sequence[str | Path] | None = None,
    val_databases: int | float = 20,
    seeds: str = "score",
) -> tuple[TrainResult, tuple[Path, Path]]:
    """Load one or more datasets, build their graphs, train, and save ``<out>.safetensors`` +
    ``.json``. ``validation``: one or more datasets whose ``val_databases`` databases (a count,
    or a share when a float; drawn with the config's seed) are the validation queries, those
    databases left out of training (the paper's protocol: train on BIRD, select on a Spider
    train sample); without it, held-out databases of the training data itself
    (``config.val_fraction``). ``graph``: one variant, or one per task type (a pool of tables
    and passages)."""
    from grapher_bench.data import load_dataset
    from grapher_core.learned.gat.checkpoint import GAT, CheckpointConfig

    started = time.perf_counter()
    validations = _paths(validation)
    built: dict[Path, TrainingSet] = {}

    def build(path: Path) -> TrainingSet:
        key = path.resolve()
        if key not in built:
            dataset = load_dataset(path, limit=limit)
            built[key] = replace(
                build_training_set(
                    dataset,
                    retriever=retriever,
                    graph=graph_for(graph, dataset.task_type),
                    alpha=alpha,
                    embedder=embedder,
                    top_n=top_n,
                    seeds=seeds,
                ),
                dataset=_set_name(path),
            )
            if log:
                log(
                    f"built {len(built[key].examples)} graphs from {built[key].dataset} "
                    f"({built[key].retriever} top-{top_n}, graph {built[key].graph}) in "
                    f"{time.perf_counter() - started:.1f}s"
                )
        return built[key]

    split: tuple[list[int], list[int]] | None = None
    trained_on = data.dataset if data is not None else ""
    if data is None:
        train_sets = [build(p) for p in _paths(dataset_path)]
        trained_on = "+".join(t.dataset for t in train_sets)
        if not validations:
            data = merge_training_sets(train_sets)
        else:
            data, split = held_out_databases(
                train_sets, [build(p) for p in validations], val_databases, config.seed
            )
    result = train_model(data, config, log, split)
    training = _record(
        data,
        result,
        config,
        trained_on,
        _validation_note(validations, val_databases, config.val_fraction),
    )
    training["seconds_total"] = round(time.perf_counter() - started, 1)
    checkpoint = CheckpointConfig(
        model=result.model.spec,
        embedding_model=data.embedding_model,
        embedding_dim=int(data.objects.shape[1]),
        alpha=data.alpha,
        graph=data.graph,
        retriever=data.retriever,
        seeds=data.seeds,
        training=training,
        metrics={"validation": result.best_metrics, "validation_reference": result.reference},
    )
    saved = GAT.save(result.model, checkpoint, out)
    return result, saved
