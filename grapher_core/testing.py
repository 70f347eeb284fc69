"""Contract checks for your own proximities, rankers and neighbour sources.

Each ``check_*`` function exercises an implementation on small generated inputs (empty, one
candidate, a few with every kind of metadata and embeddings) and raises
:class:`ContractError` naming the broken rule; it returns nothing when all hold. The library runs
them against every built-in implementation (``tests/core/test_core_contracts.py``); call them in
your own tests the same way:

>>> from grapher_core.testing import check_proximity
>>> check_proximity(MyProximity())

No test framework is imported: ``ContractError`` is an ``AssertionError``, which every runner
reports as a failure.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from grapher_core.candidates import Candidate
from grapher_core.edges.base import Proximity
from grapher_core.edges.graph import build_graph
from grapher_core.errors import GraphERError
from grapher_core.ranking.base import RankContext, Ranker
from grapher_core.ranking.seeds import make_seeds

__all__ = [
    "ContractError",
    "check_neighbour_source",
    "check_proximity",
    "check_ranker",
    "sample_candidates",
]


class ContractError(GraphERError, AssertionError):
    """An implementation breaks a rule the reranker relies on."""


def _require(condition: bool, what: Any, rule: str) -> None:
    if not condition:
        raise ContractError(f"{what!r}: {rule}")


def sample_candidates(n: int = 6, dim: int = 8, seed: int = 0) -> list[Candidate]:
    """``n`` candidates, best first, carrying every field the built-in proximities read:
    ``foreign_keys`` and ``links`` (ids), ``entities``, ``doc_id`` + ``chunk_index``, ``title``,
    ``mentions``, plus unit-length embeddings. Neighbouring candidates share entities and
    documents, so every built-in proximity finds some edges."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        vector = rng.normal(size=dim).astype(np.float32)
        out.append(
            Candidate(
                id=f"c{i}",
                text=f"object {i} about topic {i // 2}",
                score=float(1.0 - i / max(n, 1)),
                metadata={
                    "foreign_keys": [f"c{(i + 1) % n}"] if n > 1 else [],
                    "links": [f"c{(i + 2) % n}"] if n > 2 else [],
                    "entities": [f"topic {i // 2}", "shared"],
                    "doc_id": f"d{i // 3}",
                    "chunk_index": i % 3,
                    "title": f"title {i}",
                    "mentions": [f"title {(i + 1) % n}"] if n > 1 else [],
                },
                embedding=vector / np.linalg.norm(vector),
            )
        )
    return out


def _snapshot(candidates: Sequence[Candidate]) -> list[tuple[Any, ...]]:
    return [
        (
            c.id,
            c.text,
            c.score,
            copy.deepcopy(dict(c.metadata)),
            None if c.embedding is None else np.array(c.embedding, copy=True),
        )
        for c in candidates
    ]


def _unchanged(before: list[tuple[Any, ...]], candidates: Sequence[Candidate]) -> bool:
    after = _snapshot(candidates)
    for old, new in zip(before, after, strict=True):
        if old[:4] != new[:4]:
            return False
        if (old[4] is None) != (new[4] is None):
            return False
        if old[4] is not None and not np.array_equal(old[4], new[4]):
            return False
    return True


def check_proximity(proximity: Any, candidates: Sequence[Candidate] | None = None) -> None:
    """``kind`` a non-empty string, ``weight`` finite and >= 0; ``adjacency`` an ``n x n``
    scipy sparse matrix, finite and non-negative, with no self-loops, the same on a second call,
    for 0, 1 and several candidates, without changing them."""
    _require(
        isinstance(proximity, Proximity),
        proximity,
        "needs `kind`, `weight` and `adjacency(candidates)` (the Proximity protocol)",
    )
    _require(
        isinstance(proximity.kind, str) and bool(proximity.kind),
        proximity,
        "`kind` must be a non-empty string",
    )
    weight = proximity.weight
    _require(
        isinstance(weight, (int, float))
        and not isinstance(weight, bool)
        and math.isfinite(weight)
        and weight >= 0,
        proximity,
        f"`weight` must be a finite number >= 0, got {weight!r}",
    )
    given = list(candidates) if candidates is not None else sample_candidates()
    sets = [[], sample_candidates(1), given]
    for items in sets:
        n = len(items)
        before = _snapshot(items)
        matrix = proximity.adjacency(items)
        _require(
            sp.issparse(matrix),
            proximity,
            f"adjacency must return a scipy sparse matrix, got {type(matrix).__name__}",
        )
        _require(
            matrix.shape == (n, n),
            proximity,
            f"adjacency of {n} candidates must be {n} x {n}, got {matrix.shape}",
        )
        data = sp.csr_matrix(matrix)
        _require(
            bool(np.all(np.isfinite(data.data))) and bool(np.all(data.data >= 0)),
            proximity,
            "edge weights must be finite and >= 0",
        )
        _require(
            not np.any(data.diagonal() > 0) if n else True,
            proximity,
            "no self-loops: a candidate does not lift itself",
        )
        again = sp.csr_matrix(proximity.adjacency(items))
        _require(
            (again != data).nnz == 0,
            proximity,
            "adjacency must be deterministic (same candidates, same matrix)",
        )
        _require(
            _unchanged(before, items),
            proximity,
            "adjacency must not modify the candidates or their metadata",
        )


def check_ranker(
    ranker: Any, proximities: Sequence[Any] = (), candidates: Sequence[Candidate] | None = None
) -> None:
    """``name`` a non-empty string; ``rank`` returns one finite score per candidate, for a graph
    with and without edges, leaves the seeds and candidates as they were, and gives the same
    scores twice; ``needs_embeddings``, when declared, is a bool."""
    _require(
        isinstance(ranker, Ranker),
        ranker,
        "needs `name` and `rank(graph, seeds, context)` (the Ranker protocol)",
    )
    _require(
        isinstance(ranker.name, str) and bool(ranker.name),
        ranker,
        "`name` must be a non-empty string",
    )
    declared = getattr(ranker, "needs_embeddings", False)
    _require(isinstance(declared, bool), ranker, "`needs_embeddings` must be a bool")
    items = list(candidates) if candidates is not None else sample_candidates()
    query = np.asarray(items[0].embedding) if items and items[0].embedding is not None else None
    for proximity_set in ((), tuple(proximities)):
        graph = build_graph(items, proximity_set)
        seeds = make_seeds(items)
        seeds_before = seeds.copy()
        before = _snapshot(items)
        context = RankContext(items, "a question", query)
        scores = np.asarray(ranker.rank(graph, seeds, context), dtype=np.float64).ravel()
        _require(
            scores.shape == (len(items),),
            ranker,
            f"rank must return {len(items)} scores, got shape {scores.shape}",
        )
        _require(bool(np.all(np.isfinite(scores))), ranker, "scores must be finite")
        _require(bool(np.array_equal(seeds, seeds_before)), ranker, "rank must not modify seeds")
        _require(_unchanged(before, items), ranker, "rank must not modify the candidates")
        again = np.asarray(ranker.rank(graph, seeds, context), dtype=np.float64).ravel()
        _require(
            bool(np.allclose(scores, again, rtol=1e-6, atol=1e-9)),
            ranker,
            "rank must be deterministic (same inputs, same scores)",
        )


def check_neighbour_source(
    source: Any,
    present: Sequence[tuple[tuple[str | None, str], ...]],
    absent: tuple[tuple[str | None, str], ...] = ((None, "no-such-id"),),
) -> None:
    """``fetch([])`` is ``[]``; ``fetch(present)`` returns Candidates with unique string ids
    (at least one) and leaves ``present`` as it was; a key nothing matches returns ``[]``; a
    ``fetch`` that takes ``limit`` returns no more objects than it.

    ``present``: link keys the source holds objects for, e.g. ``[((None, "c1"),)]`` (by id) or
    ``[(("title", "Paris"),)]`` (by a metadata field).
    """
    _require(
        callable(getattr(source, "fetch", None)),
        source,
        "needs `fetch(keys)` (the NeighbourSource protocol)",
    )
    _require(list(source.fetch([])) == [], source, "fetch([]) must return []")
    keys = list(present)
    frozen = copy.deepcopy(keys)
    found = source.fetch(keys)
    _require(isinstance(found, list), source, f"fetch must return a list, got {type(found)}")
    _require(bool(found), source, f"fetch({keys!r}) found nothing")
    _require(
        all(isinstance(c, Candidate) for c in found),
        source,
        "fetch must return grapher_core.Candidate objects",
    )
    ids = [c.id for c in found]
    _require(all(isinstance(i, str) and i for i in ids), source, "ids must be non-empty strings")
    _require(keys == frozen, source, "fetch must not modify the keys")
    _require(source.fetch([absent]) == [], source, f"fetch([{absent!r}]) must return []")
    if "limit" in inspect.signature(source.fetch).parameters:
        _require(
            len(source.fetch(keys, limit=1)) <= 1,
            source,
            "fetch(keys, limit=1) must return at most one object",
        )
