"""GraphReranker: candidates -> graph -> ranker -> ranked candidates with explanations."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate, Contribution, RankedCandidate
from grapher_core.graph import CandidateGraph, build_graph
from grapher_core.proximity import Proximity
from grapher_core.rankers import RankContext, Ranker, make_ranker
from grapher_core.seeds import SEED_TRANSFORMS, _names, make_seeds, original_scores


class GraphReranker:
    """Rerank a retriever's candidates with a graph built from their metadata.

    >>> reranker = GraphReranker([ForeignKeys("foreign_keys")], ranker="gcs")
    >>> results = reranker.rerank(candidates, top_n=5)

    ``alpha`` overrides the named ranker's default (see :mod:`grapher_core.rankers`);
    ``seed_transform`` says how base scores become seeds (see :mod:`grapher_core.seeds`);
    ``explain`` is how many neighbours to report per returned candidate (0 to skip).
    The input is never modified: candidates are frozen and their metadata only read.
    """

    def __init__(
        self,
        proximities: Sequence[Proximity] = (),
        ranker: str | Ranker = "gcs",
        alpha: float | None = None,
        *,
        seed_transform: str = "auto",
        explain: int = 3,
        **ranker_options: Any,
    ) -> None:
        for proximity in proximities:
            if not isinstance(proximity, Proximity):
                raise TypeError(
                    f"{proximity!r} is not a proximity: it needs `kind`, `weight` and "
                    "`adjacency(candidates)`"
                )
        if seed_transform not in SEED_TRANSFORMS:
            raise ValueError(f"seed_transform must be one of {SEED_TRANSFORMS}")
        if explain < 0:
            raise ValueError("explain must be >= 0")
        self.proximities: tuple[Proximity, ...] = tuple(proximities)
        self.ranker: Ranker = make_ranker(ranker, alpha, **ranker_options)
        self.seed_transform = seed_transform
        self.explain = explain

    def graph(self, candidates: Sequence[Candidate]) -> CandidateGraph:
        """The candidate graph the ranker sees (useful for inspection and plots)."""
        return build_graph(validate_candidates(candidates), self.proximities)

    def rerank(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | None = None,
        top_n: int | None = None,
    ) -> list[RankedCandidate]:
        """Return the candidates in their new order (best first), ``top_n`` of them if given."""
        candidates, scores = _validated(candidates)
        if top_n is not None and (not isinstance(top_n, int) or top_n < 0):
            raise ValueError(f"top_n must be a non-negative integer or None, got {top_n!r}")
        if not candidates:
            return []
        seeds = make_seeds(candidates, self.seed_transform, scores)
        graph = build_graph(candidates, self.proximities)
        context = RankContext(candidates, query, query_embedding)
        ranked = np.asarray(self.ranker.rank(graph, seeds, context), dtype=np.float64).ravel()
        if ranked.shape != seeds.shape or not np.all(np.isfinite(ranked)):
            raise ValueError(
                f"ranker {self.ranker.name!r} returned {ranked.shape[0]} scores for "
                f"{len(candidates)} candidates, or non-finite scores"
            )
        return _ranked(candidates, graph, ranked, top_n, self.explain)


def validate_candidates(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Check types, ids and scores up front so errors name the problem, not a deep frame."""
    return _validated(candidates)[0]


def _validated(candidates: Sequence[Candidate]) -> tuple[list[Candidate], np.ndarray | None]:
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
        candidates = list(candidates)
    items = list(candidates)
    for position, candidate in enumerate(items):
        if type(candidate) is Candidate and type(candidate.id) is str and candidate.id:
            continue
        if not isinstance(candidate, Candidate):
            raise TypeError(
                f"candidate at position {position} is a {type(candidate).__name__}, "
                "not a grapher_core.Candidate"
            )
        if not isinstance(candidate.id, str) or not candidate.id:
            raise ValueError(f"candidate at position {position} has an empty or non-string id")
    if len({c.id for c in items}) != len(items):
        duplicates = [i for i, count in Counter(c.id for c in items).items() if count > 1]
        raise ValueError(f"duplicate candidate ids: {_names(duplicates)}")
    return items, original_scores(items)  # raises on partial, NaN, inf or non-numeric scores


def _ranked(candidates: Sequence[Candidate], graph: CandidateGraph, scores: np.ndarray,
            top_n: int | None, explain: int) -> list[RankedCandidate]:
    n = len(candidates)
    positions = np.arange(n)
    order = np.lexsort((positions, -scores))  # best score first; ties keep the input order
    if top_n is not None:
        order = order[:top_n]
    explanations = _explanations(graph, scores, order, explain) if explain else {}
    return [
        RankedCandidate(
            id=candidates[i].id,
            score=float(scores[i]),
            original_score=None if candidates[i].score is None else float(candidates[i].score),
            rank=new_rank + 1,
            original_rank=int(i) + 1,
            candidate=candidates[i],
            explanation=explanations.get(int(i), ()),
        )
        for new_rank, i in enumerate(order)
    ]


def _explanations(graph: CandidateGraph, scores: np.ndarray, rows: np.ndarray,
                  limit: int) -> dict[int, tuple[Contribution, ...]]:
    """For each returned candidate, the neighbours with the largest weighted share of score.

    The share of neighbour j in i's score is ``W[i, j] * score[j]`` with ``W`` the row-normalised
    adjacency -- exactly GCS's smoothing term up to the factor ``1 - alpha``, and a faithful
    reading of "who lifted it" for the other rankers. Rows are read straight from the csr
    arrays: only the returned candidates' rows are touched.
    """
    if graph.n_edges == 0:
        return {}
    adjacency = graph.adjacency
    kinds = list(graph.by_kind.items())
    out: dict[int, tuple[Contribution, ...]] = {}
    for i in rows.tolist():
        start, end = adjacency.indptr[i], adjacency.indptr[i + 1]
        if start == end:
            continue
        neighbours = adjacency.indices[start:end]
        weights = adjacency.data[start:end]
        shares = weights * scores[neighbours] / weights.sum()
        top = np.argsort(-shares, kind="stable")[:limit]
        chosen = neighbours[top]
        kinds_of: list[tuple[str, ...]]
        if len(kinds) == 1:
            kinds_of = [(kinds[0][0],)] * len(top)
        else:
            present = [np.isin(chosen, m.indices[m.indptr[i]:m.indptr[i + 1]]) for _, m in kinds]
            kinds_of = [tuple(k for (k, _), p in zip(kinds, present, strict=True) if p[t])
                        for t in range(len(top))]
        out[i] = tuple(
            Contribution(neighbour_id=graph.ids[j], kinds=kind, edge_weight=weight,
                         contribution=share)
            for j, kind, weight, share in zip(chosen.tolist(), kinds_of, weights[top].tolist(),
                                              shares[top].tolist(), strict=True)
        )
    return out
