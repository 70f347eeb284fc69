"""The query-aware GNN's graph side, numpy only: typed edges, ego-subgraphs, batched.

* **Typed edges** (paper Alg. 1): ``sequential`` (the ``contextual`` kind: chunk adjacency,
  LlamaIndex PREVIOUS/NEXT), ``semantic`` (:meth:`SemanticKNN.paper`: directed top-5,
  cosine >= 0.6, weight = cosine), ``other`` (every other proximity kind). A pair linked by two
  kinds keeps two edges, as in the paper's MultiDiGraph. When the candidate graph has no
  semantic edges they are computed from the candidates' embeddings (:func:`with_semantic`), so
  ``ranker="qa-gnn"`` needs no proximity configured for them.
* **Ego-subgraphs** (paper 3.5 and 4.1): for each candidate, the candidates within ``depth`` hops
  (edges followed in either direction) and the edges among them. ``threshold`` turns this into
  the paper's query-aware BFS (Alg. 8): a neighbour is entered only when its cosine with the
  query exceeds it. Unlike Alg. 5 an ego-subgraph without edges is kept (one node): every
  candidate needs a score.

All ego-subgraphs of a query come out as one disjoint batch, built with sparse products (no
per-candidate Python loop). Their total size can grow with the square of the candidates (a hub,
or depth 2 on a dense graph), so every product is sized before it is computed and refused past
``max_entries`` (:data:`DEFAULT_MAX_EGO_ENTRIES`) with an :class:`~grapher_core.errors.InputError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from grapher_core.candidates import Candidate
from grapher_core.edges.graph import CandidateGraph
from grapher_core.edges.semantic import SemanticKNN
from grapher_core.errors import InputError

__all__ = [
    "DEFAULT_MAX_EGO_ENTRIES",
    "EDGE_TYPES",
    "EgoBatch",
    "TypedEdges",
    "ego_batch",
    "ego_members",
    "fit_logistic",
    "typed_edges",
    "with_semantic",
]

EDGE_TYPES: tuple[str, ...] = ("sequential", "semantic", "other")
#: Most entries (ego members, or edge-ego pairs) one query's ego-subgraphs may allocate, each
#: product's size bounded before it is computed (about 16 bytes an entry). ``None`` lifts it.
DEFAULT_MAX_EGO_ENTRIES = 10_000_000
_KIND_TO_TYPE = {"contextual": 0, "sequential": 0, "semantic": 1}


@dataclass(frozen=True)
class TypedEdges:
    """Directed typed edges ``src -> dst`` among ``n`` candidates."""

    n: int
    src: np.ndarray  # (E,) int64
    dst: np.ndarray  # (E,) int64
    weight: np.ndarray  # (E,) float32
    type: np.ndarray  # (E,) int64, index into EDGE_TYPES


def with_semantic(
    graph: CandidateGraph, candidates: Sequence[Candidate], knn: SemanticKNN | None = None
) -> CandidateGraph:
    """``graph`` plus the paper's semantic edges when it has none (needs embeddings)."""
    if "semantic" in graph.by_kind:
        return graph
    semantic = (knn or SemanticKNN.paper()).adjacency(candidates)
    by_kind = {**graph.by_kind, "semantic": semantic}
    return CandidateGraph(graph.ids, (graph.adjacency + semantic).tocsr(), by_kind)


def typed_edges(graph: CandidateGraph) -> TypedEdges:
    """One edge per (kind, i -> j) entry of the graph's per-kind matrices."""
    src, dst, weight, kinds = [], [], [], []
    for kind, matrix in graph.by_kind.items():
        coo = sp.coo_matrix(matrix)
        keep = (coo.data > 0) & (coo.row != coo.col)
        src.append(coo.row[keep].astype(np.int64))
        dst.append(coo.col[keep].astype(np.int64))
        weight.append(coo.data[keep].astype(np.float32))
        kinds.append(np.full(int(keep.sum()), _KIND_TO_TYPE.get(kind, 2), dtype=np.int64))
    if not src:
        empty = np.zeros(0, dtype=np.int64)
        return TypedEdges(graph.n, empty, empty, np.zeros(0, np.float32), empty)
    return TypedEdges(
        graph.n,
        np.concatenate(src),
        np.concatenate(dst),
        np.concatenate(weight),
        np.concatenate(kinds),
    )


def _check_entries(entries: int, max_entries: int | None, what: str) -> None:
    if max_entries is not None and entries > max_entries:
        raise InputError(
            f"qa-gnn: the ego-subgraphs' {what} would take {entries:,} entries, more than "
            f"max_entries={max_entries:,}; pass fewer candidates, a smaller ego_depth, a "
            "sparser graph, or a larger max_entries (None: no bound; docs/reliability.md)"
        )


def ego_members(
    edges: TypedEdges,
    depth: int = 1,
    allowed: np.ndarray | None = None,
    max_entries: int | None = DEFAULT_MAX_EGO_ENTRIES,
) -> sp.csr_matrix:
    """``R[c, u] = 1`` when ``u`` is in candidate ``c``'s ego-subgraph.

    Breadth-first to ``depth`` hops over edges in either direction; with ``allowed`` (a boolean
    mask: the query-aware BFS of Alg. 8) only allowed nodes are entered. The centre is always in.
    """
    n = edges.n
    if depth < 0:
        raise InputError(f"ego depth must be >= 0, got {depth}")
    ones = np.ones(edges.src.size)
    step = sp.csr_matrix((ones, (edges.src, edges.dst)), shape=(n, n))
    step = ((step + step.T) > 0).astype(np.float64).tocsr()
    if allowed is not None:
        step = (step @ sp.diags(np.asarray(allowed, dtype=np.float64))).tocsr()
    reach = sp.identity(n, format="csr")
    frontier = reach
    step_sizes = np.diff(step.indptr).astype(np.float64)
    for _ in range(depth):
        # the product's size is at most the frontier's rows times their neighbours' degrees
        _check_entries(int((frontier @ step_sizes).sum()) + reach.nnz, max_entries, "members")
        frontier = ((frontier @ step) > 0).astype(np.float64)
        grown = ((reach + frontier) > 0).astype(np.float64).tocsr()
        if grown.nnz == reach.nnz:
            break
        frontier = (grown - reach).tocsr()
        reach = grown
    reach = sp.csr_matrix(reach)
    reach.sort_indices()
    return reach


@dataclass(frozen=True)
class EgoBatch:
    """All ego-subgraphs of one candidate set as one disjoint graph (PyG batch layout)."""

    node: np.ndarray  # (N,) candidate position of each ego node
    batch: np.ndarray  # (N,) which ego-subgraph (= the centre's candidate position)
    edge_index: np.ndarray  # (2, E) into the N ego nodes; row 0 = source
    edge_weight: np.ndarray  # (E,) float32
    edge_type: np.ndarray  # (E,) int64
    n_graphs: int
    centre: np.ndarray  # (n_graphs,) position of each ego-subgraph's centre among the N nodes

    @property
    def n_nodes(self) -> int:
        return int(self.node.size)


def ego_batch(
    edges: TypedEdges,
    depth: int = 1,
    allowed: np.ndarray | None = None,
    max_entries: int | None = DEFAULT_MAX_EGO_ENTRIES,
) -> EgoBatch:
    """Every candidate's ego-subgraph, with the induced typed edges, as one batch; refused
    before allocating when it would take more than ``max_entries`` entries."""
    n = edges.n
    reach = ego_members(edges, depth, allowed, max_entries)
    owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(reach.indptr))
    node = reach.indices.astype(np.int64)
    centre = np.flatnonzero(node == owner)
    if edges.src.size == 0 or n == 0:
        return EgoBatch(
            node,
            owner,
            np.zeros((2, 0), np.int64),
            np.zeros(0, np.float32),
            np.zeros(0, np.int64),
            n,
            centre,
        )
    # ego c holds edge e = (u, v) when both ends are in c: column-wise product of R.T rows
    members_of = reach.T.tocsr()  # row u: the egos that contain u
    egos_of = np.diff(members_of.indptr)
    _check_entries(int(egos_of[edges.src].sum() + egos_of[edges.dst].sum()), max_entries, "edges")
    both = members_of[edges.src].multiply(members_of[edges.dst]).tocsr()
    edge_id = np.repeat(np.arange(edges.src.size), np.diff(both.indptr))
    ego = both.indices.astype(np.int64)
    # position of (ego, u) in the flattened member list
    position = sp.csr_matrix(
        (np.arange(1, node.size + 1, dtype=np.float64), reach.indices, reach.indptr),
        shape=reach.shape,
    )
    src = np.asarray(position[ego, edges.src[edge_id]]).ravel().astype(np.int64) - 1
    dst = np.asarray(position[ego, edges.dst[edge_id]]).ravel().astype(np.int64) - 1
    return EgoBatch(
        node, owner, np.stack([src, dst]), edges.weight[edge_id], edges.type[edge_id], n, centre
    )


# -- score fusion (Alg. 6) --------------------------------------------------------------------
def fit_logistic(
    x: np.ndarray, y: np.ndarray, l2: float = 1e-2, iterations: int = 50
) -> tuple[np.ndarray, float]:
    """Coefficients and intercept of an L2-penalised logistic regression, by Newton's method:
    the small-data recipe of the score fusion, shared with the bench's position prior so the two
    differ in their features only. The intercept is not penalised."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.shape != (x.shape[0],) or x.shape[0] == 0:
        raise InputError(f"need an (n, k) design and n labels, got {x.shape} and {y.shape}")
    design = np.hstack([np.ones((x.shape[0], 1)), x])
    beta = np.zeros(design.shape[1])
    penalty = np.diag([0.0] + [l2] * x.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(design @ beta)))
        gradient = design.T @ (p - y) + penalty @ beta
        hessian = (design * (p * (1 - p))[:, None]).T @ design + penalty
        step = np.linalg.solve(hessian + 1e-9 * np.eye(beta.size), gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta[1:].copy(), float(beta[0])
