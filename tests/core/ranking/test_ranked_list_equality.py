"""The ranked list and its explanations equal the algorithm they replaced, value for value.

``ranked_candidates`` now orders by one stable ``argsort``, reads the returned rows with fewer
numpy calls and builds its values without the constructor frames
(``candidates.contribution_of`` / ``ranked_of``). The reference below is the code before that
change, kept verbatim (a ``lexsort`` with the positions, the keyword constructors): on random
pools with many exact ties, several edge kinds, short rows (one ``lexsort``) and long rows
(the argmax grid), every field of every result must be equal -- scores, order, ranks,
neighbours, kinds, weights and contributions, compared with ``==`` on floats, not a tolerance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest

from grapher_core.candidates import (
    Candidate,
    Contribution,
    RankedCandidate,
    contribution_of,
    ranked_of,
)
from grapher_core.edges.entities import SharedEntities
from grapher_core.edges.graph import CandidateGraph, build_graph
from grapher_core.edges.keys import AdjacentChunks, ForeignKeys
from grapher_core.ranking.base import RankContext
from grapher_core.ranking.explain import explanations, ranked_candidates
from grapher_core.ranking.propagation import GCSRanker
from grapher_core.ranking.seeds import make_seeds


def _old_ranked_candidates(
    candidates: Sequence[Candidate],
    graph: CandidateGraph,
    scores: np.ndarray,
    top_n: int | None,
    explain: int,
    relevance: np.ndarray | None = None,
) -> list[RankedCandidate]:
    n = len(candidates)
    order = np.lexsort((np.arange(n), -scores))
    if top_n is not None:
        order = order[:top_n]
    found = _old_explanations(graph, scores, order, explain) if explain else {}
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


def _old_explanations(
    graph: CandidateGraph, scores: np.ndarray, rows: np.ndarray, limit: int
) -> dict[int, tuple[Contribution, ...]]:
    if graph.n_edges == 0 or rows.size == 0:
        return {}
    adjacency = graph.adjacency
    kinds = list(graph.by_kind.items())
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
    picked = _old_top_per_row(shares, segment, position, offsets, lengths, limit)
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


def _old_top_per_row(
    shares: np.ndarray,
    segment: np.ndarray,
    position: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
    limit: int,
) -> np.ndarray:
    rows, longest = lengths.size, int(lengths.max())
    if shares.size < 512 or limit > 8 or rows * longest > 4 * shares.size + 4096:
        return np.lexsort((-shares, segment))[position < limit]
    grid = np.full((rows, longest), -np.inf)
    grid[segment, position] = shares
    every_row = np.arange(rows)
    rounds = []
    for k in range(min(limit, longest)):
        column = grid.argmax(axis=1)
        live = lengths > k
        rounds.append(offsets[live] + column[live])
        grid[every_row, column] = -np.inf
    chosen = np.concatenate(rounds)
    return chosen[np.argsort(segment[chosen], kind="stable")]


def _pool(seed: int) -> tuple[list[Candidate], list[object]]:
    """A random pool: few or many entities (short rows or long ones), repeated entity lists
    and quantised scores (exact ties in seeds, scores and shares), sometimes foreign keys and
    chunk order beside the entities (several kinds on one edge), sometimes no scores."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 240))
    vocabulary = int(rng.integers(2, 40)) if seed % 2 else int(rng.integers(40, 400))
    candidates = []
    for i in range(n):
        entities = [f"e{int(e)}" for e in rng.integers(0, vocabulary, int(rng.integers(0, 9)))]
        if seed % 3 == 0 and i % 4 == 0:
            entities = ["e1", "e2"]  # identical lists: identical rows, tied shares
        metadata: dict[str, object] = {
            "entities": entities,
            "doc_id": f"d{i % 5}",
            "chunk_index": i // 5,
            "foreign_keys": [f"c{int(j)}" for j in rng.integers(0, n, int(rng.integers(0, 3)))],
        }
        score = None if seed % 7 == 3 else float(rng.integers(0, 5)) / 4
        candidates.append(Candidate(f"c{i}", "", score, metadata))
    proximities: list[object] = [SharedEntities("entities")]
    if seed % 4 in (1, 2):
        proximities.append(ForeignKeys("foreign_keys"))
    if seed % 4 in (2, 3):
        proximities.append(AdjacentChunks())
    return candidates, proximities


def _ranked(seed: int) -> tuple[list[Candidate], CandidateGraph, np.ndarray]:
    candidates, proximities = _pool(seed)
    graph = build_graph(candidates, proximities)  # type: ignore[arg-type]
    seeds = make_seeds(candidates, "rank")
    scores = GCSRanker().rank(graph, seeds, RankContext(candidates))
    if seed % 5 == 4:
        scores = np.round(scores, 2)  # many exact ties in the ranked scores too
    return candidates, graph, scores


@pytest.mark.parametrize("seed", range(24))
@pytest.mark.parametrize(("top_n", "explain"), [(10, 3), (None, 5), (3, 1), (25, 20), (10, 0)])
def test_ranked_list_equals_the_replaced_algorithm(
    seed: int, top_n: int | None, explain: int
) -> None:
    candidates, graph, scores = _ranked(seed)
    relevance = scores * 2.0 if seed % 2 else (scores if seed % 4 == 0 else None)
    got = ranked_candidates(candidates, graph, scores, top_n, explain, relevance)
    expected = _old_ranked_candidates(candidates, graph, scores, top_n, explain, relevance)
    assert got == expected
    for new, old in zip(got, expected, strict=True):
        assert vars(new) == vars(old)  # every field, explanation tuples included
        for a, b in zip(new.explanation, old.explanation, strict=True):
            assert vars(a) == vars(b) and type(a) is type(b) is Contribution


@pytest.mark.parametrize("seed", range(12))
def test_explanations_of_every_row_equal_the_replaced_algorithm(seed: int) -> None:
    """All rows at once (``Reranking.to_networkx`` asks for every node's best neighbour), and
    the long rows of a dense pool (the argmax grid)."""
    candidates, graph, scores = _ranked(seed)
    rows = np.arange(len(candidates))
    for limit in (1, 3, 8):
        assert explanations(graph, scores, rows, limit) == _old_explanations(
            graph, scores, rows, limit
        )


def test_the_dense_pool_takes_the_argmax_grid_and_still_agrees() -> None:
    """Ten returned rows of ~150 edges each (more than 512 shares, limit <= 8): the grid path
    of ``top_per_row``, checked to be the one taken."""
    rng = np.random.default_rng(7)
    candidates = [
        Candidate(
            f"z{i}",
            "",
            float(rng.integers(0, 3)),
            {"entities": [f"zipf {int(e)}" for e in rng.zipf(1.3, 8) % 60]},
        )
        for i in range(200)
    ]
    graph = build_graph(candidates, [SharedEntities("entities")])
    scores = GCSRanker().rank(graph, make_seeds(candidates, "rank"), RankContext(candidates))
    order = np.argsort(-scores, kind="stable")[:10]
    indptr = graph.adjacency.indptr
    assert int((indptr[order + 1] - indptr[order]).sum()) >= 512
    assert ranked_candidates(candidates, graph, scores, 10, 3) == _old_ranked_candidates(
        candidates, graph, scores, 10, 3
    )


def test_library_built_values_are_the_constructors_values() -> None:
    """``contribution_of`` / ``ranked_of`` set every declared field (a field added to either
    class without them fails here) and equal the checked constructors; both classes have no
    ``__post_init__``, so no check is skipped by building them this way."""
    candidate = Candidate("a", "text", 0.5, {"k": 1})
    contribution = contribution_of("b", ("conceptual",), 0.25, 0.125)
    assert contribution == Contribution("b", ("conceptual",), 0.25, 0.125)
    assert list(vars(contribution)) == [f.name for f in dataclasses.fields(Contribution)]
    ranked = ranked_of("a", 0.75, 0.5, 1, 3, candidate, (contribution,), 0.9)
    assert ranked == RankedCandidate("a", 0.75, 0.5, 1, 3, candidate, (contribution,), 0.9)
    assert list(vars(ranked)) == [f.name for f in dataclasses.fields(RankedCandidate)]
    assert hash(contribution) == hash(Contribution("b", ("conceptual",), 0.25, 0.125))
    with pytest.raises(dataclasses.FrozenInstanceError):
        contribution.edge_weight = 1.0  # type: ignore[misc]
    for cls in (Contribution, RankedCandidate):
        assert not hasattr(cls, "__post_init__")
