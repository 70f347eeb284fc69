"""``QAGNNRanker``: the query-aware GNN behind ``ranker="qa-gnn"``.

Per query: the candidate graph gets the paper's semantic edges when it has none (from the
candidates' embeddings), every candidate's ego-subgraph is scored by the network
(:class:`~grapher_core.learned.qa_gnn.model.QAGNNNet`), and by default the result is the
paper's score
fusion (Alg. 6): a logistic regression over the min-max scaled retriever score, adjusted score
(Alg. 9) and GNN score, with the coefficients stored in the checkpoint. ``output="gnn"`` returns
the GNN's logits alone, ``"adjusted"`` the score adjustment alone.

With no arguments it loads the checkpoint shipped in the package (trained on the sentence-chunk
multi-hop sets for the packaged MiniLM embedder; docs/qa_gnn.md). Missing candidate / query
embeddings are computed with the configured embedder, which must be the checkpoint's model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.edges.graph import CandidateGraph
from grapher_core.edges.semantic import SemanticKNN
from grapher_core.embeddings import Embedder
from grapher_core.errors import InputError, StateError
from grapher_core.learned.caveats import EXPLAINED_BY_POSITION, RankerUnfitWarning
from grapher_core.learned.qa_gnn.checkpoint import MAX_EGO_DEPTH, QA_GNN, QAGNNConfig
from grapher_core.learned.qa_gnn.features import (
    DEFAULT_MAX_EGO_ENTRIES,
    EgoBatch,
    TypedEdges,
    ego_batch,
    typed_edges,
    with_semantic,
)
from grapher_core.learned.qa_gnn.model import QAGNNNet
from grapher_core.learned.ranker import FamilyRanker, OnDevice, check_option
from grapher_core.ranking.base import RankContext
from grapher_core.ranking.score_adjust import semantic_support

__all__ = ["OUTPUTS", "QAGNNInputs", "QAGNNRanker", "fused_scores", "prepare_inputs"]

OUTPUTS: tuple[str, ...] = ("fusion", "gnn", "adjusted")


@dataclass(frozen=True)
class QAGNNInputs:
    """One query's network inputs, numpy only (also what training examples are made of)."""

    ego: EgoBatch
    seeds: np.ndarray  # (n,) the reranker's seeds
    adjusted: np.ndarray  # (n,) Alg. 9 score
    support: np.ndarray  # (n,) mean semantic edge weight (Alg. 9's graph score)
    edges: TypedEdges  # the candidate graph with its semantic edges
    graph: CandidateGraph  # the same, as the core's graph


def prepare_inputs(
    graph: CandidateGraph,
    seeds: np.ndarray,
    candidates: Sequence[Candidate],
    config: QAGNNConfig,
    query: np.ndarray | None = None,
    objects: np.ndarray | None = None,
    max_entries: int | None = DEFAULT_MAX_EGO_ENTRIES,
) -> QAGNNInputs:
    """Semantic edges if missing, ego-subgraphs (query-aware BFS when configured), Alg. 9;
    ``max_entries`` bounds the ego-subgraphs (:func:`ego_batch`)."""
    knn = SemanticKNN.paper(k=config.knn_k, threshold=config.knn_threshold)
    full = with_semantic(graph, candidates, knn)
    allowed = None
    if config.ego_query_threshold is not None:
        if query is None or objects is None:
            raise InputError("the query-aware ego-subgraph needs the query and object vectors")
        q = query / max(float(np.linalg.norm(query)), 1e-12)
        norms = np.maximum(np.linalg.norm(objects, axis=1), 1e-12)
        allowed = (objects @ q) / norms > config.ego_query_threshold
    edges = typed_edges(full)
    ego = ego_batch(edges, config.ego_depth, allowed, max_entries)
    s = np.asarray(seeds, dtype=np.float64)
    support = semantic_support(full.by_kind.get("semantic"), full.n)
    adjusted = config.adjust_alpha * s + (1.0 - config.adjust_alpha) * support
    return QAGNNInputs(ego, s, adjusted, support, edges, full)


def fused_scores(
    config: QAGNNConfig, seeds: np.ndarray, adjusted: np.ndarray, gnn: np.ndarray
) -> np.ndarray:
    """Alg. 6: ``sigmoid(b0 + Σ b_i minmax(feature_i))`` within one query."""
    return 1.0 / (1.0 + np.exp(-config.fusion.logits(seeds, adjusted, gnn)))


class QAGNNRanker(FamilyRanker[QAGNNNet, QAGNNConfig]):
    """The query-aware GNN as a core ``Ranker`` (see the module docstring).

    ``checkpoint``: a stem or file (default: the shipped one). ``output``: ``"fusion"``
    (default), ``"gnn"`` or ``"adjusted"``. ``ego_depth`` / ``ego_query_threshold`` override the
    checkpoint's ego-subgraph settings (``ego_query_threshold`` = the cosine a neighbour needs
    with the query to be entered: Alg. 8). ``embedder``, ``device`` and ``threads`` as for
    every learned ranker. ``max_entries``: the most entries one query's ego-subgraphs may take
    (:data:`~grapher_core.learned.qa_gnn.features.DEFAULT_MAX_EGO_ENTRIES`; ``None``: no
    bound), checked before each is allocated.
    """

    name: ClassVar[str] = "qa-gnn"
    caveat: ClassVar[str | None] = EXPLAINED_BY_POSITION
    caveat_category: ClassVar[type[Warning]] = RankerUnfitWarning
    reads_scores: ClassVar[bool] = True  # the fusion weighs the retriever's score

    def __init__(
        self,
        checkpoint: str | Path | None = None,
        *,
        output: str = "fusion",
        ego_depth: int | None = None,
        ego_query_threshold: float | None = None,
        embedder: Embedder | None = None,
        device: str = "cpu",
        threads: int | None = 1,
        max_entries: int | None = DEFAULT_MAX_EGO_ENTRIES,
    ) -> None:
        owner = type(self).__name__
        check_option(owner, "max_entries", max_entries, low=1)
        overrides: dict[str, Any] = {
            "ego_depth": check_option(owner, "ego_depth", ego_depth, low=0, high=MAX_EGO_DEPTH),
            "ego_query_threshold": check_option(
                owner, "ego_query_threshold", ego_query_threshold, "float", -1.0, 1.0
            ),
        }
        check_option(owner, "output", output, "str", choices=OUTPUTS, optional=False)
        super().__init__(QA_GNN, checkpoint, embedder=embedder, device=device, threads=threads)
        self.config = replace(self.config, **{k: v for k, v in overrides.items() if v is not None})
        self.output = output
        self.max_entries = max_entries

    def score(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        """One score per candidate (fusion: a probability; gnn: a logit)."""
        objects = self.object_vectors(context.candidates)
        candidates = [
            c
            if c.embedding is not None
            else Candidate(c.id, c.text, c.score, c.metadata, objects[i])
            for i, c in enumerate(context.candidates)
        ]
        query = self.query_vector(context) if self.output != "adjusted" else None
        inputs = prepare_inputs(
            graph, seeds, candidates, self.config, query, objects, self.max_entries
        )
        if self.output == "adjusted":
            return inputs.adjusted
        if query is None:  # only the 'adjusted' output runs without a query vector
            raise StateError("qa-gnn: no query vector for the GNN output")
        gnn = self.gnn_logits(inputs.ego, objects, query)
        if self.output == "gnn":
            return gnn
        return fused_scores(self.config, inputs.seeds, inputs.adjusted, gnn)

    def gnn_logits(self, ego: EgoBatch, objects: np.ndarray, query: np.ndarray) -> np.ndarray:
        """The network's logit for every ego-subgraph of one query."""

        def run(tensor: OnDevice) -> Any:
            q = tensor(query.astype(np.float32)).reshape(1, -1).expand(ego.n_graphs, -1)
            return self.model(
                tensor(objects[ego.node]),
                tensor(ego.edge_index),
                tensor(ego.edge_type),
                tensor(ego.edge_weight),
                tensor(ego.batch),
                q,
                tensor(ego.centre),
            )

        return self.infer(run)
