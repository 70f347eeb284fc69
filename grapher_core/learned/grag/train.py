"""Training G-RAG on the shared loop (:mod:`grapher_core.learned.loop`): examples, adapter,
the paper's selection metric (validation MRR), and one call that trains a model.

An example is one question: its candidates' node features (already encoded: the encoder is
frozen, as in the paper's GCN-on-embeddings setting), the question vector, the edges with their
two features, and the labels. Losses come from the shared loop: ``listwise`` (eq. 9, G-RAG),
``pairwise`` (eq. 10, G-RAG-RL) or ``bce``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grapher_core.errors import InputError
from grapher_core.learned.grag.model import GRAGNet, GRAGSpec
from grapher_core.learned.inputs import to_device
from grapher_core.learned.loop import FitResult, Log, LoopConfig, fit

__all__ = ["GRAGAdapter", "GRAGExample", "grag_metrics", "train_grag"]


@dataclass(frozen=True)
class GRAGExample:
    query_id: str
    group: str
    labels: np.ndarray  # (n,) 1.0 for positives
    n_gold: int  # positives of the question, including those outside the candidates
    x: np.ndarray  # (n, d) float32 node features
    query: np.ndarray  # (d,) float32
    edge_index: np.ndarray  # (2, E) int64
    edge_weight: np.ndarray  # (E, 2) float32


class GRAGAdapter:
    """Concatenates graphs (edge indices offset) and scores them with :class:`GRAGNet`."""

    def collate(self, examples: Sequence[GRAGExample], device: str) -> dict[str, Any]:
        sizes = [e.x.shape[0] for e in examples]
        offsets = np.cumsum([0, *sizes])[:-1]
        edge_index = np.concatenate(
            [e.edge_index + o for e, o in zip(examples, offsets, strict=True)], axis=1
        )
        arrays = {
            "x": np.concatenate([e.x for e in examples]),
            "edge_index": edge_index.astype(np.int64),
            "edge_weight": np.concatenate([e.edge_weight for e in examples]).astype(np.float32),
            "queries": np.stack([e.query for e in examples]),
            "query_index": np.repeat(np.arange(len(examples)), sizes),
        }
        return {name: to_device(array, device) for name, array in arrays.items()}

    def forward(self, model: GRAGNet, batch: dict[str, Any]) -> Any:
        return model(
            batch["x"],
            batch["edge_index"],
            batch["edge_weight"],
            batch["queries"],
            batch["query_index"],
        )


def grag_metrics(examples: Sequence[GRAGExample], scores: Sequence[np.ndarray]) -> dict[str, float]:
    """G-RAG's MRR and MHits@10 (means over each question's positives; positives outside the
    candidates count 0), ties broken by candidate order."""
    mrr: list[float] = []
    hits: list[float] = []
    for e, values in zip(examples, scores, strict=True):
        if e.n_gold == 0:
            continue
        order = np.lexsort((np.arange(len(values)), -np.asarray(values)))
        ranks = np.empty(len(values), dtype=np.int64)
        ranks[order] = np.arange(1, len(values) + 1)
        positive = ranks[e.labels > 0]
        mrr.append(float((1.0 / positive).sum()) / e.n_gold)
        hits.append(float((positive <= 10).sum()) / e.n_gold)
    return {
        "MRR": float(np.mean(mrr)) if mrr else float("nan"),
        "MHits@10": float(np.mean(hits)) if hits else float("nan"),
    }


def train_grag(
    examples: Sequence[GRAGExample],
    spec: GRAGSpec,
    config: LoopConfig,
    *,
    split: tuple[list[int], list[int]] | None = None,
    log: Log | None = None,
) -> FitResult:
    """Train a :class:`GRAGNet`; early stopping and model selection on validation MRR (the
    paper picks hyper-parameters by MRR) unless ``config.metric`` names another key."""
    if not examples:
        raise InputError("no training examples")
    dim = examples[0].x.shape[1]
    if dim != spec.embedding_dim:
        raise InputError(
            f"examples have {dim}-d features but spec.embedding_dim is {spec.embedding_dim}"
        )
    if config.metric is None:
        config = LoopConfig(**{**config.__dict__, "metric": "MRR"})
    return fit(
        lambda: GRAGNet(spec),
        GRAGAdapter(),
        examples,
        config,
        metric=grag_metrics,
        split=split,
        log=log,
    )
