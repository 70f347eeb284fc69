"""``GATRanker`` and ``MLPRanker``: the learned rankers behind ``ranker="gat"`` / ``"mlp"``.

Both implement the core ``Ranker`` protocol on the shared skeleton
(:class:`~grapher_core.learned.ranker.FamilyRanker`). With no arguments they load the
checkpoint shipped in the package (for the packaged MiniLM embedder: the GAT trained on BIRD
train with rank seeds, the MLP with the same recipe; each checkpoint records it). Candidate
and query embeddings are taken from the candidates / the context when present; missing ones
are computed with the configured embedder, the query once per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.edges.graph import CandidateGraph
from grapher_core.embeddings import Embedder
from grapher_core.errors import ConfigError
from grapher_core.learned.caveats import GAT_OFF_TABLES, MLP_ABLATION, RankerUnfitWarning
from grapher_core.learned.gat.checkpoint import GAT, CheckpointConfig
from grapher_core.learned.gat.features import graph_arrays
from grapher_core.learned.gat.model import GraphERNet, InferencePlan
from grapher_core.learned.graphed import check_host_edges
from grapher_core.learned.ranker import FamilyRanker, OnDevice, check_option
from grapher_core.ranking.base import RankContext
from grapher_core.utils.callsite import warn_once

__all__ = ["SHIPPED_EDGE_KINDS", "GATRanker", "LearnedRanker", "MLPRanker"]

SHIPPED_EDGE_KINDS: frozenset[str] = frozenset({"structural"})
"""The edge kinds the shipped checkpoints saw: BIRD tables' ``foreign_keys``, nothing else."""


class LearnedRanker(FamilyRanker[GraphERNet, CheckpointConfig]):
    """A trained :class:`~grapher_core.learned.gat.model.GraphERNet` as a ``Ranker``.

    ``alpha``: GCS alpha for the GCS-score feature (default: the one it was trained with);
    ``checkpoint``, ``embedder``, ``device`` and ``threads`` as for every learned ranker.
    """

    name: ClassVar[str] = "gat"

    def __init__(
        self,
        checkpoint: str | Path | None = None,
        *,
        alpha: float | None = None,
        embedder: Embedder | None = None,
        device: str = "cpu",
        threads: int | None = 1,
    ) -> None:
        check_option(type(self).__name__, "alpha", alpha, "float", 0.0, 1.0, open_bounds=True)
        self._alpha = None if alpha is None else float(alpha)
        self._inference: InferencePlan | None = None
        #: what it last said it does not fit (RankerUnfitWarning), kept: the warning is said
        #: once per process, an evaluation run later in it still reads this
        self.unfit: str | None = None
        super().__init__(
            GAT, checkpoint, variant=self.name, embedder=embedder, device=device, threads=threads
        )

    def _loaded(self, model: GraphERNet, config: CheckpointConfig) -> None:
        if config.model.architecture != self.name:
            raise ConfigError(
                f"{self.path} holds a {config.model.architecture!r} model; load it with "
                f"ranker={config.model.architecture!r}"
            )
        self._inference = InferencePlan(model)

    @property
    def alpha(self) -> float:
        """GCS alpha of the GCS-score feature: the one given, else the checkpoint's."""
        return float(self.config.alpha) if self._alpha is None else self._alpha

    @property
    def _plan(self) -> InferencePlan:
        self._load()
        assert self._inference is not None  # set by _loaded
        return self._inference

    @property
    def reads_scores(self) -> bool:
        """Whether the seeds are read as retriever scores: a checkpoint trained on scores reads
        them, one trained on ``1/rank`` gets rank seeds whatever the pool carries."""
        return self.config.seeds == "score"

    def score(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        """One logit (higher = more relevant) per candidate, in their order."""
        if self.shipped:
            self._say_unseen_kinds(graph, context.candidates)
        query = self.query_vector(context)
        objects = self.object_vectors(context.candidates)
        arrays = graph_arrays(graph, seeds, self.alpha)
        check_host_edges(arrays.edge_index, len(objects))  # on the host: no device sync

        def run(_: OnDevice) -> object:
            scalars, nodes, shared, edge_index, edge_attr = self.arrays_on_device(
                arrays.scalars, objects, query, arrays.edge_index, arrays.edge_attr
            )
            return self._plan.run(scalars, nodes, shared, edge_index, edge_attr, edges_checked=True)

        return self.infer(run)

    def _say_unseen_kinds(self, graph: CandidateGraph, candidates: Sequence[Candidate]) -> None:
        """Once per edge-kind set: the shipped checkpoint never saw these edges, and on them it
        is measured below GCS. Structural edges without any candidate's ``foreign_keys`` are
        hyperlinks or title mentions, which it never saw either."""
        unseen = [k for k, m in graph.by_kind.items() if k not in SHIPPED_EDGE_KINDS and m.nnz]
        links = graph.by_kind.get("structural")
        if (
            links is not None
            and links.nnz
            and not any(c.metadata.get("foreign_keys") for c in candidates)
        ):
            unseen.append("structural (links or title mentions, no foreign keys)")
        if unseen:
            self.unfit = (
                f"{self.name}: the shipped checkpoint was trained on tables linked by foreign "
                f"keys; these candidates are linked by {', '.join(sorted(unseen))} edges it "
                f"never saw. {GAT_OFF_TABLES}"
            )
            warn_once(self.unfit, RankerUnfitWarning, logger=__name__)


class GATRanker(LearnedRanker):
    """GraphER-GAT: GATv2 message passing over the candidate graph (paper 2.2)."""


class MLPRanker(LearnedRanker):
    """GraphER-MLP: the GAT without message passing (paper Table 4 ablation)."""

    name: ClassVar[str] = "mlp"
    caveat: ClassVar[str | None] = MLP_ABLATION
