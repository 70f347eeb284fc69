"""Graph-based score adjustment (query-aware GNN paper, Algorithm 9): a cheap non-learned ranker.

``combined_i = alpha * s_i + (1 - alpha) * mean(w_ij over i's semantic out-edges)``: a candidate
whose nearest neighbours among the candidates are close to it gains, an isolated one loses. The
paper averages the weights of the semantic edges of the chunk's node in its document's graph;
here the graph is the candidate graph (whatever proximity produced edges of ``kind``, normally
:meth:`grapher_core.edges.semantic.SemanticKNN.paper`, whose weights are cosines).

Choices where the paper is silent: a candidate with no semantic edge gets a graph score of 0
(the paper's ``mean([])`` is undefined); ``alpha`` defaults to the value ``grapher-bench
qagnn-eval`` tunes on hotpotqa_sentences (docs/qa_gnn.md). Seeds are the reranker's seeds
(raw cosines for a dense retriever), so both terms are on the cosine scale.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from grapher_core.edges.checks import FLAG, KIND
from grapher_core.edges.graph import CandidateGraph
from grapher_core.errors import InputError
from grapher_core.ranking.base import RANKER_NAME, RankContext
from grapher_core.utils.callsite import warn, warn_once
from grapher_core.utils.schema import DeclaredFields, Schema, Spec, check_fields

__all__ = ["DEFAULT_ADJUST_ALPHA", "ScoreAdjustRanker", "semantic_support"]

DEFAULT_ADJUST_ALPHA = 0.7
_log = logging.getLogger(__name__)
QA_ADJUST_LOSES = (
    "qa-adjust (the query-aware GNN paper's Algorithm 9) is not recommended on strong "
    "retrievers: it loses Recall@5 to the dense order wherever measured (hotpotqa_sentences "
    "-3.9 and 2wikimultihopqa_sentences -4.6 points, p <= 0.0013; docs/qa_gnn.md); measure it "
    "on your data before relying on it"
)
"""Said once when the ranker is built: picking it must not be a silent loss."""
_warned: set[str] = set()


def semantic_support(matrix: sp.csr_matrix | None, n: int) -> np.ndarray:
    """Mean weight of each row's stored edges (0 for a row without edges)."""
    if matrix is None or matrix.nnz == 0:
        return np.zeros(n)
    csr = sp.csr_matrix(matrix)
    counts = np.diff(csr.indptr).astype(np.float64)
    sums = np.asarray(csr.sum(axis=1), dtype=np.float64).ravel()
    return np.divide(sums, counts, out=np.zeros(n), where=counts > 0)


@dataclass(frozen=True)
class ScoreAdjustRanker(DeclaredFields):
    """``alpha * seed + (1 - alpha) * mean semantic edge weight`` (paper Algorithm 9).

    ``kind``: which edges count (default ``"semantic"``). A graph without edges of that kind
    leaves the order unchanged (scores ``alpha * seed``) and is reported once;
    ``strict=True`` raises instead.
    """

    FIELDS: ClassVar[Schema] = {
        "alpha": Spec("float", low=0.0, high=1.0, open_low=True),
        "kind": KIND,
        "strict": FLAG,
        "name": RANKER_NAME,
    }
    alpha: float = DEFAULT_ADJUST_ALPHA
    kind: str = "semantic"
    strict: bool = False
    name: str = "qa-adjust"
    reads_scores: ClassVar[bool] = True  # adds to the retriever's score

    def __post_init__(self) -> None:
        check_fields(self)
        warn_once(QA_ADJUST_LOSES, logger=__name__)

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        s = np.asarray(seeds, dtype=np.float64).ravel()
        matrix = graph.by_kind.get(self.kind)
        if matrix is None and graph.n > 1:
            message = (
                f"{self.name}: the candidate graph has no {self.kind!r} edges (kinds: "
                f"{sorted(graph.by_kind) or 'none'}); add SemanticKNN.paper() to the "
                "proximities. Scores are the seeds alone."
            )
            if self.strict:
                raise InputError(message)
            if message not in _warned:
                _warned.add(message)
                _log.warning(message)
                warn(message)
        return self.alpha * s + (1.0 - self.alpha) * semantic_support(matrix, graph.n)
