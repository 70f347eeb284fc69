"""The default GCS rank step (degree form, slow-mode jump, csr scaling kernels) against a plain
dense solve of its fixed point, on the graph shapes that stress it: hub-dense entity graphs
(asymmetric weights), foreign-key stars, isolated nodes and kinds weighted apart."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import scipy.sparse as sp

from grapher_bench.latency.rerank import WORKLOADS
from grapher_core.edges.entities import SharedEntities
from grapher_core.edges.graph import CandidateGraph, build_graph
from grapher_core.ranking import propagation
from grapher_core.ranking.base import RankContext
from grapher_core.ranking.propagation import GCSRanker, gcs_scores

Graph = Callable[[np.random.Generator], np.ndarray]


def reference_gcs(
    adjacency: np.ndarray,
    seeds: np.ndarray,
    alpha: float,
    exponent: float,
    degrees_of: np.ndarray | None = None,
) -> np.ndarray:
    """``max(alpha (I - (1 - alpha) W)^-1 s, s)`` with ``W = D^-b A D^(b-1)``, ``d`` the mean of
    in- and out-weight (1 where there is none), all dense."""
    source = adjacency if degrees_of is None else degrees_of
    d = 0.5 * (source.sum(axis=1) + source.sum(axis=0))
    d = np.where(d > 0, d, 1.0)
    w = d[:, None] ** -exponent * adjacency * d[None, :] ** (exponent - 1.0)
    p = alpha * np.linalg.solve(np.eye(len(seeds)) - (1.0 - alpha) * w, seeds)
    return np.maximum(p, seeds)


def zipf_entities(rng: np.random.Generator, n: int = 200, vocabulary: int = 150) -> np.ndarray:
    """Shared-entity weights as the entity proximity gives them (``shared / |E_j|``): a few
    entities held by most nodes, so nearly complete and asymmetric."""
    weights = 1.0 / np.arange(1, vocabulary + 1)
    picks = rng.choice(vocabulary, size=(n, 6), p=weights / weights.sum())
    incidence = np.zeros((n, vocabulary))
    incidence[np.arange(n)[:, None], picks] = 1.0
    a = incidence @ incidence.T / np.maximum(incidence.sum(axis=1), 1.0)[None, :]
    np.fill_diagonal(a, 0.0)
    return a


def foreign_key_star(rng: np.random.Generator, n: int = 120) -> np.ndarray:
    """A few hub tables, every other table referencing one or two of them: bipartite."""
    hubs = 4
    a = np.zeros((n, n))
    for i in range(hubs, n):
        for h in rng.choice(hubs, int(rng.integers(1, 3)), replace=False):
            a[i, h] = a[h, i] = 1.0
    return a


def with_isolated(rng: np.random.Generator) -> np.ndarray:
    """A hub-dense graph with a fifth of its nodes cut off entirely."""
    a = zipf_entities(rng, 100)
    cut = rng.choice(100, 20, replace=False)
    a[cut, :] = 0.0
    a[:, cut] = 0.0
    return a


def sparse_random(rng: np.random.Generator, n: int = 150) -> np.ndarray:
    """Random asymmetric weights, about 5 out-edges a node."""
    a = rng.random((n, n)) * (rng.random((n, n)) < 5 / n)
    np.fill_diagonal(a, 0.0)
    return a


GRAPHS: dict[str, Graph] = {
    "zipf": zipf_entities,
    "foreign_keys": foreign_key_star,
    "isolated": with_isolated,
    "sparse": sparse_random,
}


def rank_seeds(rng: np.random.Generator, n: int) -> np.ndarray:
    """``1 / rank`` over a random order: the default seed policy."""
    return 1.0 / (rng.permutation(n) + 1.0)


@pytest.mark.parametrize("shape", sorted(GRAPHS))
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("alpha", "exponent"), [(0.1, 0.75), (0.1, 0.5), (0.3, 1.0)])
def test_degree_gcs_matches_the_dense_solve(
    shape: str, seed: int, alpha: float, exponent: float
) -> None:
    """At ``tol`` 1e-10: the default 1e-8 is itself up to 3e-9 from the fixed point on the
    foreign-key stars (as it was before the jump), which is the stopping rule's, not the
    fast path's."""
    rng = np.random.default_rng(seed)
    a = GRAPHS[shape](rng)
    s = rank_seeds(rng, len(a))
    fast = gcs_scores(
        sp.csr_matrix(a), s, alpha, tol=1e-10, normalisation="degree", degree_exponent=exponent
    )
    np.testing.assert_allclose(fast, reference_gcs(a, s, alpha, exponent), rtol=0, atol=1e-9)


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_default_ranker_on_the_latency_workloads_matches_the_dense_solve(workload: str) -> None:
    """The rank step ``grapher-bench bench-latency`` times, at the default settings."""
    candidates = WORKLOADS[workload](200)
    graph = build_graph(candidates, [SharedEntities("entities")])
    s = rank_seeds(np.random.default_rng(0), 200)
    ranker = GCSRanker()
    scores = ranker.rank(graph, s, RankContext(candidates))
    a = graph.adjacency.toarray()
    expected = reference_gcs(a, s, ranker.alpha, ranker.degree_exponent)
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_ranker_with_kind_weights_matches_the_dense_solve(seed: int) -> None:
    rng = np.random.default_rng(seed)
    conceptual = zipf_entities(rng, 120)
    structural = foreign_key_star(rng, 120)
    graph = CandidateGraph(
        tuple(f"c{i}" for i in range(120)),
        sp.csr_matrix(conceptual + structural),
        {"conceptual": sp.csr_matrix(conceptual), "structural": sp.csr_matrix(structural)},
    )
    s = rank_seeds(rng, 120)
    ranker = GCSRanker(kind_weights={"structural": 0.5, "conceptual": 0.8})
    scores = ranker.rank(graph, s, RankContext(()))
    weighted = 0.8 * conceptual + 0.5 * structural
    expected = reference_gcs(
        weighted, s, ranker.alpha, ranker.degree_exponent, conceptual + structural
    )
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-9)


def test_isolated_nodes_keep_their_seed_exactly() -> None:
    rng = np.random.default_rng(7)
    a = with_isolated(rng)
    s = rank_seeds(rng, len(a))
    alone = np.flatnonzero((a.sum(axis=0) + a.sum(axis=1)) == 0)
    assert alone.size >= 20
    scores = gcs_scores(sp.csr_matrix(a), s, normalisation="degree")
    assert np.array_equal(scores[alone], s[alone])


def test_the_jump_removes_the_slow_mode_of_hub_dense_graphs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On an asymmetric hub-dense graph the plain iteration needs over 100 mat-vecs; the jump
    leaves a fraction of them and lands on the same fixed point."""
    rng = np.random.default_rng(0)
    a = sp.csr_matrix(zipf_entities(rng))
    s = rank_seeds(rng, a.shape[0])
    data = propagation._degree_normalised_data(a, 0.75, 0.9)
    calls = [0]
    kernel = propagation._csr_matvec
    assert kernel is not None

    def counted(*args: object) -> None:
        calls[0] += 1
        kernel(*args)

    monkeypatch.setattr(propagation, "_csr_matvec", counted)
    runs = {}
    for jump in (False, True):
        calls[0] = 0
        p = propagation._iterate_affine(
            (a.indptr, a.indices, data), 0.1 * s, s, 1e-8, 10_000, "t", 0.9, extrapolate=jump
        )
        runs[jump] = (calls[0], p)
    assert runs[False][0] > 100
    assert runs[True][0] * 3 < runs[False][0]
    expected = reference_gcs(a.toarray(), s, 0.1, 0.75)
    np.testing.assert_allclose(np.maximum(runs[True][1], s), expected, rtol=0, atol=1e-9)
