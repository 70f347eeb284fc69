from __future__ import annotations

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
from grapher_core.proximity import Proximity, links_to_matrix


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
        c = cands({"title": "Paris", "mentions": ["France"]}, {"title": "France"},
                  ids=["p1", "p2"])
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
        expected = np.array([
            [0, 1 / 1, 1 / 3],  # |E0∩E1|/|E1| = 1, |E0∩E2|/|E2| = 1/3
            [1 / 2, 0, 0],
            [1 / 2, 0, 0],
        ])
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
        assert SharedEntities(max_share=2).adjacency(c).nnz == 6

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
                rows = [i for i, a in enumerate(authors) for j, b in enumerate(authors)
                        if a and a == b]
                cols = [j for i, a in enumerate(authors) for j, b in enumerate(authors)
                        if a and a == b]
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
        c = [Candidate(id=f"t{i}", metadata={"foreign_keys": [f"t{i + 1}"] if i % 4 != 3 else []})
             for i in range(n)]
        g = build_graph(c, [ForeignKeys()])
        assert g.n_edges == 2 * 3 * (n // 4)


@pytest.mark.parametrize("seed", range(6))
def test_shared_entities_small_path_equals_sparse_product(seed: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import grapher_core.proximity as proximity

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    vocabulary = [f"E{v}" for v in range(int(rng.integers(1, 40)))]
    candidates = [
        Candidate(id=str(i), metadata={"entities": [vocabulary[j] for j in
                                                    rng.integers(0, len(vocabulary),
                                                                 int(rng.integers(0, 6)))]})
        for i in range(n)
    ]
    caps = (None, 3, 0.2)
    small = [SharedEntities(max_share=cap).adjacency(candidates) for cap in caps]
    monkeypatch.setattr(proximity, "DENSE_PAIRS_MAX_N", 0)
    sparse = [SharedEntities(max_share=cap).adjacency(candidates) for cap in caps]
    for a, b in zip(small, sparse, strict=True):
        assert a.shape == b.shape == (n, n)
        assert a.nnz == b.nnz
        np.testing.assert_allclose(a.toarray(), b.toarray(), atol=1e-12)
        assert a.has_canonical_format
