"""Training the learned rankers: candidate-graph examples, losses, the loop, early stopping.

Framework-free apart from torch, and independent of where the examples come from (the
benchmark tooling builds them in ``grapher_bench.training_sets``). Labels: 1 for gold objects.
A part of the queries is held out -- by database when the queries carry a ``db_id`` (Spider: unseen
databases, like the dev split) -- and training stops early on its PR@10 over multi-object
queries; the best epoch's weights are kept.

Losses: ``bce`` (node-level binary cross-entropy) or ``pairwise`` (G-RAG's margin loss,
``max(0, 1 - (s_pos - s_neg))`` averaged over every gold/non-gold pair of a query).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grapher_core.learned.features import EDGE_DIM

__all__ = [
    "LOSSES",
    "Example",
    "TrainConfig",
    "TrainResult",
    "TrainingSet",
    "evaluate",
    "reference_metrics",
    "split_examples",
    "train_model",
]

LOSSES: tuple[str, ...] = ("bce", "pairwise")
Log = Callable[[str], None]


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


@dataclass
class TrainConfig:
    """Everything ``grapher-bench train`` can set; defaults are the shipped checkpoint's."""

    architecture: str = "gat"
    loss: str = "pairwise"
    epochs: int = 15
    patience: int = 4
    lr: float = 5e-4
    weight_decay: float = 1e-3
    hidden: int = 64
    heads: int = 2
    layers: int = 5
    dropout: float = 0.2
    batch_size: int = 32
    val_fraction: float = 0.2
    seed: int = 0
    device: str = "auto"
    threads: int | None = 1  # CPU threads for torch; None = torch's default (see docs/gat.md)

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if not 0.0 < self.val_fraction < 1.0:
            raise ValueError(f"val_fraction must be in (0, 1), got {self.val_fraction!r}")
        for name in ("epochs", "patience", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if self.lr <= 0 or self.weight_decay < 0:
            raise ValueError("lr must be > 0 and weight_decay >= 0")


@dataclass
class TrainResult:
    model: Any  # GraphERNet, in eval mode, best epoch's weights
    best_epoch: int
    best_metrics: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0
    n_train: int = 0
    n_val: int = 0
    device: str = "cpu"
    reference: dict[str, dict[str, float]] = field(default_factory=dict)


def split_examples(examples: Sequence[Example], val_fraction: float, seed: int
                   ) -> tuple[list[int], list[int]]:
    """Hold out whole groups (databases) when there are enough of them, else queries."""
    groups = sorted({e.group for e in examples})
    rng = random.Random(seed)
    if len(groups) >= 5 and len(groups) < len(examples):
        held = set(rng.sample(groups, max(1, round(val_fraction * len(groups)))))
        val = [i for i, e in enumerate(examples) if e.group in held]
    else:
        val = sorted(rng.sample(range(len(examples)), max(1, round(val_fraction * len(examples)))))
    chosen = set(val)
    train = [i for i in range(len(examples)) if i not in chosen]
    if not train or not val:
        raise ValueError(f"need at least 2 queries to split train/validation, got {len(examples)}")
    return train, val


@dataclass
class _Batch:
    scalars: Any
    object_index: Any
    query_index: Any
    edge_index: Any
    edge_attr: Any
    labels: Any
    pairs: Any  # (2, P) node positions: gold, non-gold
    pair_weight: Any  # (P,) 1 / pairs of the query, so every query weighs the same
    sizes: list[int]


def _collate(items: Sequence[Example], device: str) -> _Batch:
    import torch

    offsets = np.cumsum([0] + [len(e.labels) for e in items])
    rows = np.concatenate([e.object_rows for e in items])
    query_rows = np.concatenate([np.full(len(e.labels), e.query_row) for e in items])
    edge_index = np.concatenate([e.edge_index + offsets[k] for k, e in enumerate(items)], axis=1)
    edge_attr = np.concatenate([e.edge_attr for e in items])
    pairs: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    for k, e in enumerate(items):
        pos = np.flatnonzero(e.labels > 0) + offsets[k]
        neg = np.flatnonzero(e.labels == 0) + offsets[k]
        if pos.size and neg.size:
            grid = np.stack(np.meshgrid(pos, neg, indexing="ij")).reshape(2, -1)
            pairs.append(grid)
            weights.append(np.full(grid.shape[1], 1.0 / grid.shape[1], dtype=np.float32))
    pair_array = np.concatenate(pairs, axis=1) if pairs else np.zeros((2, 0), dtype=np.int64)
    weight_array = np.concatenate(weights) if weights else np.zeros(0, dtype=np.float32)

    def tensor(array: np.ndarray) -> Any:
        return torch.from_numpy(np.ascontiguousarray(array)).to(device)

    return _Batch(tensor(np.concatenate([e.scalars for e in items])), tensor(rows),
                  tensor(query_rows), tensor(edge_index), tensor(edge_attr),
                  tensor(np.concatenate([e.labels for e in items])), tensor(pair_array),
                  tensor(weight_array), [len(e.labels) for e in items])


def _forward(model: Any, batch: _Batch, tensors: tuple[Any, Any]) -> Any:
    objects, queries = tensors
    return model(batch.scalars, objects, batch.object_index, queries, batch.query_index,
                 batch.edge_index, batch.edge_attr)


def _loss(kind: str, logits: Any, batch: _Batch, n_graphs: int) -> Any:
    import torch.nn.functional as F

    if kind == "bce":
        return F.binary_cross_entropy_with_logits(logits, batch.labels)
    if batch.pairs.shape[1] == 0:
        return logits.sum() * 0.0
    margins = F.relu(1.0 - (logits[batch.pairs[0]] - logits[batch.pairs[1]]))
    return (margins * batch.pair_weight).sum() / n_graphs


def _pr_at_k(items: Sequence[Example], scores: Sequence[np.ndarray],
             ks: Sequence[int]) -> dict[str, float]:
    """PR@K over all and over multi-object queries (a gold object outside the candidates
    counts as missed), ties broken by candidate order, as the bench computes it."""
    hits: dict[str, list[float]] = {f"PR@{k}": [] for k in ks}
    multi_hits: dict[str, list[float]] = {f"PR@{k}>1": [] for k in ks}
    for e, values in zip(items, scores, strict=True):
        order = np.lexsort((np.arange(values.size), -values))
        for k in ks:
            found = float(e.labels[order[:k]].sum() >= e.n_gold)
            hits[f"PR@{k}"].append(found)
            if e.multi:
                multi_hits[f"PR@{k}>1"].append(found)
    return {key: float(np.mean(v)) if v else math.nan for key, v in {**hits, **multi_hits}.items()}


def reference_metrics(data: TrainingSet, indices: Sequence[int], ks: Sequence[int] = (5, 10)
                      ) -> dict[str, dict[str, float]]:
    """PR@K of the base retriever's order and of GCS on the same queries, for comparison."""
    items = [data.examples[i] for i in indices]
    return {"baseline": _pr_at_k(items, [e.scalars[:, 1] for e in items], ks),
            "gcs": _pr_at_k(items, [e.scalars[:, 0] for e in items], ks)}


def evaluate(model: Any, data: TrainingSet, indices: Sequence[int], tensors: tuple[Any, Any],
             device: str, batch_size: int = 64, ks: Sequence[int] = (5, 10)) -> dict[str, float]:
    """The model's PR@K on ``indices`` (see :func:`_pr_at_k`)."""
    import torch

    model.eval()
    items = [data.examples[i] for i in indices]
    scores: list[np.ndarray] = []
    with torch.inference_mode():
        for start in range(0, len(items), batch_size):
            chunk = items[start:start + batch_size]
            logits = _forward(model, _collate(chunk, device), tensors).cpu().numpy()
            scores += np.split(logits, np.cumsum([len(e.labels) for e in chunk])[:-1])
    return _pr_at_k(items, scores, ks)


def _device(choice: str) -> str:
    import torch

    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return choice


def train_model(data: TrainingSet, config: TrainConfig, log: Log | None = None) -> TrainResult:
    """Train one model; early-stop on validation PR@10 over multi-object queries."""
    import torch

    from grapher_core.learned.model import GraphERNet, ModelSpec

    started = time.perf_counter()
    device = _device(config.device)
    if device == "cpu" and config.threads is not None:
        # One thread: small sparse ops gain little from two, and on a shared CPU OpenMP
        # threads waiting on each other made a training step 20x slower (docs/gat.md).
        torch.set_num_threads(config.threads)
    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)
    train_idx, val_idx = split_examples(data.examples, config.val_fraction, config.seed)
    spec = ModelSpec(config.architecture, int(data.objects.shape[1]), config.hidden,
                     config.heads, config.layers, EDGE_DIM, config.dropout)
    model = GraphERNet(spec).to(device)
    tensors = (torch.from_numpy(data.objects).to(device),
               torch.from_numpy(data.queries).to(device))
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.lr,
                                  weight_decay=config.weight_decay)
    generator = torch.Generator().manual_seed(config.seed)
    key = "PR@10>1" if any(data.examples[i].multi for i in val_idx) else "PR@10"
    reference = reference_metrics(data, val_idx)
    if log:
        log(f"{len(train_idx)} training / {len(val_idx)} validation queries; on validation "
            + "; ".join(f"{name} {key} {m[key]:.3f} PR@10 {m['PR@10']:.3f}"
                        for name, m in reference.items()))
    best: tuple[float, int, dict[str, float], dict[str, Any]] | None = None
    history: list[dict[str, float]] = []
    stale = 0
    for epoch in range(1, config.epochs + 1):
        tick = time.perf_counter()
        model.train()
        order = [train_idx[i] for i in torch.randperm(len(train_idx), generator=generator)]
        total = 0.0
        for start in range(0, len(order), config.batch_size):
            items = [data.examples[i] for i in order[start:start + config.batch_size]]
            batch = _collate(items, device)
            logits = _forward(model, batch, tensors)
            loss = _loss(config.loss, logits, batch, len(items))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * len(items)
        metrics = evaluate(model, data, val_idx, tensors, device)
        row = {"epoch": float(epoch), "loss": total / len(order),
               "seconds": time.perf_counter() - tick, **metrics}
        history.append(row)
        if log:
            log(f"epoch {epoch:3d}  loss {row['loss']:.4f}  val {key} {metrics[key]:.3f}  "
                f"PR@10 {metrics['PR@10']:.3f}  PR@5 {metrics['PR@5']:.3f}  "
                f"({row['seconds']:.1f}s)")
        score = metrics[key]
        if best is None or score > best[0] + 1e-9:
            state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            best = (score, epoch, metrics, state)
            stale = 0
        else:
            stale += 1
            if stale >= config.patience:
                break
    assert best is not None
    model.load_state_dict(best[3])
    model.eval()
    return TrainResult(model, best[1], best[2], history, time.perf_counter() - started,
                       len(train_idx), len(val_idx), device, reference)
