"""Training the query-aware GNN in the paper's two stages, on the shared loop
(:func:`grapher_core.learned.loop.fit`).

* **Stage 1** (label-free): the encoder learns masked link reconstruction on candidate graphs
  (sequential + semantic edges): a fixed ``mask_fraction`` of each graph's edges is hidden from
  message passing and must be told apart from as many random non-edges by the dot product of
  the two ends' encodings (BCE). No relevance label is read. Early stopping on validation AUC.
  The encoder is then frozen.
* **Stage 2**: query-guided pooling + fusion + head on (query, positive, hard negative)
  triplets -- positives: the gold candidates; negatives: the ``hard_negatives`` best
  non-gold candidates by retriever score plus ``random_negatives`` drawn from the rest at every
  step -- with ``triplet margin loss + bce_weight * BCE``.
  Early stopping on validation Recall@5 of the *fused* score, the output a user gets (the
  fusion refitted on the validation queries at every epoch, epoch 0 included, so training
  keeps the untrained network when no epoch improves what the fusion makes of it).
  ``end_to_end=True`` is the §7.3 reading (the encoder is fine-tuned too, from stage 1);
  ``pretrain=False`` skips stage 1 (the encoder is then trained from scratch in stage 2: the
  "w/o stage 1" ablation).
* **Score fusion** (Alg. 6): a logistic regression over the min-max scaled [retriever, adjusted,
  GNN] scores, fitted on the *validation* queries (scores the network was not trained on).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from grapher_core.learned.inputs import DeviceTables, to_device
from grapher_core.learned.loop import (
    Log,
    LoopConfig,
    fit,
    predict,
    seed_everything,
    split_examples,
)
from grapher_core.learned.qa_gnn.checkpoint import (
    FusionCoefficients,
    QAGNNConfig,
    fusion_features,
)
from grapher_core.learned.qa_gnn.features import EgoBatch, TypedEdges, fit_logistic
from grapher_core.learned.qa_gnn.model import QAGNNNet, QAGNNSpec

__all__ = [
    "EgoAdapter",
    "QAExample",
    "QATrainConfig",
    "QATrainResult",
    "fit_fusion",
    "fused_recall_metrics",
    "recall_metrics",
    "train_qa_gnn",
]


@dataclass(frozen=True)
class QAExample:
    """One query: its candidates' ego-subgraphs, scores and labels (vectors by row)."""

    query_id: str
    group: str
    n_gold: int
    labels: np.ndarray  # (n,) 1.0 for gold
    query: np.ndarray  # (d,) float32
    object_rows: np.ndarray  # (n,) rows of the shared objects matrix
    edges: TypedEdges  # the candidate graph (stage 1)
    ego: EgoBatch  # every candidate's ego-subgraph (stage 2, inference)
    seeds: np.ndarray  # (n,)
    adjusted: np.ndarray  # (n,) Alg. 9
    support: np.ndarray  # (n,) Alg. 9's graph score (mean semantic edge weight)


@dataclass
class QATrainConfig(LoopConfig):
    """Loop settings (paper 6.3: AdamW, lr 5e-4, weight decay 1e-4, dropout 0.3) + stages."""

    lr: float = 5e-4
    weight_decay: float = 1e-4
    batch_size: int = 16  # queries per step: ~100 triplets, the paper's 128 in spirit
    epochs: int = 12
    patience: int = 3
    metric: str | None = "R@5"
    stage1_epochs: int = 6
    mask_fraction: float = 0.2
    pretrain: bool = True
    end_to_end: bool = False
    hard_negatives: int = 3
    random_negatives: int = 3
    margin: float = 1.0
    bce_weight: float = 1.0
    spec: QAGNNSpec = field(default_factory=QAGNNSpec)


@dataclass
class QATrainResult:
    model: QAGNNNet  # on ``device``, where it was trained
    fusion: FusionCoefficients
    stage1: dict[str, Any]
    stage2: dict[str, Any]
    seconds: float
    val_indices: list[int]
    device: str = "cpu"


def recall_metrics(
    examples: Sequence[Any], scores: Sequence[np.ndarray], ks: Sequence[int] = (5, 10)
) -> dict[str, float]:
    """Recall@K (the paper's metric: share of gold found in the top K) and PR@K; gold outside
    the candidates counts as missed."""
    out: dict[str, list[float]] = {}
    for e, values in zip(examples, scores, strict=True):
        order = np.lexsort((np.arange(len(values)), -np.asarray(values)))
        for k in ks:
            found = float(e.labels[order[:k]].sum())
            out.setdefault(f"R@{k}", []).append(found / e.n_gold)
            out.setdefault(f"PR@{k}", []).append(float(found >= e.n_gold))
    return {key: float(np.mean(v)) if v else math.nan for key, v in out.items()}


# -- stage 1: masked link reconstruction ------------------------------------------------------
@dataclass(frozen=True)
class _LinkExample:
    group: str
    labels: np.ndarray  # (P,) 1 for a hidden edge, 0 for a sampled non-edge
    n_gold: int
    source: QAExample
    keep: np.ndarray  # (E,) bool: edges left for message passing
    pairs: np.ndarray  # (2, P)


def _link_examples(
    examples: Sequence[QAExample], mask_fraction: float, seed: int
) -> list[_LinkExample]:
    rng = np.random.default_rng(seed)
    out = []
    for e in examples:
        n, n_edges = e.edges.n, e.edges.src.size
        hidden = rng.random(n_edges) < mask_fraction
        if n < 3 or not hidden.any():
            continue
        pos = np.stack([e.edges.src[hidden], e.edges.dst[hidden]])
        existing = set((e.edges.src * n + e.edges.dst).tolist())
        draws = rng.integers(0, n, size=(2, 4 * pos.shape[1]))
        ok = (draws[0] != draws[1]) & ~np.isin(draws[0] * n + draws[1], list(existing))
        neg = draws[:, ok][:, : pos.shape[1]]
        pairs = np.concatenate([pos, neg], axis=1)
        labels = np.concatenate([np.ones(pos.shape[1]), np.zeros(neg.shape[1])])
        out.append(
            _LinkExample(e.group, labels.astype(np.float32), int(pos.shape[1]), e, ~hidden, pairs)
        )
    return out


class _LinkAdapter:
    """Stage 1 batches: the candidate graphs less their hidden edges, and the pairs to score."""

    def __init__(self, objects: np.ndarray) -> None:
        self.tables = DeviceTables(objects)

    def collate(self, items: Sequence[_LinkExample], device: str) -> Any:
        sizes = [it.source.edges.n for it in items]
        offsets = np.cumsum([0, *sizes])
        rows = np.concatenate([it.source.object_rows for it in items])
        src = np.concatenate(
            [it.source.edges.src[it.keep] + offsets[k] for k, it in enumerate(items)]
        )
        dst = np.concatenate(
            [it.source.edges.dst[it.keep] + offsets[k] for k, it in enumerate(items)]
        )
        kind = np.concatenate([it.source.edges.type[it.keep] for it in items])
        weight = np.concatenate([it.source.edges.weight[it.keep] for it in items])
        pairs = np.concatenate([it.pairs + offsets[k] for k, it in enumerate(items)], axis=1)
        arrays = (rows, np.stack([src, dst]), kind, weight.astype(np.float32), pairs)
        return (*self.tables.on(device), *(to_device(a, device) for a in arrays))

    def forward(self, model: QAGNNNet, batch: Any) -> Any:
        objects, rows, edge_index, kind, weight, pairs = batch
        h = model.encoder(objects[rows], edge_index, kind, weight)
        return model.link_logits(h, pairs)


def _auc(examples: Sequence[_LinkExample], scores: Sequence[np.ndarray]) -> dict[str, float]:
    labels = np.concatenate([e.labels for e in examples])
    values = np.concatenate(scores)
    ranks = np.argsort(np.argsort(values)) + 1.0
    n_pos, n_neg = labels.sum(), labels.size - labels.sum()
    if n_pos == 0 or n_neg == 0:
        return {"link_auc": math.nan}
    return {
        "link_auc": float((ranks[labels > 0].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
    }


def _bce_loss(logits: Any, items: Sequence[Any], device: str) -> Any:
    import torch.nn.functional as F

    labels = to_device(np.concatenate([it.labels for it in items]).astype(np.float32), device)
    return F.binary_cross_entropy_with_logits(logits, labels)


# -- stage 2: pooling + fusion + head on triplets ---------------------------------------------
class EgoAdapter:
    """Stage 2 batches: every candidate's ego-subgraph, its query and its centre."""

    def __init__(self, objects: np.ndarray, frozen_encoder: bool) -> None:
        self.tables = DeviceTables(np.asarray(objects, dtype=np.float32))
        self.frozen = frozen_encoder

    def collate(self, items: Sequence[QAExample], device: str) -> Any:
        node_offsets = np.cumsum([0, *[e.ego.n_nodes for e in items]])
        graph_offsets = np.cumsum([0, *[e.ego.n_graphs for e in items]])
        rows = np.concatenate([e.object_rows[e.ego.node] for e in items])
        edge_index = np.concatenate(
            [e.ego.edge_index + node_offsets[k] for k, e in enumerate(items)], axis=1
        )
        kind = np.concatenate([e.ego.edge_type for e in items])
        weight = np.concatenate([e.ego.edge_weight for e in items]).astype(np.float32)
        batch = np.concatenate([e.ego.batch + graph_offsets[k] for k, e in enumerate(items)])
        query = np.concatenate(
            [np.repeat(e.query[None, :], e.ego.n_graphs, axis=0) for e in items]
        ).astype(np.float32)
        centre = np.concatenate([e.ego.centre + node_offsets[k] for k, e in enumerate(items)])
        arrays = (rows, edge_index, kind, weight, batch, query, centre)
        return (*self.tables.on(device), *(to_device(a, device) for a in arrays))

    def forward(self, model: QAGNNNet, batch: Any) -> Any:
        import torch

        objects, rows, edge_index, kind, weight, graph, query, centre = batch
        if self.frozen:
            model.encoder.eval()
            with torch.no_grad():
                h = model.encoder(objects[rows], edge_index, kind, weight)
        else:
            h = model.encoder(objects[rows], edge_index, kind, weight)
        return model.score(h, graph, query, centre)


def _hard_negatives(e: QAExample, m: int) -> np.ndarray:
    order = np.lexsort((np.arange(e.seeds.size), -e.seeds))
    return np.asarray([i for i in order if e.labels[i] == 0][:m], dtype=np.int64)


def _negatives(e: QAExample, config: QATrainConfig, rng: np.random.Generator) -> np.ndarray:
    """The ``hard_negatives`` best non-gold candidates by retriever score, plus
    ``random_negatives`` others drawn afresh at every step: with hard negatives alone the head
    never sees the easy candidates further down the list and ranks them anywhere."""
    hard = _hard_negatives(e, config.hard_negatives)
    rest = np.setdiff1d(np.flatnonzero(e.labels == 0), hard)
    if config.random_negatives and rest.size:
        extra = rng.choice(rest, size=min(config.random_negatives, rest.size), replace=False)
        hard = np.concatenate([hard, extra])
    return hard


def _triplet_loss(config: QATrainConfig) -> Any:
    rng = np.random.default_rng(config.seed)

    def loss(logits: Any, items: Sequence[QAExample], device: str) -> Any:
        import torch
        import torch.nn.functional as F

        offsets = np.cumsum([0, *[len(e.labels) for e in items]])
        anchors, negatives = [], []
        for k, e in enumerate(items):
            pos = np.flatnonzero(e.labels > 0)
            neg = _negatives(e, config, rng)
            if pos.size and neg.size:
                grid = np.stack(np.meshgrid(pos, neg, indexing="ij")).reshape(2, -1)
                anchors.append(grid[0] + offsets[k])
                negatives.append(grid[1] + offsets[k])
        if not anchors:
            return logits.sum() * 0.0
        pos, neg = np.concatenate(anchors), np.concatenate(negatives)
        p, n = to_device(pos, device), to_device(neg, device)
        triplet = F.relu(config.margin - (logits[p] - logits[n])).mean()
        gold, other = np.unique(pos), np.unique(neg)  # on the host: no device sync
        chosen = to_device(np.concatenate([gold, other]), device)
        labels = torch.cat(
            [torch.ones(gold.size, device=device), torch.zeros(other.size, device=device)]
        )
        bce = F.binary_cross_entropy_with_logits(logits[chosen], labels)
        return triplet + config.bce_weight * bce

    return loss


# -- score fusion (Alg. 6) --------------------------------------------------------------------
def fit_fusion(
    examples: Sequence[QAExample],
    gnn_scores: Sequence[np.ndarray],
    l2: float = 1e-2,
    iterations: int = 50,
) -> FusionCoefficients:
    """:func:`fit_logistic` over the examples' candidates' fusion features: label 1 for gold."""
    x = np.concatenate(
        [fusion_features(e.seeds, e.adjusted, g) for e, g in zip(examples, gnn_scores, strict=True)]
    )
    y = np.concatenate([e.labels for e in examples])
    coef, intercept = fit_logistic(x, y, l2, iterations)
    return FusionCoefficients(tuple(float(b) for b in coef), intercept)


def fused_recall_metrics(
    examples: Sequence[QAExample], gnn_scores: Sequence[np.ndarray]
) -> dict[str, float]:
    """:func:`recall_metrics` of the *deployed* output: the fusion fitted on these examples
    (as training does after the last epoch) applied to their GNN scores. Selecting epochs on it
    keeps the epoch whose fused ranking is best, not the one whose raw GNN logit is; an epoch
    whose logit adds nothing scores what the fusion of retriever and adjusted scores alone does."""
    fusion = fit_fusion(examples, gnn_scores)
    fused = [
        fusion.logits(e.seeds, e.adjusted, g) for e, g in zip(examples, gnn_scores, strict=True)
    ]
    return recall_metrics(examples, fused)


# -- the whole recipe -------------------------------------------------------------------------
def train_qa_gnn(
    examples: Sequence[QAExample],
    objects: np.ndarray,
    config: QATrainConfig,
    log: Log | None = None,
) -> QATrainResult:
    """Stage 1 (unless ``pretrain=False``), stage 2, then the fusion regression; the model
    stays on the device it was trained on (``result.device``)."""
    started = time.perf_counter()
    split = split_examples(examples, config.val_fraction, config.seed)
    objects = np.asarray(objects, dtype=np.float32)
    seed_everything(config.seed)  # the initial weights follow the seed, not earlier runs
    model = QAGNNNet(config.spec)
    stage1: dict[str, Any] = {"skipped": True}
    if config.pretrain:
        links = _link_examples(examples, config.mask_fraction, config.seed)
        index = {id(link.source): i for i, link in enumerate(links)}
        link_split = (
            [index[id(examples[i])] for i in split[0] if id(examples[i]) in index],
            [index[id(examples[i])] for i in split[1] if id(examples[i]) in index],
        )
        first = replace(config, epochs=config.stage1_epochs, metric="link_auc", loss="bce")
        result = fit(
            lambda: model,
            _LinkAdapter(objects),
            links,
            first,
            metric=_auc,
            split=link_split,
            log=log,
            loss_fn=_bce_loss,
        )
        stage1 = {
            "epochs": result.best_epoch,
            "seconds": round(result.seconds, 1),
            "val_link_auc": result.best_metrics.get("link_auc"),
        }
    frozen = config.pretrain and not config.end_to_end
    for parameter in model.encoder.parameters():
        parameter.requires_grad_(not frozen)
    adapter = EgoAdapter(objects, frozen)
    second = fit(
        lambda: model,
        adapter,
        examples,
        config,
        metric=fused_recall_metrics,
        split=split,
        log=log,
        loss_fn=_triplet_loss(config),
    )
    for parameter in model.encoder.parameters():
        parameter.requires_grad_(True)
    val = [examples[i] for i in split[1]]
    gnn = predict(model, adapter, val, second.device)
    fusion = fit_fusion(val, gnn)
    stage2 = {
        "epochs": second.best_epoch,
        "seconds": round(second.seconds, 1),
        "val": second.best_metrics,
        "frozen_encoder": frozen,
    }
    seconds = time.perf_counter() - started
    return QATrainResult(model, fusion, stage1, stage2, seconds, list(split[1]), second.device)


def make_config(
    result: QATrainResult,
    spec: QAGNNSpec,
    embedding_model: str,
    adjust_alpha: float,
    training: dict[str, Any],
) -> QAGNNConfig:
    """The checkpoint config for a trained model."""
    return QAGNNConfig(
        spec,
        embedding_model,
        spec.embedding_dim,
        result.fusion,
        adjust_alpha,
        training={
            **training,
            "stage1": result.stage1,
            "stage2": result.stage2,
            "seconds": round(result.seconds, 1),
        },
    )
