"""The result of one rerank: the ranked candidates and what the graph was, with its picture.

A value (frozen): every engine returns one, every door converts it back to its framework's
types; :meth:`Reranking.to_networkx` and :meth:`Reranking.draw` show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grapher_core.candidates import RankedCandidate
from grapher_core.edges.graph import CandidateGraph
from grapher_core.errors import InputError, MissingDependencyError
from grapher_core.ranking.explain import explanations

__all__ = ["MOVES", "Reranking", "move"]

MOVES = ("up", "down", "same")
"""How a candidate moved between the retriever's order and the reranked one."""


@dataclass(frozen=True)
class Reranking:
    """One call's result with what the graph was: the ranked candidates, the number of
    (directed) edges per kind -- a symmetric link counts twice -- and the proximities used
    (the detected ones when none were given).

    ``graph``, ``seeds`` and ``scores`` (the ranker's raw score of every candidate, in input
    order, returned or not) and ``top_n`` are what :meth:`to_networkx` and
    :func:`grapher_core.picture.draw` show; they are ``None`` for an empty call.
    """

    ranked: list[RankedCandidate]
    edges: Mapping[str, int] = field(default_factory=dict)
    proximities: tuple[Any, ...] = ()
    graph: CandidateGraph | None = field(default=None, repr=False, compare=False)
    seeds: np.ndarray | None = field(default=None, repr=False, compare=False)
    scores: np.ndarray | None = field(default=None, repr=False, compare=False)
    top_n: int | None = None

    def to_networkx(self, top_k: int | None = None) -> Any:
        """The candidate graph as a ``networkx.DiGraph`` (needs the ``draw`` extra).

        Nodes are candidate ids with ``id``, ``rank_before`` (the retriever's order),
        ``rank_after``, ``seed``, ``score`` (the ranker's), ``relevance`` (returned candidates;
        else ``None``), ``moved`` (one of :data:`MOVES`), ``shift`` (places gained),
        ``in_top_k``, ``newcomer`` (in the top ``top_k`` now, not before), ``returned``,
        ``expanded`` and ``why`` / ``why_kinds`` (the neighbour with the largest share of the
        smoothing term and the kinds of the edges to it; ``None`` without edges). Edges carry
        ``kind`` (kinds joined by ``+`` when several proximities link the pair), ``kinds``,
        ``weight`` (the summed weight the ranker sees) and ``weights`` (per kind).
        ``top_k``: default the call's ``top_n``, else 10 (at most the number of candidates).
        """
        try:
            import networkx as nx
        except ImportError as error:
            raise MissingDependencyError(
                "Reranking.to_networkx needs networkx: pip install 'grapher-rerank[draw]'"
            ) from error
        out = nx.DiGraph()
        graph, seeds, scores = self.graph, self.seeds, self.scores
        if graph is None or seeds is None or scores is None or graph.n == 0:
            return out
        n = graph.n
        k = top_k if top_k is not None else (self.top_n if self.top_n is not None else 10)
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InputError(f"top_k must be a non-negative integer or None, got {top_k!r}")
        k = min(k, n)
        after = np.empty(n, dtype=np.int64)
        after[np.lexsort((np.arange(n), -scores))] = np.arange(1, n + 1)
        returned = {r.id: r for r in self.ranked}
        position = {c: i for i, c in enumerate(graph.ids)}
        for r in self.ranked:  # the returned order wins (expansion may merge two rankings)
            if r.id in position:
                after[position[r.id]] = r.rank
        why = explanations(graph, scores, np.arange(n), 1)
        out.graph.update(top_k=k, edges=dict(self.edges))
        for i, node in enumerate(graph.ids):
            rank_after, rank_before = int(after[i]), i + 1
            item = returned.get(node)
            best = why.get(i, ())
            out.add_node(
                node,
                id=node,
                rank_before=rank_before,
                rank_after=rank_after,
                seed=float(seeds[i]),
                score=float(scores[i]),
                relevance=None if item is None else item.relevance,
                moved=move(rank_before, rank_after),
                shift=rank_before - rank_after,
                in_top_k=rank_after <= k,
                newcomer=rank_after <= k < rank_before,
                returned=item is not None,
                expanded=bool(item is not None and item.expanded),
                why=best[0].neighbour_id if best else None,
                why_kinds=best[0].kinds if best else (),
            )
        pairs: dict[tuple[int, int], dict[str, float]] = {}
        for kind, matrix in graph.by_kind.items():
            coo = matrix.tocoo()
            for i, j, w in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True):
                if w:
                    pairs.setdefault((i, j), {})[kind] = float(w)
        adjacency = graph.adjacency.tocsr()
        for (i, j), weights in pairs.items():
            kinds = tuple(weights)
            out.add_edge(
                graph.ids[i],
                graph.ids[j],
                kind=kinds[0] if len(kinds) == 1 else "+".join(kinds),
                kinds=kinds,
                weight=float(adjacency[i, j]),
                weights=weights,
            )
        return out

    def draw(self, path: Any = None, **options: Any) -> Any:
        """:func:`grapher_core.picture.draw` of this reranking (needs the ``draw`` extra)."""
        from grapher_core.picture import draw

        return draw(self, path, **options)


def move(before: int, after: int) -> str:
    """How a candidate moved, one of :data:`MOVES`."""
    return MOVES[0] if after < before else MOVES[1] if after > before else MOVES[2]
