from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from grapher_core import (
    AdjacentChunks,
    Candidate,
    ForeignKeys,
    SemanticKNN,
    SharedEntities,
    build_graph,
)
from grapher_core.edges.base import Proximity, links_to_matrix


def cands(*metas: dict, ids: list[str] | None = None) -> list[Candidate]:
    ids = ids or [f"c{i}" for i in range(len(metas))]
    return [Candidate(id=i, score=1.0, metadata=m) for i, m in zip(ids, metas, strict=True)]


def dense(matrix: sp.csr_matrix) -> np.ndarray:
    return np.asarray(matrix.todense())


class TestForeignKeys:
    def test_symmetric_links_weight_one(self) -> None:
        c = cands({"foreign_keys": ["b"]}, {}, {"foreign_keys": ["b", "b"]}, ids=["a", "b", "c"])
        a = dense(ForeignKeys().adjacency(c))
        assert a.tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]

    def test_directed_when_asked(self) -> None:
        c = cands({"links": ["b"]}, {}, ids=["a", "b"])
        a = dense(ForeignKeys("links", symmetric=False).adjacency(c))
        assert a.tolist() == [[0, 1], [0, 0]]

    def test_self_links_and_outside_ids_ignored(self) -> None:
        c = cands({"foreign_keys": ["a", "zzz"]}, {"foreign_keys": "[]"}, ids=["a", "b"])
        assert ForeignKeys().adjacency(c).nnz == 0

    def test_json_and_delimited_strings(self) -> None:
        c = cands({"fk": '["b"]'}, {"fk": "a|c"}, {}, ids=["a", "b", "c"])
        a = dense(ForeignKeys("fk").adjacency(c))
        assert a.tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]

    def test_target_field(self) -> None:
        c = cands({"title": "Paris", "mentions": ["France"]}, {"title": "France"}, ids=["p1", "p2"])
        a = dense(ForeignKeys("mentions", target_field="title").adjacency(c))
        assert a.tolist() == [[0, 1], [1, 0]]

    def test_missing_and_malformed_fields_mean_no_edges(self) -> None:
        c = cands({}, {"foreign_keys": None}, {"foreign_keys": {"x": 1}}, {"foreign_keys": 3.2})
        assert ForeignKeys().adjacency(c).nnz == 0


class TestSharedEntities:
    def test_weight_normalised_by_target_entity_count(self) -> None:
        # E0 = {x, y}, E1 = {x}, E2 = {y, z, w}
        c = cands({"entities": ["X", "y"]}, {"entities": ["x "]}, {"entities": "y|z|w"})
        a = dense(SharedEntities().adjacency(c))
        expected = np.array(
            [
                [0, 1 / 1, 1 / 3],  # |E0∩E1|/|E1| = 1, |E0∩E2|/|E2| = 1/3
                [1 / 2, 0, 0],
                [1 / 2, 0, 0],
            ]
        )
        np.testing.assert_allclose(a, expected)

    def test_duplicate_entities_count_once(self) -> None:
        c = cands({"entities": ["a", "A", "a"]}, {"entities": ["a", "b"]})
        a = dense(SharedEntities().adjacency(c))
        np.testing.assert_allclose(a, [[0, 0.5], [1.0, 0]])

    def test_max_share_drops_hub_entities(self) -> None:
        metas = [{"entities": ["common", f"e{i // 2}"]} for i in range(6)]
        c = cands(*metas)
        full = SharedEntities().adjacency(c)
        pruned = SharedEntities(max_share=0.5).adjacency(c)
        assert full.nnz == 30  # everyone shares "common"
        assert pruned.nnz == 6  # only the pairs (0,1), (2,3), (4,5), both ways
        np.testing.assert_allclose(pruned.data, 1.0)
        assert SharedEntities(max_holders=2).adjacency(c).nnz == 6

    def test_no_entities(self) -> None:
        assert SharedEntities().adjacency(cands({}, {"entities": []})).nnz == 0


class TestAdjacentChunks:
    def test_neighbours_in_same_document_only(self) -> None:
        c = cands(
            {"doc_id": "d", "chunk_index": 0},
            {"doc_id": "d", "chunk_index": "1"},
            {"doc_id": "d", "chunk_index": 3},
            {"doc_id": "e", "chunk_index": 2},
            {"doc_id": "d"},
            {"doc_id": "d", "chunk_index": "two"},
        )
        a = dense(AdjacentChunks().adjacency(c))
        assert set(zip(*np.nonzero(a), strict=True)) == {(0, 1), (1, 0)}


class TestSemanticKNN:
    def test_top_k_above_threshold(self) -> None:
        vectors = [np.array([1.0, 0.0]), np.array([0.9, 0.1]), np.array([0.0, 1.0]), None]
        c = [Candidate(id=f"c{i}", embedding=v) for i, v in enumerate(vectors)]
        a = dense(SemanticKNN(k=1, threshold=0.6).adjacency(c))
        assert set(zip(*np.nonzero(a), strict=True)) == {(0, 1), (1, 0)}

    def test_blocks_give_same_result(self) -> None:
        rng = np.random.default_rng(0)
        c = [Candidate(id=str(i), embedding=rng.normal(size=8)) for i in range(50)]
        whole = SemanticKNN(k=3, threshold=0.0).adjacency(c)
        blocked = SemanticKNN(k=3, threshold=0.0, block_size=7).adjacency(c)
        assert (whole != blocked).nnz == 0
        assert whole.nnz >= 50 * 3


class TestGraph:
    def test_kinds_weighted_and_summed(self) -> None:
        c = cands({"foreign_keys": ["c1"], "entities": ["x"]}, {"entities": ["x"]})
        g = build_graph(c, [ForeignKeys(weight=2.0), SharedEntities(weight=0.5)])
        assert set(g.by_kind) == {"structural", "conceptual"}
        np.testing.assert_allclose(dense(g.adjacency), [[0, 2.5], [2.5, 0]])
        assert g.n == 2 and g.n_edges == 2
        assert g.degrees().tolist() == [1, 1]

    def test_custom_proximity_protocol(self) -> None:
        class SameAuthor:
            kind = "authorship"
            weight = 1.0

            def adjacency(self, candidates: list[Candidate]) -> sp.csr_matrix:
                authors = [c.metadata.get("author") for c in candidates]
                rows = [
                    i for i, a in enumerate(authors) for j, b in enumerate(authors) if a and a == b
                ]
                cols = [
                    j for i, a in enumerate(authors) for j, b in enumerate(authors) if a and a == b
                ]
                return links_to_matrix(rows, cols, len(candidates))

        assert isinstance(SameAuthor(), Proximity)
        c = cands({"author": "ann"}, {"author": "bob"}, {"author": "ann"})
        g = build_graph(c, [SameAuthor()])
        assert set(zip(*g.adjacency.nonzero(), strict=True)) == {(0, 2), (2, 0)}  # no self-loops

    @pytest.mark.parametrize(
        ("matrix", "message"),
        [
            (np.zeros((2, 2)), "not a sparse matrix"),
            (sp.csr_matrix((3, 3)), "shape"),
            (sp.csr_matrix(np.array([[0, -1.0], [0, 0]])), "negative"),
            (sp.csr_matrix(np.array([[0, np.nan], [0, 0]])), "non-finite"),
        ],
    )
    def test_bad_proximity_output_is_named(self, matrix: object, message: str) -> None:
        class Broken:
            kind = "broken"
            weight = 1.0

            def adjacency(self, candidates: list[Candidate]) -> object:
                return matrix

        with pytest.raises(ValueError, match=message) as error:
            build_graph(cands({}, {}), [Broken()])  # type: ignore[list-item]
        assert "Broken" in str(error.value)

    def test_negative_weight_rejected(self) -> None:
        with pytest.raises(ValueError, match="weight"):
            build_graph(cands({}, {}), [ForeignKeys(weight=-1.0)])

    def test_edges_scale_with_links_not_pairs(self) -> None:
        # 20 000 candidates in chains of 4 tables: edges grow linearly.
        n = 20_000
        c = [
            Candidate(id=f"t{i}", metadata={"foreign_keys": [f"t{i + 1}"] if i % 4 != 3 else []})
            for i in range(n)
        ]
        g = build_graph(c, [ForeignKeys()])
        assert g.n_edges == 2 * 3 * (n // 4)


def _sparse_product_reference(candidates: list[Candidate], limit: float | None) -> np.ndarray:
    """Independent A.3 weights: ``B diag(1/|E|) B^T`` over the entities held by <= limit."""
    from grapher_core.metadata import normalised_set, read_list

    sets = [normalised_set(read_list(c.metadata.get("entities"))) for c in candidates]
    vocabulary = sorted(set().union(*sets)) if sets else []
    b = np.array([[e in s for e in vocabulary] for s in sets], dtype=float).reshape(
        len(sets), len(vocabulary)
    )
    if limit is not None:
        b = b[:, b.sum(axis=0) <= limit]
    sizes = b.sum(axis=1)
    shared = b @ b.T
    out = np.divide(shared, sizes[None, :], out=np.zeros_like(shared), where=sizes[None, :] > 0)
    np.fill_diagonal(out, 0.0)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_shared_entities_counting_paths_equal_the_product(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled sparse product (default), numpy's dense bincount and numpy's sorted runs
    (the fallbacks without scipy's private kernels) all give ``B diag(1/|E|) B^T``, canonical,
    int32 indices, and bit for bit the same data."""
    import grapher_core.edges.entities as proximity

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    vocabulary = [f"E{v}" for v in range(int(rng.integers(1, 40)))]
    candidates = [
        Candidate(
            id=str(i),
            metadata={
                "entities": [
                    vocabulary[j] for j in rng.integers(0, len(vocabulary), int(rng.integers(0, 6)))
                ]
            },
        )
        for i in range(n)
    ]
    caps: list[dict[str, Any]] = [{}, {"max_holders": 3}, {"max_share": 0.2}]
    limits = [None, 3, 0.2 * n]
    compiled = [SharedEntities(**cap).adjacency(candidates) for cap in caps]
    monkeypatch.setattr(proximity, "_csr_matmat", None)
    dense = [SharedEntities(**cap).adjacency(candidates) for cap in caps]
    monkeypatch.setattr(proximity, "DENSE_COUNTS_MAX_N", 0)
    sparse = [SharedEntities(**cap).adjacency(candidates) for cap in caps]
    for c, a, b, limit in zip(compiled, dense, sparse, limits, strict=True):
        expected = _sparse_product_reference(candidates, limit)
        for matrix in (c, a, b):
            assert matrix.shape == (n, n)
            assert matrix.nnz == np.count_nonzero(expected)
            np.testing.assert_allclose(matrix.toarray(), expected, atol=1e-12)
            assert matrix.has_canonical_format
        if c.nnz:
            assert c.indices.dtype == c.indptr.dtype == np.int32
            for other in (a, b):
                np.testing.assert_array_equal(c.indptr, other.indptr)
                np.testing.assert_array_equal(c.indices, other.indices)
                np.testing.assert_array_equal(c.data, other.data)


def test_shared_entities_hub_dense_pool_paths_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """A nearly complete graph (the bench's Zipf pool): the compiled product and numpy agree."""
    import grapher_core.edges.entities as proximity

    rng = np.random.default_rng(3)
    weights = 1.0 / np.arange(1, 401)
    picks = rng.choice(400, size=(200, 8), p=weights / weights.sum())
    candidates = [
        Candidate(id=str(i), metadata={"entities": [f"z{e}" for e in row]})
        for i, row in enumerate(picks)
    ]
    compiled = SharedEntities().adjacency(candidates)
    monkeypatch.setattr(proximity, "_csr_matmat", None)
    numpy_path = SharedEntities().adjacency(candidates)
    assert compiled.nnz == numpy_path.nnz > 20_000
    assert (compiled != numpy_path).nnz == 0
    np.testing.assert_allclose(
        compiled.toarray(), _sparse_product_reference(candidates, None), atol=1e-12
    )


class TestHubRules:
    """``max_share`` is a fraction, ``max_holders`` a count, ``edge_budget`` the default bound."""

    def test_max_share_one_means_no_cap_whatever_its_type(self) -> None:
        c = cands(*[{"entities": ["common", f"e{i // 2}"]} for i in range(6)])
        full = SharedEntities(edge_budget=None).adjacency(c)
        for share in (1, 1.0, np.float64(1.0)):
            assert (SharedEntities(max_share=share).adjacency(c) != full).nnz == 0
        assert SharedEntities(max_holders=1).adjacency(c).nnz == 0  # one holder: no pairs

    @pytest.mark.parametrize("bad", [-0.5, 0, 0.0, float("nan"), float("inf"), -3])
    def test_max_share_and_budget_reject_non_positive_or_nan(self, bad: float) -> None:
        with pytest.raises(ValueError, match="max_share"):
            SharedEntities(max_share=bad)
        with pytest.raises(ValueError, match="edge_budget"):
            SharedEntities(edge_budget=bad)

    def test_max_share_above_one_points_to_max_holders(self) -> None:
        with pytest.raises(ValueError, match="max_holders=50"):
            SharedEntities(max_share=50)
        with pytest.raises(TypeError, match="max_share"):
            SharedEntities(max_share=True)
        with pytest.raises(TypeError, match="max_share"):
            SharedEntities(max_share="0.5")  # type: ignore[arg-type]

    @pytest.mark.parametrize("bad", [0, -1, 2.5, True, float("nan")])
    def test_max_holders_must_be_a_positive_integer(self, bad: Any) -> None:
        with pytest.raises(ValueError, match="max_holders"):
            SharedEntities(max_holders=bad)

    def test_both_caps_apply(self) -> None:
        c = cands(*[{"entities": ["common", f"e{i // 3}"]} for i in range(6)])
        # "common": 6 holders, each e*: 3 holders
        assert SharedEntities(max_share=0.6).adjacency(c).nnz == 12  # 3.6: e* stay
        assert SharedEntities(max_share=0.6, max_holders=2).adjacency(c).nnz == 0

    def test_one_entity_shared_by_everyone_is_bounded_with_one_warning(self) -> None:
        import grapher_core.edges.entities as proximity

        proximity._warned.discard(("edge_budget", "hub_test"))
        n = 2000  # 4 M pairs > max(100 000, 8 n)
        c = [
            Candidate(id=str(i), metadata={"hub_test": ["everyone", f"pair {i // 2}"]})
            for i in range(n)
        ]
        with pytest.warns(RuntimeWarning, match="edge_budget") as record:
            a = SharedEntities("hub_test").adjacency(c)
        assert len(record) == 1 and "1 entities held by more than 2 of 2000" in str(
            record[0].message
        )
        assert a.nnz == n  # only the pairs remain, both ways, with |E_j| = 1
        np.testing.assert_allclose(a.data, 1.0)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once per field, not once per query
            assert SharedEntities("hub_test").adjacency(c).nnz == n
        unbounded = SharedEntities("hub_test", edge_budget=None, max_holders=None)
        assert unbounded.adjacency(c[:600]).nnz == 600 * 599  # the paper's graph, on request

    def test_budget_drops_largest_entities_first(self) -> None:
        import grapher_core.edges.entities as proximity

        # pairs: big (h=700): 489 300; mid (h=300): 89 700; small pairs: 2 each
        n = 800
        c = [
            Candidate(
                id=str(i),
                metadata={
                    "entities": (["big"] if i < 700 else [])
                    + (["mid"] if i >= 500 else [])
                    + [f"s{i // 2}"]
                },
            )
            for i in range(n)
        ]
        with pytest.warns(RuntimeWarning):
            proximity._warned.discard(("edge_budget", "entities"))
            a = SharedEntities().adjacency(c)
        expected = _sparse_product_reference(c, 300)
        np.testing.assert_allclose(a.toarray(), expected, atol=1e-12)

    def test_small_pools_are_never_trimmed(self) -> None:
        c = cands(
            *[{"entities": ["hub", "other hub"]} for _ in range(200)],
            ids=[str(i) for i in range(200)],
        )
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert SharedEntities().adjacency(c).nnz == 200 * 199


@pytest.mark.parametrize("shared", [127, 128, 40_000])
def test_shared_entities_counts_past_narrow_integers(shared: int) -> None:
    """Counts are kept in the narrowest integer that holds the longest entity list: two
    candidates sharing 127, 128 (past int8) or 40 000 (past int16) entities count them all."""
    common = [f"e{k}" for k in range(shared)]
    c = cands(
        {"entities": [*common, "own a"]}, {"entities": common}, {"entities": [*common[:3], "own c"]}
    )
    a = SharedEntities(edge_budget=None).adjacency(c).toarray()
    assert a[1, 0] == pytest.approx(shared / (shared + 1))
    assert a[0, 1] == pytest.approx(1.0)
    assert a[2, 0] == pytest.approx(3 / (shared + 1))
    assert a[0, 2] == pytest.approx(3 / 4)
    np.testing.assert_allclose(a, _sparse_product_reference(c, None), atol=1e-12)
