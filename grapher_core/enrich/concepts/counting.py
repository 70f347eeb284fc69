"""Shared concepts between every pair of graphs (G-RAG eq. 3) as sparse products, with the pair
budget checked before anything pairwise is allocated.

The counts refuse more than ``max_pairs`` shared-concept pairs (:data:`DEFAULT_MAX_PAIRS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from grapher_core.enrich.concepts.graph import ConceptGraph
from grapher_core.errors import InputError

#: Most candidate pairs that share a concept, counted once per shared concept, that
#: :func:`concept_overlaps` stores (about 16 bytes a pair) or G-RAG's pair scan visits; checked
#: before anything pairwise is allocated. ``max_pairs=None`` lifts it.
DEFAULT_MAX_PAIRS = 20_000_000


def concept_overlaps(
    graphs: Sequence[ConceptGraph],
    question: ConceptGraph | None = None,
    *,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``(common nodes, common edges)`` between every pair of graphs, symmetric, zero diagonal
    (G-RAG eq. 3), as one sparse product of the graph-concept incidence: the cost follows the
    number of pairs that share a concept.

    With ``question``, each graph is first united with it (``G_qp`` without the ``question``
    node): every pair then shares at least the question's concepts, the graph is complete
    (G-RAG's ranker does not build this: it keeps the shared part in closed form).
    ``max_pairs`` bounds the pairs stored, counted once per shared concept, and is checked
    before any is allocated (:class:`~grapher_core.errors.InputError` naming the bound).
    """
    n = len(graphs)
    node_sets, edge_sets = concept_sets(graphs, question)
    nodes, node_holders = concept_incidence(node_sets, n)
    edges, edge_holders = concept_incidence(edge_sets, n)
    check_pair_budget(
        pair_count(node_holders) + pair_count(edge_holders), max_pairs, "concept_overlaps"
    )
    return _pair_counts(nodes, node_holders, n), _pair_counts(edges, edge_holders, n)


def concept_sets(
    graphs: Sequence[ConceptGraph], question: ConceptGraph | None = None
) -> tuple[list[frozenset[str]], list[frozenset[tuple[str, str]]]]:
    """Each graph's concepts and unordered concept pairs, united with the question's if given."""
    node_sets = [g.node_set() for g in graphs]
    edge_sets = [g.edge_set() for g in graphs]
    if question is not None:
        q_nodes, q_edges = question.node_set(), question.edge_set()
        node_sets = [s | q_nodes for s in node_sets]
        edge_sets = [s | q_edges for s in edge_sets]
    return node_sets, edge_sets


def concept_incidence(sets: Sequence[Iterable[Any]], n: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(M, holders)``: ``M[i, c] = 1`` when set ``i`` holds item ``c`` (one column per
    distinct item, in first-seen order), ``holders[c]`` the number of sets holding ``c``."""
    column: dict[Any, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    for i, items in enumerate(sets):
        for item in items:
            cols.append(column.setdefault(item, len(column)))
            rows.append(i)
    data = np.ones(len(rows), dtype=np.float64)
    matrix = sp.csr_matrix(
        (data, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
        shape=(n, len(column)),
    )
    matrix.sum_duplicates()
    matrix.data[:] = 1.0
    holders = np.diff(matrix.tocsc().indptr).astype(np.int64)
    return matrix, holders


def pair_count(holders: np.ndarray) -> int:
    """Ordered pairs of distinct sets that share an item, counted once per shared item (an
    upper bound on the distinct pairs, and the work of one sparse product)."""
    h = np.asarray(holders, dtype=np.int64)
    return int((h * (h - 1)).sum())


def check_pair_budget(pairs: int, max_pairs: int | None, what: str) -> None:
    """Refuse, before anything pairwise is allocated, more shared-concept pairs than allowed."""
    if max_pairs is not None and pairs > max_pairs:
        raise InputError(
            f"{what}: {pairs:,} candidate pairs share a concept (counted once per shared "
            f"concept), more than max_pairs={max_pairs:,}; pass fewer candidates, a larger "
            "max_pairs, or max_pairs=None to lift the bound (docs/reliability.md)"
        )


def _pair_counts(matrix: sp.csr_matrix, holders: np.ndarray, n: int) -> sp.csr_matrix:
    """Off-diagonal counts of the columns two rows share, keeping only columns held twice."""
    shared = holders >= 2
    if not shared.any():
        return sp.csr_matrix((n, n))
    kept = sp.csr_matrix(matrix[:, np.flatnonzero(shared)])
    gram = (kept @ kept.T).tocoo()
    off = gram.row != gram.col
    out = sp.csr_matrix((gram.data[off], (gram.row[off], gram.col[off])), shape=(n, n))
    out.sum_duplicates()
    return out
