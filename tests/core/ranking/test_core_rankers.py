"""GCS and PPR against hand-computed values and independent implementations."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from grapher_core.ranking.propagation import DEFAULT_GCS_ALPHA, gcs_scores, ppr_scores
from grapher_core.ranking.registry import make_ranker


def gcs_closed_form(a: np.ndarray, s: np.ndarray, alpha: float) -> np.ndarray:
    """Independent GCS: p* = alpha (I - (1 - alpha) W)^-1 s, dense, then max(p*, s)."""
    sums = a.sum(axis=1, keepdims=True)
    w = np.divide(a, sums, out=np.zeros_like(a), where=sums > 0)
    p = alpha * np.linalg.solve(np.eye(len(s)) - (1 - alpha) * w, s)
    return np.maximum(p, s)


def random_graph(rng: np.random.Generator, n: int, density: float) -> np.ndarray:
    a = rng.random((n, n)) * (rng.random((n, n)) < density)
    np.fill_diagonal(a, 0.0)
    return a


def test_gcs_hand_computed_path() -> None:
    # a - b, seeds (1, 0), alpha 0.5: p_a = .5 + .5 p_b, p_b = .5 p_a -> p_a = 2/3, p_b = 1/3.
    a = sp.csr_matrix(np.array([[0, 1.0], [1.0, 0]]))
    p = gcs_scores(a, [1.0, 0.0], alpha=0.5, tol=1e-14)
    np.testing.assert_allclose(p, [1.0, 1 / 3], atol=1e-12)  # max(2/3, 1) = 1 for a


def test_gcs_isolated_node_keeps_seed_and_hub_is_not_boosted_beyond_neighbours() -> None:
    # hub 0 linked to 1..4 (all low), 5 isolated
    a = np.zeros((6, 6))
    a[0, 1:5] = a[1:5, 0] = 1.0
    s = np.array([0.1, 0.2, 0.2, 0.2, 0.2, 0.9])
    p = gcs_scores(a, s, alpha=0.1)
    assert p[5] == pytest.approx(0.9)
    assert p[0] <= 0.2 + 1e-9  # an average of low neighbours stays low


@pytest.mark.parametrize("alpha", [0.1, 0.3, 0.5, 0.9])
@pytest.mark.parametrize("seed", range(5))
def test_gcs_matches_closed_form(alpha: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    a = random_graph(rng, n, 0.1)
    s = rng.random(n)
    expected = gcs_closed_form(a, s, alpha)
    np.testing.assert_allclose(gcs_scores(a, s, alpha, method="solve"), expected, atol=1e-9)
    np.testing.assert_allclose(
        gcs_scores(a, s, alpha, tol=1e-13, method="iterate"), expected, atol=1e-9
    )
    np.testing.assert_allclose(gcs_scores(a, s, alpha, method="iterate"), expected, atol=1e-6)
    np.testing.assert_allclose(gcs_scores(a, s, alpha, tol=1e-13), expected, atol=1e-9)


def test_gcs_solve_handles_directed_edges_into_sinks() -> None:
    # 0 -> 1 -> 2, node 2 has no out-edges: its fixed-point value alpha * s_2 feeds node 1.
    a = np.zeros((3, 3))
    a[0, 1] = a[1, 2] = 1.0
    s = np.array([0.2, 0.1, 0.9])
    expected = gcs_closed_form(a, s, 0.3)
    np.testing.assert_allclose(gcs_scores(a, s, 0.3, method="solve"), expected, atol=1e-12)
    np.testing.assert_allclose(
        gcs_scores(a, s, 0.3, method="iterate", tol=1e-14), expected, atol=1e-12
    )
    with pytest.raises(ValueError, match="method"):
        gcs_scores(a, s, 0.3, method="magic")


@pytest.mark.parametrize("alpha", [0.15, 0.5, 0.9])
@pytest.mark.parametrize("seed", range(5))
def test_ppr_matches_networkx(alpha: float, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 60))
    a = random_graph(rng, n, 0.08)  # sparse enough to leave dangling nodes
    s = rng.random(n)
    ours = ppr_scores(a, s, alpha, tol=1e-13)
    # Column-normalised P[i, j] = A[i, j] / sum_k A[k, j]: mass flows from j to i, i.e. along
    # the edge j -> i with weight A[i, j]; networkx's damping is 1 - alpha.
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_weighted_edges_from((j, i, a[i, j]) for i, j in zip(*np.nonzero(a), strict=True))
    personalization = {i: float(v) for i, v in enumerate(s)}
    reference = nx.pagerank(
        graph,
        alpha=1 - alpha,
        personalization=personalization,
        dangling=personalization,
        tol=1e-14,
        max_iter=10_000,
    )
    np.testing.assert_allclose(ours, [reference[i] for i in range(n)], atol=1e-6)
    assert ours.sum() == pytest.approx(1.0)


def test_ppr_dangling_mass_returns_to_seeds_and_zero_seeds_are_uniform() -> None:
    a = sp.csr_matrix((3, 3))
    np.testing.assert_allclose(ppr_scores(a, [2.0, 1.0, 1.0], 0.5), [0.5, 0.25, 0.25])
    np.testing.assert_allclose(ppr_scores(a, [0.0, 0.0, 0.0], 0.5), [1 / 3] * 3)


def test_ppr_over_ranks_hubs_where_gcs_does_not() -> None:
    # The paper's motivating failure: a low-scored hub linked to many low-scored nodes.
    n = 32
    a = np.zeros((n, n))
    a[0, 2:] = a[2:, 0] = 1.0  # node 0 is a hub
    s = np.full(n, 0.1)
    s[1] = 1.0  # node 1 (isolated) is the real answer
    s[0] = 0.05
    assert np.argmax(ppr_scores(a, s, 0.3)) == 0
    assert np.argmax(gcs_scores(a, s, 0.3)) == 1


@pytest.mark.parametrize("function", [gcs_scores, ppr_scores])
def test_bad_arguments(function: object) -> None:
    a = sp.csr_matrix((2, 2))
    with pytest.raises(ValueError, match="alpha"):
        function(a, [1, 1], alpha=0.0)  # type: ignore[operator]
    with pytest.raises(ValueError, match="alpha"):
        function(a, [1, 1], alpha=1.0)  # type: ignore[operator]
    with pytest.raises(ValueError, match="finite"):
        function(a, [1, np.nan], alpha=0.5)  # type: ignore[operator]
    with pytest.raises(ValueError, match="shape"):
        function(a, [1, 1, 1], alpha=0.5)  # type: ignore[operator]
    with pytest.raises(ValueError, match="non-negative"):
        function(sp.csr_matrix(np.array([[0, -1.0], [0, 0]])), [1, 1], alpha=0.5)  # type: ignore[operator]


def test_ppr_rejects_negative_seeds() -> None:
    with pytest.raises(ValueError, match="non-negative seeds"):
        ppr_scores(sp.csr_matrix((2, 2)), [1.0, -1.0], 0.5)


def test_inputs_not_modified() -> None:
    a = sp.csr_matrix(np.array([[0, 2.0], [1.0, 0]]))
    before = a.toarray().copy()
    s = np.array([0.3, 0.7])
    gcs_scores(a, s)
    ppr_scores(a, s)
    np.testing.assert_array_equal(a.toarray(), before)
    np.testing.assert_array_equal(s, [0.3, 0.7])


def test_make_ranker() -> None:
    assert make_ranker("gcs").name == "gcs"
    assert make_ranker("GCS", alpha=0.4).alpha == 0.4  # type: ignore[attr-defined]
    assert make_ranker("gcs").alpha == DEFAULT_GCS_ALPHA  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="unknown ranker 'nope'"):
        make_ranker("nope")
    with pytest.raises(TypeError, match="Ranker"):
        make_ranker(42)  # type: ignore[arg-type]


# --- properties -----------------------------------------------------------------------------

graphs = st.integers(min_value=1, max_value=25).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.floats(0.01, 5.0)),
            max_size=3 * n,
        ),
        st.lists(st.floats(0.0, 100.0), min_size=n, max_size=n),
        st.floats(0.05, 0.95),
        st.randoms(use_true_random=False),
    )
)


def _matrix(n: int, edges: list[tuple[int, int, float]]) -> sp.csr_matrix:
    a = np.zeros((n, n))
    for i, j, w in edges:
        if i != j:
            a[i, j] = w
    return sp.csr_matrix(a)


@settings(max_examples=150, deadline=None)
@given(graphs)
def test_gcs_properties(case: tuple) -> None:
    n, edges, seeds, alpha, rnd = case
    a = _matrix(n, edges)
    s = np.array(seeds)
    p = gcs_scores(a, s, alpha)
    np.testing.assert_allclose(gcs_scores(a, s, alpha, method="solve"), p, atol=1e-6)
    assert np.all(np.isfinite(p))
    assert np.all(p >= s)  # never below the seed
    isolated = np.asarray(a.sum(axis=1)).ravel() == 0
    np.testing.assert_allclose(p[isolated], s[isolated])
    assert p.max() <= s.max() + 1e-9  # a weighted average cannot exceed the best seed
    order = list(range(n))
    rnd.shuffle(order)
    perm = np.array(order)
    permuted = gcs_scores(a[perm][:, perm], s[perm], alpha)
    np.testing.assert_allclose(permuted, p[perm], atol=1e-7)


@settings(max_examples=100, deadline=None)
@given(graphs)
def test_ppr_properties(case: tuple) -> None:
    n, edges, seeds, alpha, rnd = case
    a = _matrix(n, edges)
    s = np.array(seeds)
    p = ppr_scores(a, s, alpha)
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    assert p.sum() == pytest.approx(1.0)
    order = list(range(n))
    rnd.shuffle(order)
    perm = np.array(order)
    np.testing.assert_allclose(ppr_scores(a[perm][:, perm], s[perm], alpha), p[perm], atol=1e-8)


def test_gcs_extrapolation_converges_fast_on_bipartite_graphs_with_the_same_result() -> None:
    import warnings

    from grapher_core.ranking.propagation import _iterate_affine, row_normalise

    # a star schema (hub table + 30 leaves) is bipartite: W has eigenvalue -1, so the literal
    # iteration converges like 0.9^k at alpha 0.1; the extrapolation removes that mode.
    n = 31
    a = np.zeros((n, n))
    a[0, 1:] = a[1:, 0] = 1.0
    s = np.linspace(1.0, 0.1, n)
    transition = row_normalise(sp.csr_matrix(a))
    transition.data *= 0.9
    with pytest.warns(UserWarning, match="did not converge"):
        _iterate_affine(transition, 0.1 * s, s, 1e-10, 60, "plain")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fast = _iterate_affine(transition, 0.1 * s, s, 1e-10, 60, "fast", damping=0.9)
    expected = gcs_closed_form(a, s, 0.1)
    np.testing.assert_allclose(np.maximum(fast, s), expected, atol=1e-9)
    np.testing.assert_allclose(gcs_scores(a, s, 0.1), expected, atol=1e-7)
