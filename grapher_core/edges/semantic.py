"""Edges from the vectors themselves: each candidate to its nearest neighbours among the
candidates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from grapher_core.candidates import Candidate
from grapher_core.edges.base import index_by, links_to_matrix
from grapher_core.edges.checks import (
    FLAG,
    KIND,
    OPTIONAL_FIELD_NAME,
    WEIGHT,
    check_proximity,
)
from grapher_core.errors import InputError
from grapher_core.utils.schema import DeclaredFields, Schema, Spec

_NO_INDEX = np.zeros(0, dtype=np.int64)
MAX_COUNT = 1 << 31
"""The largest ``k`` and ``block_size`` (an int32 index): larger is a mistake, not a setting."""


@dataclass(frozen=True)
class SemanticKNN(DeclaredFields):
    """Semantic proximity: each candidate linked to its ``k`` most similar others (cosine >= τ).

    Defaults follow the query-aware GNN paper's k and τ (top-5, τ = 0.6) but keep the library's
    original edges: weight 1, made symmetric. The paper's Algorithm 1 is
    :meth:`SemanticKNN.paper`: ``weighted=True`` (weight = the cosine similarity),
    ``symmetric=False`` (``i -> j`` for the top-k ``j`` of ``i`` only, so in-degrees vary).
    ``symmetric=True`` with ``weighted=True`` keeps the larger of the two directions (the same
    cosine either way). ``scope_field`` limits edges to candidates that share that metadata
    value (``"doc_id"``: the paper's per-document graphs); candidates without it get none.

    ``k`` is an integer >= 1, ``threshold`` a finite cosine in [-1, 1] and ``weight`` a
    finite number > 0, all checked when the proximity is made (a NaN threshold would compare
    false with every similarity and silently make no edges).

    Candidates without an embedding get no semantic edges; an embedding holding NaN or inf, one
    that is not a vector of numbers (a string, say) or one whose dimension differs from the
    other candidates' raises :class:`~grapher_core.errors.InputError` naming the candidate.
    Similarities are
    computed in row blocks so memory stays bounded for large candidate sets; this is the one
    proximity whose cost is inherently O(n^2 d).
    """

    needs_embeddings: ClassVar[bool] = True  # edges come from the candidates' vectors
    FIELDS: ClassVar[Schema] = {
        "k": Spec("int", low=1, high=MAX_COUNT),
        "threshold": Spec("float", low=-1.0, high=1.0, fix="it is a cosine similarity"),
        "kind": KIND,
        "weight": WEIGHT,
        "symmetric": FLAG,
        "block_size": Spec("int", low=1, high=MAX_COUNT),
        "weighted": FLAG,
        "scope_field": OPTIONAL_FIELD_NAME,
    }
    k: int = 5
    threshold: float = 0.6
    kind: str = "semantic"
    weight: float = 1.0
    symmetric: bool = True
    block_size: int = 2048
    weighted: bool = False
    scope_field: str | None = None

    def __post_init__(self) -> None:
        check_proximity(self)

    @classmethod
    def paper(
        cls,
        *,
        k: int = 5,
        threshold: float = 0.6,
        scope_field: str | None = None,
        weight: float = 1.0,
    ) -> SemanticKNN:
        """Algorithm 1 of the query-aware GNN paper: directed top-k, weight = similarity."""
        return cls(
            k=k,
            threshold=threshold,
            weight=weight,
            symmetric=False,
            weighted=True,
            scope_field=scope_field,
        )

    def adjacency(self, candidates: Sequence[Candidate]) -> sp.csr_matrix:
        n = len(candidates)
        present = [i for i, c in enumerate(candidates) if c.embedding is not None]
        if len(present) < 2:
            return sp.csr_matrix((n, n))
        groups: list[list[int]]
        if self.scope_field is None:
            groups = [present]
        else:
            by_scope = index_by(
                (i, str(value))
                for i in present
                if (value := candidates[i].metadata.get(self.scope_field)) is not None
                and str(value) != ""
            )
            groups = [members for members in by_scope.values() if len(members) > 1]
        rows: list[np.ndarray] = [_NO_INDEX]
        cols: list[np.ndarray] = [_NO_INDEX]
        sims: list[np.ndarray] = [np.zeros(0)]
        for members in groups:
            r, c, s = self._top_k(candidates, members)
            rows.append(r)
            cols.append(c)
            sims.append(s)
        row, col, sim = np.concatenate(rows), np.concatenate(cols), np.concatenate(sims)
        if not self.weighted:
            return links_to_matrix(row, col, n, symmetric=self.symmetric)
        directed = links_to_matrix(row, col, n, np.maximum(sim, 0.0), binary=False)
        return directed.maximum(directed.T).tocsr() if self.symmetric else directed

    def _top_k(
        self, candidates: Sequence[Candidate], members: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Directed top-k edges (rows, cols, cosines) among ``members`` (candidate positions)."""
        vectors = _stacked(candidates, members)
        finite = np.isfinite(vectors).all(axis=1)
        if not finite.all():  # NaN compares false with every threshold: no edge, no warning
            bad = [candidates[members[i]].id for i in np.flatnonzero(~finite)[:5]]
            raise InputError(
                f"SemanticKNN: embeddings with NaN or inf values for candidates "
                f"{bad}{' ...' if (~finite).sum() > 5 else ''}"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms == 0, 1.0, norms)
        k = min(self.k, len(members) - 1)
        index = np.asarray(members)
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        sims: list[np.ndarray] = []
        for start in range(0, len(members), self.block_size):
            block = vectors[start : start + self.block_size] @ vectors.T
            local = np.arange(block.shape[0])
            block[local, start + local] = -np.inf
            top = np.argpartition(-block, k - 1, axis=1)[:, :k]
            similarity = np.take_along_axis(block, top, axis=1)
            keep = similarity >= self.threshold
            rows.append(index[np.repeat(start + local, k).reshape(-1, k)[keep]])
            cols.append(index[top[keep]])
            sims.append(similarity[keep])
        return np.concatenate(rows), np.concatenate(cols), np.concatenate(sims)


def _as_vector(candidate: Candidate) -> np.ndarray:
    """One candidate's embedding as a flat float vector, or an error naming the candidate.

    A string is refused outright: numpy would read ``"0.5"`` as a one-number vector.
    """
    value: Any = candidate.embedding
    if isinstance(value, (str, bytes)):
        raise InputError(
            f"SemanticKNN: candidate {candidate.id!r} has a {type(value).__name__} as its "
            f"embedding ({value[:40]!r}), not a vector of numbers"
        )
    try:
        vector = np.asarray(value, dtype=np.float64).ravel()
    except (TypeError, ValueError) as error:
        raise InputError(
            f"SemanticKNN: candidate {candidate.id!r} has an embedding that is not a vector "
            f"of numbers ({type(value).__name__}: {error})"
        ) from error
    if vector.size == 0:
        raise InputError(f"SemanticKNN: candidate {candidate.id!r} has an empty embedding")
    return vector


def _stacked(candidates: Sequence[Candidate], members: Sequence[int]) -> np.ndarray:
    """The members' vectors as one matrix; a dimension that differs from the first member's
    names both candidates (vectors from two embedding models cannot be compared)."""
    vectors = [_as_vector(candidates[i]) for i in members]
    dim = vectors[0].size
    for i, vector in zip(members, vectors, strict=True):
        if vector.size != dim:
            raise InputError(
                f"SemanticKNN: candidate {candidates[i].id!r} has an embedding of dimension "
                f"{vector.size}, candidate {candidates[members[0]].id!r} one of dimension "
                f"{dim}; all candidates' vectors must come from the same embedding model"
            )
    return np.vstack(vectors)
