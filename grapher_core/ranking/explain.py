"""Who lifted whom: the ranked list with each candidate's largest contributing neighbours.

The kernel reads the returned rows of the csr adjacency in bulk (no per-edge Python loop).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grapher_core.candidates import Candidate, Contribution, RankedCandidate
from grapher_core.edges.graph import CandidateGraph

__all__ = ["explanations", "ranked_candidates", "top_per_row"]


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
    n = len(candidates)
    order = np.lexsort((np.arange(n), -scores))  # best score first; ties keep the input order
    if top_n is not None:
        order = order[:top_n]
    found = explanations(graph, scores, order, explain) if explain else {}
    # Python floats and ints in one conversion each, not one numpy scalar per field.
    new_scores = scores[order].tolist()
    new_relevance = new_scores if relevance is None else relevance[order].tolist()
    ranked = []
    for new_rank, (i, score, relevant) in enumerate(
        zip(order.tolist(), new_scores, new_relevance, strict=True)
    ):
        candidate = candidates[i]
        ranked.append(
            RankedCandidate(
                id=candidate.id,
                score=score,
                original_score=None if candidate.score is None else float(candidate.score),
                rank=new_rank + 1,
                original_rank=i + 1,
                candidate=candidate,
                explanation=found.get(i, ()),
                relevance=relevant,
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
    arrays: only the returned candidates' rows are touched.
    """
    if graph.n_edges == 0 or rows.size == 0:
        return {}
    adjacency = graph.adjacency
    kinds = list(graph.by_kind.items())
    # All returned rows at once: their csr segments, one share per edge, then per row the
    # ``limit`` largest, ties in column order.
    indptr = adjacency.indptr
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    total = int(lengths.sum())
    if total == 0:
        return {}
    segment = np.repeat(np.arange(rows.size), lengths)
    offsets = np.cumsum(lengths) - lengths
    position = np.arange(total) - np.repeat(offsets, lengths)
    entries = np.repeat(starts, lengths) + position
    weights = adjacency.data[entries]
    row_sums = np.bincount(segment, weights=weights, minlength=rows.size)
    shares = weights * scores[adjacency.indices[entries]] / row_sums[segment]
    picked = top_per_row(shares, segment, position, offsets, lengths, limit)
    neighbours = adjacency.indices[entries[picked]]
    ids = graph.ids
    out: dict[int, tuple[Contribution, ...]] = {}
    single_kind: tuple[str, ...] | None = (kinds[0][0],) if len(kinds) == 1 else None
    picked_segment = segment[picked].tolist()
    picked_neighbour = neighbours.tolist()
    picked_weight = weights[picked].tolist()
    picked_share = shares[picked].tolist()
    row_list = rows.tolist()
    for k, s in enumerate(picked_segment):
        i, j = row_list[s], picked_neighbour[k]
        if single_kind is not None:
            kind = single_kind
        else:
            kind = tuple(name for name, m in kinds if j in m.indices[m.indptr[i] : m.indptr[i + 1]])
        contribution = Contribution(
            neighbour_id=ids[j],
            kinds=kind,
            edge_weight=picked_weight[k],
            contribution=picked_share[k],
        )
        out[i] = (*out.get(i, ()), contribution)
    return out


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
