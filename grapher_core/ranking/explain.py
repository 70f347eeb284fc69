"""Who lifted whom: the ranked list with each candidate's largest contributing neighbours.

The kernel reads only the returned rows of the csr adjacency, in bulk: no per-edge Python loop
(row by row in plain Python was measured slower even for the top 10 of a chunk-order pool, two
edges a row: 53 us against 37 us). The values returned are built without constructor frames
(:func:`~grapher_core.candidates.contribution_of`, :func:`~grapher_core.candidates.ranked_of`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grapher_core.candidates import (
    Candidate,
    Contribution,
    RankedCandidate,
    contribution_of,
    ranked_of,
)
from grapher_core.edges.graph import CandidateGraph

__all__ = ["explanations", "ranked_candidates", "top_per_row"]

Picked = tuple[list[int], list[int], list[float], list[float]]
"""Per chosen neighbour, row by row and best first: its row, its column, the edge weight and
its share."""


def ranked_candidates(
    candidates: Sequence[Candidate],
    graph: CandidateGraph,
    scores: np.ndarray,
    top_n: int | None,
    explain: int,
    relevance: np.ndarray | None = None,
) -> list[RankedCandidate]:
    """The candidates best first (ties keep the input order), ``top_n`` of them, each with
    its ``explain`` largest contributing neighbours."""
    order = np.argsort(-scores, kind="stable")  # best score first; ties keep the input order
    if top_n is not None:
        order = order[:top_n]
    found = explanations(graph, scores, order, explain) if explain else {}
    # Python floats and ints in one conversion each, not one numpy scalar per field.
    new_scores = scores[order].tolist()
    if relevance is None or relevance is scores:  # the ranker's scale is the relevance one
        new_relevance = new_scores
    else:
        new_relevance = relevance[order].tolist()
    ranked = []
    nothing: tuple[Contribution, ...] = ()
    for new_rank, (i, score, relevant) in enumerate(
        zip(order.tolist(), new_scores, new_relevance, strict=True), 1
    ):
        candidate = candidates[i]
        base = candidate.score
        ranked.append(
            ranked_of(
                candidate.id,
                score,
                None if base is None else float(base),
                new_rank,
                i + 1,
                candidate,
                found.get(i, nothing),
                relevant,
            )
        )
    return ranked


def explanations(
    graph: CandidateGraph, scores: np.ndarray, rows: np.ndarray, limit: int
) -> dict[int, tuple[Contribution, ...]]:
    """For each returned candidate, the neighbours with the largest weighted share of score.

    The share of neighbour j in i's score is ``W[i, j] * score[j]`` with ``W`` the row-normalised
    adjacency -- exactly GCS's smoothing term up to the factor ``1 - alpha``, and a faithful
    reading of "who lifted it" for the other rankers. Rows are read straight from the csr
    arrays: only the returned candidates' rows are touched. Per row, the ``limit`` largest
    shares, ties in column order.
    """
    if graph.n_edges == 0 or rows.size == 0:
        return {}
    return _contributions(graph, _largest_shares(graph, scores, rows, limit))


def _largest_shares(
    graph: CandidateGraph, scores: np.ndarray, rows: np.ndarray, limit: int
) -> Picked:
    """All returned rows at once: their csr segments, one share per edge, then per row the
    ``limit`` largest (:func:`top_per_row`)."""
    adjacency = graph.adjacency
    indptr = adjacency.indptr
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    total = int(lengths.sum())
    if total == 0:
        return [], [], [], []
    offsets = np.cumsum(lengths) - lengths
    segment = np.repeat(np.arange(rows.size), lengths)
    position = np.arange(total) - offsets[segment]
    entries = starts[segment] + position
    weights = adjacency.data[entries]
    columns = adjacency.indices[entries]
    row_sums = np.bincount(segment, weights=weights, minlength=rows.size)
    shares = weights * scores[columns] / row_sums[segment]
    picked = top_per_row(shares, segment, position, offsets, lengths, limit)
    return (
        rows[segment[picked]].tolist(),
        columns[picked].tolist(),
        weights[picked].tolist(),
        shares[picked].tolist(),
    )


def _contributions(graph: CandidateGraph, picked: Picked) -> dict[int, tuple[Contribution, ...]]:
    """The chosen neighbours as :class:`Contribution` values, grouped by row; each names the
    kinds of the edges it came by."""
    kinds = list(graph.by_kind.items())
    single_kind: tuple[str, ...] | None = (kinds[0][0],) if len(kinds) == 1 else None
    ids = graph.ids
    grouped: dict[int, list[Contribution]] = {}
    for i, j, weight, share in zip(*picked, strict=True):
        if single_kind is not None:
            kind = single_kind
        else:
            kind = tuple(name for name, m in kinds if j in m.indices[m.indptr[i] : m.indptr[i + 1]])
        contribution = contribution_of(ids[j], kind, weight, share)
        found = grouped.get(i)
        if found is None:
            grouped[i] = [contribution]
        else:
            found.append(contribution)
    return {i: tuple(found) for i, found in grouped.items()}


def top_per_row(
    shares: np.ndarray,
    segment: np.ndarray,
    position: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
    limit: int,
) -> np.ndarray:
    """Indices into ``shares`` of each segment's ``limit`` largest, segment by segment, best
    first, ties in position order.

    Few long rows (the returned top_n of a dense graph): a (rows x longest) grid padded with
    -inf and ``limit`` rounds of argmax (the first maximum: ties keep their order), each taken
    entry then set to -inf. A sort of every segment gives the same answer but costs ~4x as
    much inside a real rerank (its comparisons mispredict once the data leave the branch
    predictor); it is kept for short segments (cheaper there), long lists, and grids that
    would be large (many long rows: ``top_n=None``).
    """
    rows = lengths.size
    longest = 0 if shares.size < 512 or limit > 8 else int(lengths.max())  # max: grid only
    if longest == 0 or rows * longest > 4 * shares.size + 4096:
        return np.lexsort((-shares, segment))[position < limit]  # stable: ties keep order
    grid = np.full((rows, longest), -np.inf)
    grid[segment, position] = shares
    every_row = np.arange(rows)
    rounds = []
    for k in range(min(limit, longest)):
        column = grid.argmax(axis=1)
        live = lengths > k  # rows with a k-th entry left
        rounds.append(offsets[live] + column[live])
        grid[every_row, column] = -np.inf
    chosen = np.concatenate(rounds)
    return chosen[np.argsort(segment[chosen], kind="stable")]
