"""Training GraphER-GAT and its MLP ablation on candidate graphs, through the shared loop.

Framework-free apart from torch, and independent of where the examples come from (the
benchmark tooling builds them in ``grapher_bench.gat.data``). Labels: 1 for gold objects.
A part of the queries is held out -- by database when the queries carry a ``db_id`` (Spider: unseen
databases, like the dev split) -- and training stops early on its PR@10 over multi-object
queries; the best epoch's weights are kept (:func:`grapher_core.learned.loop.fit`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.edges.graph import CandidateGraph
from grapher_core.errors import InputError
from grapher_core.learned.gat.features import EDGE_DIM, graph_arrays
from grapher_core.learned.inputs import DeviceTables, to_device
from grapher_core.learned.loop import (
    FitResult,
    Log,
    LoopConfig,
    fit,
    pr_at_k,
    predict,
    split_examples,
)

__all__ = [
    "Example",
    "GATAdapter",
    "ObjectTable",
    "TrainConfig",
    "TrainResult",
    "TrainingSet",
    "evaluate",
    "pool_example",
    "reference_metrics",
    "train_model",
]

TrainResult = FitResult


@dataclass(frozen=True)
class Example:
    """One query's candidate graph, with embeddings referenced by row (not copied)."""

    query_id: str
    group: str
    n_gold: int
    query_row: int
    object_rows: np.ndarray  # (n,) rows of TrainingSet.objects
    scalars: np.ndarray  # (n, 2)
    edge_index: np.ndarray  # (2, E)
    edge_attr: np.ndarray  # (E, EDGE_DIM)
    labels: np.ndarray  # (n,) 1.0 for gold

    @property
    def multi(self) -> bool:
        return self.n_gold > 1


class ObjectTable:
    """The object vectors of a training set, each distinct candidate stored once: examples
    reference their rows instead of copying vectors."""

    def __init__(self) -> None:
        self._row_of: dict[str, int] = {}
        self.vectors: list[np.ndarray] = []

    def rows(self, candidates: Sequence[Candidate]) -> np.ndarray:
        """Each candidate's row, added on first sight; a candidate without a vector is refused."""
        out = np.empty(len(candidates), dtype=np.int64)
        for i, candidate in enumerate(candidates):
            row = self._row_of.get(candidate.id)
            if row is None:
                if candidate.embedding is None:
                    raise InputError(f"candidate {candidate.id!r} has no vector to train on")
                row = self._row_of[candidate.id] = len(self.vectors)
                self.vectors.append(np.asarray(candidate.embedding, dtype=np.float32))
            out[i] = row
        return out


def pool_example(
    query_id: str,
    group: str,
    position: int,
    pool: Sequence[Candidate],
    gold: Collection[str],
    graph: CandidateGraph,
    seeds: np.ndarray,
    alpha: float,
    table: ObjectTable,
) -> Example:
    """One question's training example: its pool's rows in ``table``, the GAT's graph features
    (seeds, GCS at ``alpha``) and 1.0 labels for the gold objects."""
    arrays = graph_arrays(graph, seeds, alpha)
    wanted = set(gold)
    labels = np.array([1.0 if c.id in wanted else 0.0 for c in pool], dtype=np.float32)
    return Example(
        query_id,
        group,
        len(wanted),
        position,
        table.rows(pool),
        arrays.scalars,
        arrays.edge_index,
        arrays.edge_attr,
        labels,
    )


@dataclass
class TrainingSet:
    examples: list[Example]
    objects: np.ndarray  # (m, d) float32
    queries: np.ndarray  # (q, d) float32
    embedding_model: str
    dataset: str
    retriever: str
    graph: str
    alpha: float
    top_n: int
    seeds: str = "score"  # the seed feature: retriever scores or 1/rank (SEED_SCHEMES)


@dataclass
class TrainConfig(LoopConfig):
    """Everything ``grapher-bench train`` can set; defaults are the shipped checkpoint's."""

    architecture: str = "gat"
    hidden: int = 64
    heads: int = 2
    layers: int = 5
    dropout: float = 0.2


@dataclass
class _Batch:
    scalars: Any
    object_index: Any
    query_index: Any
    edge_index: Any
    edge_attr: Any


class GATAdapter:
    """Batches of GAT examples; the embedding tables move to the device once."""

    def __init__(self, objects: np.ndarray, queries: np.ndarray) -> None:
        self.tables = DeviceTables(objects, queries)

    def collate(self, items: Sequence[Example], device: str) -> tuple[_Batch, tuple[Any, ...]]:
        offsets = np.cumsum([0] + [len(e.labels) for e in items])
        rows = np.concatenate([e.object_rows for e in items])
        query_rows = np.concatenate([np.full(len(e.labels), e.query_row) for e in items])
        edge_index = np.concatenate(
            [e.edge_index + offsets[k] for k, e in enumerate(items)], axis=1
        )
        edge_attr = np.concatenate([e.edge_attr for e in items])
        scalars = np.concatenate([e.scalars for e in items])
        parts = (scalars, rows, query_rows, edge_index, edge_attr)
        batch = _Batch(*(to_device(a, device) for a in parts))
        return batch, self.tables.on(device)

    def forward(self, model: Any, batch: tuple[_Batch, tuple[Any, ...]]) -> Any:
        parts, (objects, queries) = batch
        return model(
            parts.scalars,
            objects,
            parts.object_index,
            queries,
            parts.query_index,
            parts.edge_index,
            parts.edge_attr,
        )


def reference_metrics(
    data: TrainingSet, indices: Sequence[int], ks: Sequence[int] = (5, 10)
) -> dict[str, dict[str, float]]:
    """PR@K of the base retriever's order and of GCS on the same queries, for comparison."""
    items = [data.examples[i] for i in indices]
    return {
        "baseline": pr_at_k(items, [e.scalars[:, 1] for e in items], ks),
        "gcs": pr_at_k(items, [e.scalars[:, 0] for e in items], ks),
    }


def evaluate(
    model: Any,
    data: TrainingSet,
    indices: Sequence[int],
    device: str,
    batch_size: int = 64,
    ks: Sequence[int] = (5, 10),
) -> dict[str, float]:
    """The model's PR@K on ``indices`` (see :func:`~grapher_core.learned.loop.pr_at_k`)."""
    items = [data.examples[i] for i in indices]
    adapter = GATAdapter(data.objects, data.queries)
    return pr_at_k(items, predict(model, adapter, items, device, batch_size), ks)


def train_model(
    data: TrainingSet,
    config: TrainConfig,
    log: Log | None = None,
    split: tuple[list[int], list[int]] | None = None,
) -> FitResult:
    """Train one model; early-stop on validation PR@10 over multi-object queries. ``split``:
    (training, validation) example indices; default held-out databases of ``data``."""
    from grapher_core.learned.gat.model import GraphERNet, ModelSpec

    split = split or split_examples(data.examples, config.val_fraction, config.seed)
    spec = ModelSpec(
        config.architecture,
        int(data.objects.shape[1]),
        config.hidden,
        config.heads,
        config.layers,
        EDGE_DIM,
        config.dropout,
    )
    return fit(
        lambda: GraphERNet(spec),
        GATAdapter(data.objects, data.queries),
        data.examples,
        config,
        split=split,
        reference=reference_metrics(data, split[1]),
        log=log,
    )
