"""Who lifted whom: the ranked list with each candidate's largest contributing neighbours.

The kernel reads only the returned rows of the csr adjacency: in plain Python when they hold
few edges (the usual top 10 of a pool of 200: a dozen numpy calls cost more than the
arithmetic), in bulk numpy otherwise. Both give the same floats and the same order (tested).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import reduce
from operator import add

import numpy as np

from grapher_core.candidates import (
    Candidate,
    Contribution,
    RankedCandidate,
    contribution_of,
    ranked_of,
)
from grapher_core.edges.graph import CandidateGraph

__all__ = ["FEW_ENTRIES", "explanations", "ranked_candidates", "top_per_row"]

FEW_ENTRIES = 512
"""Up to this many edges in the returned rows, explanations are computed row by row in plain
Python (~0.1 us an edge) rather than by ~25 bulk numpy calls (1-3 us each inside a rerank)."""

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
    new_relevance = new_scores if relevance is None else relevance[order].tolist()
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
    adjacency = graph.adjacency
    indptr = adjacency.indptr
    starts = indptr[rows]
    ends = indptr[rows + 1]
    picked = None
    if int(ends.sum()) - int(starts.sum()) <= FEW_ENTRIES:
        picked = few_row_shares(graph, scores, rows.tolist(), starts.tolist(), ends.tolist(), limit)
    if picked is None:
        picked = bulk_shares(graph, scores, rows, starts, ends - starts, limit)
    return _contributions(graph, picked)


def few_row_shares(
    graph: CandidateGraph,
    scores: np.ndarray,
    rows: list[int],
    starts: list[int],
    ends: list[int],
    limit: int,
) -> Picked | None:
    """:func:`bulk_shares` row by row in plain Python, the same floats: the row sum adds the
    weights left to right from 0.0 as ``np.bincount`` does (not ``sum()``, which compensates
    from Python 3.12, nor numpy's pairwise sum), a share is ``weight * score / row sum`` in that
    order, and a stable sort keeps ties in column order. ``None`` (use the bulk path) where a
    NaN could arise -- a score not finite, a row sum not finite and positive -- since NaN has no
    order in a Python sort."""
    if not math.isfinite(float(scores.sum())):
        return None
    score = scores.tolist()
    indices, data = graph.adjacency.indices, graph.adjacency.data
    rows_out: list[int] = []
    columns_out: list[int] = []
    weights_out: list[float] = []
    shares_out: list[float] = []
    for i, start, end in zip(rows, starts, ends):
        if start == end:
            continue
        columns = indices[start:end].tolist()
        weights = data[start:end].tolist()
        total = reduce(add, weights, 0.0)
        if not 0.0 < total < math.inf:
            return None
        shares = [w * score[j] / total for w, j in zip(weights, columns)]
        best = sorted(range(len(shares)), key=shares.__getitem__, reverse=True)[:limit]
        rows_out.extend([i] * len(best))
        columns_out.extend([columns[k] for k in best])
        weights_out.extend([weights[k] for k in best])
        shares_out.extend([shares[k] for k in best])
    return rows_out, columns_out, weights_out, shares_out


def bulk_shares(
    graph: CandidateGraph,
    scores: np.ndarray,
    rows: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    limit: int,
) -> Picked:
    """All returned rows at once: their csr segments, one share per edge, then per row the
    ``limit`` largest (:func:`top_per_row`)."""
    adjacency = graph.adjacency
    total = int(lengths.sum())
    if total == 0:
        return [], [], [], []
    segment = np.repeat(np.arange(rows.size), lengths)
    offsets = np.cumsum(lengths) - lengths
    position = np.arange(total) - np.repeat(offsets, lengths)
    entries = np.repeat(starts, lengths) + position
    weights = adjacency.data[entries]
    row_sums = np.bincount(segment, weights=weights, minlength=rows.size)
    shares = weights * scores[adjacency.indices[entries]] / row_sums[segment]
    picked = top_per_row(shares, segment, position, offsets, lengths, limit)
    return (
        rows[segment[picked]].tolist(),
        adjacency.indices[entries[picked]].tolist(),
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
    rows, longest = lengths.size, int(lengths.max())
    if shares.size < 512 or limit > 8 or rows * longest > 4 * shares.size + 4096:
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
