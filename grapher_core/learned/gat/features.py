"""Node and edge features of the learned rankers, built with numpy only.

Per node (documented in docs/gat.md):

* ``gcs``: the GCS score of the node (paper 2.2), min-max scaled within the query, so a model
  trained on cosine seeds also reads BM25 or fused seeds;
* ``seed``: the seed score itself, min-max scaled within the query (the base retriever's
  opinion, which GCS has already blended with the neighbours');
* ``query``: the query embedding (the same for every node of a query);
* ``object``: the candidate's embedding.

The paper's input is concat(GCS score, query embedding, object embedding); ``seed`` is one
cheap addition. The network reads the embeddings through a factorised first layer (see
:mod:`grapher_core.learned.gat.model`), so they are passed separately instead of as one wide row.

Per edge ``j -> i`` (``A[i, j] > 0``: node ``i`` aggregates its neighbour ``j``): the edge
weight, a one-hot of the edge kinds present (structural, conceptual, contextual, semantic,
other), and a ``self`` flag for the self-loop every node gets, so attention can weigh "my own
features" against "my neighbours'" with learned, kind-aware coefficients.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grapher_core.edges.graph import CandidateGraph
from grapher_core.ranking.propagation import gcs_scores
from grapher_core.ranking.seeds import minmax

FEATURE_BLOCKS: tuple[str, ...] = ("gcs", "seed", "query", "object")
N_SCALARS = 2  # gcs, seed
EDGE_KINDS: tuple[str, ...] = ("structural", "conceptual", "contextual", "semantic")
"""The kinds with a column of their own in the edge features, in checkpoint order. A copy of
the kinds the library knows today (``grapher_core.edges.checks.EDGE_KINDS``), kept apart on
purpose: a kind the library adds later falls in the ``other`` column, where importing the
list would change the feature layout and refuse every trained checkpoint."""
EDGE_DIM = 1 + len(EDGE_KINDS) + 1 + 1  # weight, kinds, other, self
SEED_SCHEMES: tuple[str, ...] = ("score", "rank")
"""What a checkpoint's seed feature was trained on: the retriever's scores (``"score"``: the
ranker reads them when a pool has them) or ``1/rank`` (``"rank"``: the same seeds in both
wrappers, whatever the store's score scale)."""

__all__ = [
    "EDGE_DIM",
    "EDGE_KINDS",
    "FEATURE_BLOCKS",
    "SEED_SCHEMES",
    "GraphArrays",
    "edge_arrays",
    "graph_arrays",
    "scalar_features",
]


def scalar_features(graph: CandidateGraph, seeds: np.ndarray, alpha: float) -> np.ndarray:
    """``(n, 2)`` float32: min-max scaled GCS score and seed score per node."""
    seeds = np.asarray(seeds, dtype=np.float64)
    gcs = gcs_scores(graph.adjacency, seeds, alpha, factor=graph.adjacency_factor)
    return np.stack([minmax(gcs), minmax(seeds)], axis=1).astype(np.float32)


def edge_arrays(graph: CandidateGraph) -> tuple[np.ndarray, np.ndarray]:
    """``edge_index (2, E + n)`` int64 (row 0 = source j, row 1 = target i) and
    ``edge_attr (E + n, EDGE_DIM)`` float32, self-loops included (last ``n`` edges)."""
    n = graph.n
    adjacency = graph.adjacency
    # Read the csr arrays directly (no coo copy): rows repeated from indptr.
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(adjacency.indptr))
    cols = adjacency.indices.astype(np.int64)
    n_edges = rows.size
    attr = np.zeros((n_edges + n, EDGE_DIM), dtype=np.float32)
    attr[:n_edges, 0] = adjacency.data
    if n_edges:
        keys = None
        for kind, matrix in graph.by_kind.items():
            column = 1 + (EDGE_KINDS.index(kind) if kind in EDGE_KINDS else len(EDGE_KINDS))
            if matrix is adjacency:  # one kind: its edges are exactly the graph's
                flags = (adjacency.data != 0).astype(np.float32)
            else:
                if keys is None:
                    keys = rows * n + cols
                kind_rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(matrix.indptr))
                present = matrix.data != 0
                kind_keys = kind_rows[present] * n + matrix.indices[present]
                flags = np.isin(keys, kind_keys).astype(np.float32)
            np.maximum(attr[:n_edges, column], flags, out=attr[:n_edges, column])
    attr[n_edges:, 0] = 1.0
    attr[n_edges:, -1] = 1.0
    loops = np.arange(n, dtype=np.int64)
    edge_index = np.stack([np.concatenate([cols, loops]), np.concatenate([rows, loops])])
    return edge_index, attr


@dataclass(frozen=True)
class GraphArrays:
    """Everything the network needs about one query, except the embeddings themselves."""

    scalars: np.ndarray  # (n, 2) float32
    edge_index: np.ndarray  # (2, E) int64
    edge_attr: np.ndarray  # (E, EDGE_DIM) float32


def graph_arrays(graph: CandidateGraph, seeds: np.ndarray, alpha: float) -> GraphArrays:
    edge_index, edge_attr = edge_arrays(graph)
    return GraphArrays(scalar_features(graph, seeds, alpha), edge_index, edge_attr)
