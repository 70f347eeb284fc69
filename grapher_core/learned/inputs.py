"""What every learned ranker reads before its network, in one place.

The GAT/MLP, G-RAG and query-aware GNN rankers all need the same three things: the query
vector, one vector per candidate (given ones used as they are, the others embedded in one
batch), both checked against the checkpoint's embedding dimension, and a scope that limits
torch's threads for one call (:func:`~grapher_core.utils.threads.torch_threads`). Each ranker
passes its own dimension check, so errors name its checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.errors import InputError

if TYPE_CHECKING:
    from grapher_core.edges.graph import CandidateGraph
    from grapher_core.embeddings import Embedder
    from grapher_core.ranking.base import RankContext

__all__ = ["check_rank_inputs", "default_embedder_checked", "object_vectors", "query_vector"]

DimensionCheck = Callable[[int], None]
"""Raises, naming both dimensions, when a vector's size is not the checkpoint's."""


def check_rank_inputs(graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> int:
    """The number of candidates, after checking that graph, seeds and candidates agree."""
    n = graph.n
    size = np.asarray(seeds).size
    if len(context.candidates) != n or size != n:
        raise InputError(
            f"graph has {n} nodes but got {len(context.candidates)} candidates and {size} seeds"
        )
    return n


def default_embedder_checked(check_name: Callable[[str | None], None]) -> Embedder:
    """The packaged embedding model, refused by ``check_name`` when the checkpoint was trained
    on another one (a learned ranker builds it lazily, only when no vectors were given)."""
    from grapher_core.embeddings import default_embedder

    embedder = default_embedder()
    check_name(embedder.name)
    return embedder


def query_vector(
    context: RankContext,
    embedder: Callable[[], Embedder],
    check_dimension: DimensionCheck,
    ranker: str,
) -> np.ndarray:
    """The query's vector: the given one, else the query text embedded."""
    if context.query_embedding is not None:
        vector = np.asarray(context.query_embedding, dtype=np.float32).ravel()
    elif context.query:
        vector = np.asarray(embedder().embed_query(context.query), dtype=np.float32).ravel()
    else:
        raise InputError(
            f"the {ranker} ranker needs the query: pass query= (text) or "
            "query_embedding= to rerank()"
        )
    check_dimension(vector.size)
    if not np.all(np.isfinite(vector)):
        raise InputError("query_embedding contains NaN or inf")
    return vector


def object_vectors(
    candidates: Sequence[Candidate],
    dim: int,
    embedder: Callable[[], Embedder],
    check_dimension: DimensionCheck,
) -> np.ndarray:
    """One float32 row per candidate: its own vector, else its text embedded (one batch)."""
    given = [c.embedding for c in candidates]
    if given and all(v is not None for v in given):  # the common case, in one numpy call
        try:
            stacked = np.asarray(np.stack(given), dtype=np.float32)  # type: ignore[arg-type]
        except ValueError:  # ragged: fall through to the per-candidate checks
            stacked = None
        if (
            stacked is not None
            and stacked.shape == (len(candidates), dim)
            and np.all(np.isfinite(stacked))
        ):
            return stacked
    out = np.empty((len(candidates), dim), dtype=np.float32)
    missing: list[int] = []
    for i, candidate in enumerate(candidates):
        if candidate.embedding is None:
            missing.append(i)
            continue
        vector = np.asarray(candidate.embedding, dtype=np.float32).ravel()
        if vector.size != dim:
            check_dimension(vector.size)  # raises, naming the dimensions
        out[i] = vector
    if missing:
        empty = [candidates[i].id for i in missing if not candidates[i].text]
        if empty:
            raise InputError(f"candidates without embedding and without text: {empty[:5]}")
        vectors = np.asarray(
            embedder().embed_documents([candidates[i].text for i in missing]), dtype=np.float32
        )
        if vectors.ndim != 2 or vectors.shape[1] != dim:
            check_dimension(int(vectors.shape[-1]))
        if vectors.shape[0] != len(missing):
            raise InputError(
                f"the embedder returned {vectors.shape[0]} vectors for {len(missing)} texts"
            )
        out[missing] = vectors
    if not np.all(np.isfinite(out)):
        bad = [c.id for c, row in zip(candidates, out, strict=True) if not np.all(np.isfinite(row))]
        raise InputError(f"candidate embeddings contain NaN or inf: {bad[:5]}")
    return out
