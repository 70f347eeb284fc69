"""Non-graph comparators a sceptical user would try before a graph reranker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from grapher_core.edges.graph import CandidateGraph
from grapher_core.ranking.base import RankContext, Ranker
from grapher_core.ranking.registry import register_ranker

__all__ = ["DatabaseFirstRanker"]


@dataclass(frozen=True)
class DatabaseFirstRanker:
    """Tables of the top-1 table's database first, the retriever's order otherwise.

    Shows what database locality alone buys on table retrieval, so the graph's gain is read
    against it. Candidates without ``metadata[field]`` keep their retriever order after the
    promoted ones.
    """

    field: str = "db_id"
    name: str = "db-first"

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        s = np.asarray(seeds, dtype=np.float64)
        if s.size == 0:
            return s
        top = int(np.argmax(s))
        database = context.candidates[top].metadata.get(self.field)
        if database is None:
            return s
        same = np.array([c.metadata.get(self.field) == database for c in context.candidates])
        # seeds are non-negative after the reranker's seed transform; shift by more than the range
        return s + same * (float(s.max() - s.min()) + 1.0)


def _make_database_first(**options: Any) -> Ranker:
    return cast(Ranker, DatabaseFirstRanker(**options))


register_ranker("db-first", _make_database_first)
