"""G-RAG's inputs for one question: node texts (3.2.1) and normalised edge features (3.2.2).

Numpy and scipy only, shared by the ranker (query time) and the training tooling, so both
compute exactly the same features.

* Node text, ``text="concepts"``: ``document text + "\\n" + a_i`` where ``a_i`` is the concept
  text of :func:`grapher_core.enrich.concepts.path_text` over ``G_qp`` (eq. 2); ``"plain"``: the
  document text (eq. 1, the MLP/GCN baselines); ``"fast"``: no per-query encoding -- the cached
  document vector plus the mean of per-concept vectors along the paths (see the ranker).
* Edge features, ``graph="question"``: common nodes / common edges of ``G_qp_i`` and ``G_qp_j``
  (every pair shares the question's concepts: a complete graph); ``graph="documents"``: the
  same counts on the document graphs alone (pairs sharing no concept are not linked). Each of
  the two features is divided by its maximum over the question's edges, so both lie in (0, 1]
  whatever the passage length ("normalised on the first and second dimension respectively").

Bounded cost: the ranker never lists the edges. :func:`neighbour_weights` keeps them as the
candidate-concept incidence ``L`` with one weight per concept, ``W = L diag(w) L^T - diag``, so
the complete question graph costs memory linear in the candidates; only the normalising maxima
and (for an incomplete graph) the neighbour counts need a scan over pairs, done in bounded
blocks and refused past ``max_pairs`` (:data:`DEFAULT_MAX_SCAN`). :func:`edge_arrays` lists the
edges (training, small graphs) and refuses more than ``max_edges`` before allocating them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from grapher_core.enrich.concepts import (
    QUESTION_NODE,
    ConceptGraph,
    check_pair_budget,
    concept_incidence,
    concept_sets,
    question_graph,
    shortest_paths,
)
from grapher_core.errors import InputError

__all__ = [
    "DEFAULT_MAX_EDGES",
    "DEFAULT_MAX_SCAN",
    "GRAPH_MODES",
    "PATH_MODES",
    "TEXT_MODES",
    "EdgeArrays",
    "NeighbourWeights",
    "edge_arrays",
    "neighbour_weights",
    "node_texts",
    "path_concepts",
]

TEXT_MODES: tuple[str, ...] = ("concepts", "plain", "fast")
GRAPH_MODES: tuple[str, ...] = ("question", "documents")
#: which concepts of the paths make ``a_i``: ``"all"`` (the paper's) or ``"document"`` (the
#: question's own concepts left out: ~80% of ``a_i`` is otherwise the same question words for
#: every candidate, which pulls all node vectors towards the question; docs/grag.md)
PATH_MODES: tuple[str, ...] = ("all", "document")
CONCEPT_KINDS: tuple[str, str] = ("concept_nodes", "concept_edges")
#: Most edges :func:`edge_arrays` lists (a complete graph on 2,000 candidates); about 24 bytes an
#: edge, checked before the list is allocated. ``max_edges=None`` lifts it.
DEFAULT_MAX_EDGES = 4_000_000
#: Most candidate pairs, counted once per shared concept, :func:`neighbour_weights` visits to
#: find the normalising maxima (and, for an incomplete graph, the neighbour counts): about
#: 1.5e8 a second here, in blocks of bounded memory. ``max_pairs=None`` lifts it.
DEFAULT_MAX_SCAN = 100_000_000
#: Pairs per scan block: bounds the scan's working memory (~24 bytes a pair).
_BLOCK_WORK = 2_000_000


def path_concepts(question: ConceptGraph, document: ConceptGraph, paths: str = "all") -> list[str]:
    """The concepts of ``a_i`` in order (the ``question`` node itself included, as in the
    paper's example); ``paths="document"`` leaves out the question's own concepts."""
    if paths not in PATH_MODES:
        raise InputError(f"paths must be one of {PATH_MODES}, got {paths!r}")
    seen: dict[str, None] = {}
    for path in shortest_paths(question_graph(question, document), QUESTION_NODE):
        for concept in path:
            seen.setdefault(concept, None)
    if paths == "document":
        own = set(question.nodes) | {QUESTION_NODE}
        return [c for c in seen if c not in own]
    return list(seen)


def node_texts(
    texts: Sequence[str],
    documents: Sequence[ConceptGraph],
    question: ConceptGraph,
    paths: str = "all",
) -> list[str]:
    """``concat(p_i, a_i)`` for every candidate (eq. 2)."""
    return [
        f"{text}\n{' '.join(path_concepts(question, doc, paths))}"
        for text, doc in zip(texts, documents, strict=True)
    ]


@dataclass(frozen=True)
class EdgeArrays:
    edge_index: np.ndarray  # (2, E) int64: source, target (both directions present)
    edge_weight: np.ndarray  # (E, 2) float32: normalised common nodes, common edges


@dataclass(frozen=True)
class NeighbourWeights:
    """G-RAG's edges for one question, without a row per edge.

    The weight of the message ``u -> v`` (the sum of its two normalised features) is
    ``W[v, u] = pairs[v, u] + sum_c incidence[v, c] * column_weight[c] * incidence[u, c]``
    for ``u != v``; ``degree[v]`` counts ``v``'s neighbours (the mean's denominator). The
    question graph is all ``incidence`` (a candidate holds a concept or concept pair), the
    proximities' graph all ``pairs``.
    """

    n: int
    degree: np.ndarray  # (n,) float64
    pairs: sp.csr_matrix | None = None  # (n, n), zero diagonal
    incidence: sp.csr_matrix | None = None  # (n, C) 0/1
    column_weight: np.ndarray | None = None  # (C,)
    node_columns: int = 0  # the incidence's first columns are concepts, the rest concept pairs

    @property
    def n_edges(self) -> int:
        return int(self.degree.sum())

    def mean(self, x: np.ndarray) -> np.ndarray:
        """``mean_u W[v, u] x_u`` per node ``v`` in float64 (the model computes the same in
        torch); zeros for a node without neighbours."""
        x = np.asarray(x, dtype=np.float64)
        out = np.zeros_like(x)
        if self.pairs is not None:
            out += self.pairs @ x
        if self.incidence is not None and self.column_weight is not None:
            shared = (self.incidence.T @ x) * self.column_weight[:, None]
            out += self.incidence @ shared - (self.incidence @ self.column_weight)[:, None] * x
        return out / np.maximum(self.degree, 1.0)[:, None]


def _normalised(matrix: sp.csr_matrix) -> sp.csr_matrix:
    out = sp.csr_matrix(matrix, dtype=np.float64)
    if out.nnz:
        top = float(out.data.max())
        if top > 0:
            out.data /= top
    return out


def _check_n(n: int, documents: Sequence[ConceptGraph] | None, graph: str) -> None:
    if graph not in GRAPH_MODES:
        raise InputError(f"graph must be one of {GRAPH_MODES}, got {graph!r}")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise InputError(f"n must be a non-negative number of candidates, got {n!r}")
    if documents is not None and len(documents) != n:
        raise InputError(f"need {n} document concept graphs to build G-RAG's edges")


def _from_kinds(graph: str, by_kind: Mapping[str, sp.csr_matrix] | None) -> bool:
    return graph == "documents" and by_kind is not None and all(k in by_kind for k in CONCEPT_KINDS)


def _kinds(by_kind: Mapping[str, sp.csr_matrix], n: int) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """The two proximity kinds, normalised, after checking they are ``n x n``."""
    out = []
    for kind in CONCEPT_KINDS:
        matrix = sp.csr_matrix(by_kind[kind])
        if matrix.shape != (n, n):
            raise InputError(f"proximity {kind!r} is {matrix.shape}, expected ({n}, {n})")
        out.append(_normalised(matrix))
    return out[0], out[1]


def neighbour_weights(
    n: int,
    documents: Sequence[ConceptGraph] | None = None,
    question: ConceptGraph | None = None,
    graph: str = "question",
    by_kind: Mapping[str, sp.csr_matrix] | None = None,
    *,
    max_pairs: int | None = DEFAULT_MAX_SCAN,
) -> NeighbourWeights:
    """The edges of :func:`edge_arrays` as :class:`NeighbourWeights` (same features, same
    normalisation), in memory linear in the candidates and their concepts.

    Concepts every candidate holds (the question's, with ``graph="question"``) make the graph
    complete and need no scan; the maxima over the other concepts' pairs (and, when the graph is
    not complete, the neighbour counts) are scanned in blocks of bounded size. ``max_pairs``
    bounds that scan's work (pairs counted once per shared concept): a full scan past it is
    refused before it starts, the pruned scan of a complete graph as soon as it would pass it
    (:class:`~grapher_core.errors.InputError` naming the bound).
    """
    _check_n(n, documents, graph)
    if _from_kinds(graph, by_kind):
        assert by_kind is not None
        nodes, counts = _kinds(by_kind, n)
        pairs = (nodes + counts).tocoo()
        pairs.sum_duplicates()
        keep = (pairs.row != pairs.col) & (pairs.data != 0)
        matrix = sp.csr_matrix((pairs.data[keep], (pairs.row[keep], pairs.col[keep])), shape=(n, n))
        degree = np.diff(matrix.indptr).astype(np.float64)
        return NeighbourWeights(n, degree, pairs=matrix)
    if documents is None:
        raise InputError(f"need {n} document concept graphs to build G-RAG's edges")
    if graph == "question" and question is None:
        raise InputError("graph='question' needs the question's concept graph")
    node_sets, edge_sets = concept_sets(documents, question if graph == "question" else None)
    nodes, node_holders = concept_incidence(node_sets, n)
    edges, edge_holders = concept_incidence(edge_sets, n)
    if n < 2:
        return NeighbourWeights(n, np.zeros(n))
    node_scale, edge_scale, degree = _scan(
        (nodes, node_holders), (edges, edge_holders), n, max_pairs
    )
    kept = [
        (matrix[:, np.flatnonzero(holders >= 2)], scale)
        for (matrix, holders), scale in (
            ((nodes, node_holders), node_scale),
            ((edges, edge_holders), edge_scale),
        )
    ]
    incidence = sp.csr_matrix(sp.hstack([m for m, _ in kept], format="csr"))
    column_weight = np.concatenate([np.full(m.shape[1], scale) for m, scale in kept])
    return NeighbourWeights(n, degree, None, incidence, column_weight, int(kept[0][0].shape[1]))


Incidence = tuple[sp.csr_matrix, np.ndarray]


def _scan(
    nodes: Incidence, edges: Incidence, n: int, max_pairs: int | None
) -> tuple[float, float, np.ndarray]:
    """``(1 / max common nodes, 1 / max common edges, neighbour counts)`` over the pairs.

    A concept every candidate holds adds the same count to every pair, so a maximum is that
    constant plus the maximum over the other concepts, and any such concept makes the graph
    complete (``n - 1`` neighbours each). Only the other concepts' pairs are visited.
    """
    universal = [int((holders == n).sum()) for _, holders in (nodes, edges)]
    partial = [
        sp.csr_matrix(matrix[:, np.flatnonzero((holders >= 2) & (holders < n))])
        for matrix, holders in (nodes, edges)
    ]
    holders = [h[(h >= 2) & (h < n)] for _, h in (nodes, edges)]
    complete = sum(universal) > 0
    most = sum(int((h * (h - 1)).sum()) for h in holders)
    if not complete:  # every pair's neighbourship is needed: a full scan, its work known now
        check_pair_budget(most, max_pairs, "g-rag")
    # complete: the maxima's scan stops early on most data, so it is bounded as it goes
    budget = _Budget(max_pairs, most)
    tops = [0.0, 0.0]
    degree = np.full(n, n - 1.0) if complete else np.zeros(n)
    if complete:
        for k in range(2):
            tops[k] = _max_shared(partial[k], holders[k], budget)
    else:
        tops, degree = _full_scan(partial, holders, n, budget)
    scales = [
        1.0 / (base + top) if base + top > 0 else 0.0
        for base, top in zip(universal, tops, strict=True)
    ]
    return scales[0], scales[1], degree


class _Budget:
    """Counts the pairs the scan visits and refuses past ``max_pairs`` (before each block)."""

    def __init__(self, max_pairs: int | None, most: int) -> None:
        self.limit = None if max_pairs is None or most <= max_pairs else max_pairs
        self.most = most
        self.spent = 0

    def spend(self, work: int) -> None:
        self.spent += work
        if self.limit is not None and self.spent > self.limit:
            raise InputError(
                f"g-rag: finding the normalising maxima needs more than max_pairs="
                f"{self.limit:,} candidate pairs that share a concept (up to {self.most:,}, "
                "counted once per shared concept); pass fewer candidates, a larger max_pairs, "
                "or max_pairs=None to lift the bound (docs/reliability.md)"
            )


def _row_work(matrix: sp.csr_matrix, holders: np.ndarray) -> np.ndarray:
    """Per row, the other rows it meets through its columns (``sum_c holders[c] - 1``)."""
    return np.asarray(matrix @ (holders - 1).astype(np.float64)).ravel().astype(np.int64)


def _blocks(rows: np.ndarray, work: np.ndarray) -> list[np.ndarray]:
    """``rows`` in consecutive blocks of about :data:`_BLOCK_WORK` pairs (one row at least)."""
    out = []
    start = 0
    cumulative = np.cumsum(work[rows])
    while start < rows.size:
        done = cumulative[start - 1] if start else 0
        stop = int(np.searchsorted(cumulative, done + _BLOCK_WORK, side="right"))
        stop = max(stop, start + 1)
        out.append(rows[start:stop])
        start = stop
    return out


def _off_diagonal(gram: sp.csr_matrix, rows: np.ndarray) -> sp.csr_matrix:
    """``gram`` (block rows ``rows`` against every row) without each row's entry for itself."""
    gram = sp.csr_matrix(gram)
    position = np.repeat(np.arange(len(rows)), np.diff(gram.indptr))
    keep = gram.indices != rows[position]
    counts = np.bincount(position[keep], minlength=len(rows))
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return sp.csr_matrix((gram.data[keep], gram.indices[keep], indptr), shape=gram.shape)


def _max_shared(matrix: sp.csr_matrix, holders: np.ndarray, budget: _Budget) -> float:
    """``max_{i != j} |C_i & C_j|`` over the columns of ``matrix``, visiting rows by decreasing
    size and stopping when no row left can beat the best (a row shares at most its size)."""
    if not holders.size:
        return 0.0
    sizes = np.diff(matrix.indptr)
    order = np.argsort(-sizes, kind="stable")
    work = _row_work(matrix, holders)
    transposed = sp.csr_matrix(matrix.T)
    best = 0.0
    start = 0
    while start < order.size and sizes[order[start]] > best:
        stop = start + 1
        spent = int(work[order[start]])
        while (
            stop < order.size
            and sizes[order[stop]] > best
            and spent + work[order[stop]] <= _BLOCK_WORK
        ):
            spent += int(work[order[stop]])
            stop += 1
        rows = order[start:stop]
        budget.spend(spent)
        shared = _off_diagonal(matrix[rows] @ transposed, rows)
        if shared.nnz:
            best = max(best, float(shared.data.max()))
        start = stop
    return best


def _full_scan(
    partial: list[sp.csr_matrix], holders: list[np.ndarray], n: int, budget: _Budget
) -> tuple[list[float], np.ndarray]:
    """Both maxima and every candidate's neighbour count, block of rows by block of rows."""
    transposed = [sp.csr_matrix(m.T) for m in partial]
    work = _row_work(partial[0], holders[0]) + _row_work(partial[1], holders[1])
    tops = [0.0, 0.0]
    degree = np.zeros(n)
    for rows in _blocks(np.arange(n), work):
        budget.spend(int(work[rows].sum()))
        grams = [_off_diagonal(m[rows] @ t, rows) for m, t in zip(partial, transposed, strict=True)]
        for k, gram in enumerate(grams):
            if gram.nnz:
                tops[k] = max(tops[k], float(gram.data.max()))
        linked = (grams[0] + grams[1]).tocsr()
        linked.eliminate_zeros()
        degree[rows] = np.diff(linked.indptr)
    return tops, degree


def edge_arrays(
    n: int,
    documents: Sequence[ConceptGraph] | None = None,
    question: ConceptGraph | None = None,
    graph: str = "question",
    by_kind: Mapping[str, sp.csr_matrix] | None = None,
    *,
    max_edges: int | None = DEFAULT_MAX_EDGES,
    max_pairs: int | None = DEFAULT_MAX_SCAN,
) -> EdgeArrays:
    """Edges and their two normalised features. ``graph="documents"`` reads the counts from
    ``by_kind`` (the ``SharedConcepts`` proximities) when both kinds are there, else computes
    them from ``documents``; ``"question"`` always computes them (it needs the question).
    ``max_edges`` bounds the list (checked before it is allocated: an
    :class:`~grapher_core.errors.InputError` names it); rankers use :func:`neighbour_weights`."""
    _check_n(n, documents, graph)
    if _from_kinds(graph, by_kind):
        assert by_kind is not None
        nodes, edges = _kinds(by_kind, n)
        linked = sp.csr_matrix(nodes + edges)
        _check_edges(linked.nnz - int(np.count_nonzero(linked.diagonal())), max_edges)
        return _listed(nodes, edges)
    weights = neighbour_weights(n, documents, question, graph, by_kind, max_pairs=max_pairs)
    _check_edges(weights.n_edges, max_edges)
    incidence, column_weight = weights.incidence, weights.column_weight
    if incidence is None or column_weight is None or weights.n_edges == 0:
        return EdgeArrays(np.zeros((2, 0), dtype=np.int64), np.zeros((0, 2), dtype=np.float32))
    split = weights.node_columns
    parts = [
        (incidence[:, :split], column_weight[:split]),
        (incidence[:, split:], column_weight[split:]),
    ]
    if np.all(weights.degree == n - 1):  # complete: n(n-1) <= max_edges, dense is as small
        dense = []
        for part, scale in parts:
            matrix = np.asarray((part @ sp.diags(scale) @ part.T).todense())
            np.fill_diagonal(matrix, 0.0)
            dense.append(matrix)
        rows, cols = np.nonzero(~np.eye(n, dtype=bool))
        weight = np.stack([dense[0][rows, cols], dense[1][rows, cols]], axis=1)
        return EdgeArrays(np.stack([cols, rows]).astype(np.int64), weight.astype(np.float32))
    features = []
    for part, scale in parts:
        gram = (part @ sp.diags(scale) @ part.T).tocoo()
        keep = gram.row != gram.col
        features.append(
            sp.csr_matrix((gram.data[keep], (gram.row[keep], gram.col[keep])), shape=(n, n))
        )
    return _listed(features[0], features[1])


def _check_edges(count: int, max_edges: int | None) -> None:
    if max_edges is not None and count > max_edges:
        raise InputError(
            f"g-rag: the graph has {count:,} edges, more than max_edges={max_edges:,} "
            "(a complete graph on n candidates has n(n-1)); list fewer candidates, raise "
            "max_edges, or use neighbour_weights(), which does not list them"
        )


def _listed(nodes: sp.csr_matrix, edges: sp.csr_matrix) -> EdgeArrays:
    pattern = (nodes + edges).tocoo()
    pattern.sum_duplicates()
    keep = pattern.row != pattern.col
    rows, cols = pattern.row[keep].astype(np.int64), pattern.col[keep].astype(np.int64)
    weight = np.zeros((rows.size, 2), dtype=np.float32)
    if rows.size:
        weight[:, 0] = np.asarray(nodes[rows, cols]).ravel()
        weight[:, 1] = np.asarray(edges[rows, cols]).ravel()
    # A[i, j] links i and j; the message goes j -> i (symmetric anyway)
    return EdgeArrays(np.stack([cols, rows]), weight)
