"""``GATRanker`` and ``MLPRanker``: the learned rankers behind ``ranker="gat"`` / ``"mlp"``.

Both implement the core ``Ranker`` protocol. With no arguments they load the checkpoint shipped
in the package (for the packaged MiniLM embedder: the GAT trained on BIRD train with rank seeds,
the MLP on spider_train with the retriever's scores; each checkpoint records which). Candidate
and query embeddings are taken from the candidates / the context when present; missing ones are
computed with the configured embedder (default: the packaged MiniLM), the query once per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.edges.graph import CandidateGraph
from grapher_core.embeddings import Embedder
from grapher_core.errors import ConfigError
from grapher_core.learned.gat.checkpoint import (
    check_embeddings,
    default_checkpoint,
    load_checkpoint,
)
from grapher_core.learned.gat.features import graph_arrays
from grapher_core.learned.gat.model import InferencePlan
from grapher_core.learned.inputs import (
    check_rank_inputs,
    default_embedder_checked,
    object_vectors,
    query_vector,
)
from grapher_core.ranking.base import RankContext
from grapher_core.utils.callsite import warn_once
from grapher_core.utils.threads import torch_threads

__all__ = ["SHIPPED_EDGE_KINDS", "GATRanker", "LearnedRanker", "MLPRanker"]

SHIPPED_EDGE_KINDS: frozenset[str] = frozenset({"structural"})
"""The edge kinds the shipped checkpoints were trained on: Spider tables, foreign keys only."""


class LearnedRanker:
    """A trained :class:`~grapher_core.learned.gat.model.GraphERNet` as a ``Ranker``.

    ``checkpoint``: a checkpoint stem or file (default: the shipped one for this architecture).
    ``alpha``: GCS alpha for the GCS-score feature (default: the one it was trained with).
    ``embedder``: computes embeddings the candidates or the query lack (default: packaged
    MiniLM); it must be the model the checkpoint was trained on. ``device``: "cpu" (default),
    "cuda", ... ``threads``: torch CPU threads for the forward pass (default 1: a 200-node
    forward is too small to gain from more, and on a busy CPU OpenMP threads waiting for each
    other made it 20x slower); set for the call and restored after it (torch's setting is
    process-wide), ``None`` leaves it alone.
    """

    needs_embeddings: ClassVar[bool] = True  # query and object vectors are model inputs

    architecture: ClassVar[str] = "gat"

    def __init__(
        self,
        checkpoint: str | Path | None = None,
        *,
        alpha: float | None = None,
        embedder: Embedder | None = None,
        device: str = "cpu",
        threads: int | None = 1,
    ) -> None:
        path = default_checkpoint(self.architecture) if checkpoint is None else checkpoint
        self.shipped = checkpoint is None
        self.model, self.config = load_checkpoint(path, device)
        self.model.eval()
        self._plan = InferencePlan(self.model)
        if self.config.model.architecture != self.architecture:
            raise ConfigError(
                f"{path} holds a {self.config.model.architecture!r} model; load it with "
                f"ranker={self.config.model.architecture!r}"
            )
        if alpha is not None and not 0.0 < float(alpha) < 1.0:
            raise ConfigError(f"alpha must be in (0, 1), got {alpha!r}")
        self.alpha = self.config.alpha if alpha is None else float(alpha)
        if embedder is not None:
            check_embeddings(
                self.config, self.config.embedding_dim, getattr(embedder, "name", None)
            )
        self._embedder = embedder
        self.device = device
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ConfigError(f"threads must be a positive integer or None, got {threads!r}")
        self.threads = threads

    @property
    def name(self) -> str:
        return self.architecture

    @property
    def reads_scores(self) -> bool:
        """Whether the seeds are read as retriever scores: a checkpoint trained on scores reads
        them, one trained on ``1/rank`` gets rank seeds whatever the pool carries."""
        return self.config.seeds == "score"

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            dim = self.config.embedding_dim
            self._embedder = default_embedder_checked(
                lambda name: check_embeddings(self.config, dim, name)
            )
        return self._embedder

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        """One score (a logit: higher = more relevant) per candidate, in their order."""

        n = check_rank_inputs(graph, seeds, context)
        if n == 0:
            return np.zeros(0)
        if self.shipped:
            self._say_unseen_kinds(graph)
        query = self._query_vector(context)
        objects = self._object_vectors(context.candidates)
        arrays = graph_arrays(graph, seeds, self.alpha)
        with torch_threads(self.threads, self.device):
            return self._forward(
                arrays.scalars, objects, query, arrays.edge_index, arrays.edge_attr
            )

    def _say_unseen_kinds(self, graph: CandidateGraph) -> None:
        """Once per edge-kind set: the shipped checkpoint never saw these edges, and on them it
        is not the ranker to trust without measuring."""
        unseen = sorted(
            kind
            for kind, matrix in graph.by_kind.items()
            if kind not in SHIPPED_EDGE_KINDS and matrix.nnz
        )
        if unseen:
            warn_once(
                f"{self.architecture}: the shipped checkpoint was trained on tables linked by "
                f"foreign keys; these candidates are linked by {', '.join(unseen)} edges it "
                "never saw. There it is below GCS on title mentions (hotpotqa PR@5 by 10 points) "
                "and below the retriever on chunk adjacency (docs/gat.md, 'Beyond tables'); "
                "train a checkpoint on your own data (grapher-bench train) or use ranker='gcs'",
                logger=__name__,
            )

    def _forward(
        self,
        scalars: np.ndarray,
        objects: np.ndarray,
        query: np.ndarray,
        edge_index: np.ndarray,
        edge_attr: np.ndarray,
    ) -> np.ndarray:
        import torch

        device = self.device
        with torch.inference_mode():
            logits = self._plan(
                torch.from_numpy(scalars).to(device),
                torch.from_numpy(objects).to(device),
                torch.from_numpy(query).to(device),
                torch.from_numpy(edge_index).to(device),
                torch.from_numpy(edge_attr).to(device),
            )
        return logits.detach().cpu().numpy().astype(np.float64)

    def _check_dimension(self, size: int) -> None:
        check_embeddings(self.config, size)

    def _query_vector(self, context: RankContext) -> np.ndarray:
        return query_vector(context, lambda: self.embedder, self._check_dimension, self.name)

    def _object_vectors(self, candidates: Sequence[Candidate]) -> np.ndarray:
        return object_vectors(
            candidates, self.config.embedding_dim, lambda: self.embedder, self._check_dimension
        )

    def describe(self) -> dict[str, Any]:
        """The checkpoint's config (what it was trained on, its validation metrics)."""
        return self.config.to_json()


class GATRanker(LearnedRanker):
    """GraphER-GAT: GATv2 message passing over the candidate graph (paper 2.2)."""

    architecture: ClassVar[str] = "gat"


class MLPRanker(LearnedRanker):
    """GraphER-MLP: the GAT without message passing (paper Table 4 ablation)."""

    architecture: ClassVar[str] = "mlp"
