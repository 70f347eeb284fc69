"""The paper's semantic edges (query-aware GNN, Algorithm 1) on a hand-computed 4-chunk graph.

Unit vectors c0 = (1, 0), c1 = (.8, .6), c2 = (.6, .8), c3 = (0, 1); cosines:
c0c1 = .8, c0c2 = .6, c0c3 = 0, c1c2 = .96, c1c3 = .6, c2c3 = .8.
"""

from __future__ import annotations

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.edges.semantic import SemanticKNN

VECTORS = [(1.0, 0.0), (0.8, 0.6), (0.6, 0.8), (0.0, 1.0)]


def chunks(docs: tuple[str, ...] = ("a", "a", "a", "a")) -> list[Candidate]:
    return [
        Candidate(f"c{i}", metadata={"doc_id": doc, "chunk_index": i}, embedding=np.array(v))
        for i, (v, doc) in enumerate(zip(VECTORS, docs, strict=True))
    ]


def dense(candidates: list[Candidate], knn: SemanticKNN) -> np.ndarray:
    return knn.adjacency(candidates).toarray()


def test_paper_edges_are_directed_top_k_weighted_by_similarity() -> None:
    expected = np.zeros((4, 4))
    # k = 2, tau = 0.7: c0 keeps c1 (.8; c2's .6 is below tau), c1 keeps c2 and c0,
    # c2 keeps c1 and c3, c3 keeps c2 (.8; c1's .6 is below tau).
    expected[0, 1] = 0.8
    expected[1, 2], expected[1, 0] = 0.96, 0.8
    expected[2, 1], expected[2, 3] = 0.96, 0.8
    expected[3, 2] = 0.8
    np.testing.assert_allclose(dense(chunks(), SemanticKNN.paper(k=2, threshold=0.7)), expected)


def test_directed_top_1_is_not_symmetric() -> None:
    a = dense(chunks(), SemanticKNN.paper(k=1, threshold=0.7))
    expected = np.zeros((4, 4))
    expected[0, 1], expected[1, 2], expected[2, 1], expected[3, 2] = 0.8, 0.96, 0.96, 0.8
    np.testing.assert_allclose(a, expected)
    assert a[1, 0] == 0.0  # c0 -> c1 exists, c1 -> c0 does not: c1's top-1 is c2


def test_symmetric_weighted_keeps_the_similarity_once() -> None:
    a = dense(chunks(), SemanticKNN(k=1, threshold=0.7, weighted=True, symmetric=True))
    expected = np.zeros((4, 4))
    for i, j, w in ((0, 1, 0.8), (1, 2, 0.96), (2, 3, 0.8)):
        expected[i, j] = expected[j, i] = w
    np.testing.assert_allclose(a, expected)  # 1 <-> 2 chosen both ways: .96, not 1.92


def test_per_document_scope_never_links_across_documents() -> None:
    knn = SemanticKNN.paper(k=2, threshold=0.0, scope_field="doc_id")
    a = dense(chunks(("a", "a", "b", "b")), knn)
    expected = np.zeros((4, 4))
    expected[0, 1] = expected[1, 0] = 0.8
    expected[2, 3] = expected[3, 2] = 0.8
    np.testing.assert_allclose(a, expected)
    # without a scope, c1's best neighbour is c2 in the other document
    assert dense(chunks(("a", "a", "b", "b")), SemanticKNN.paper(k=1, threshold=0.0))[1, 2] > 0


def test_scope_field_missing_gives_no_edges_for_that_candidate() -> None:
    cands = chunks()
    cands[0] = Candidate("c0", metadata={}, embedding=np.array(VECTORS[0]))
    a = dense(cands, SemanticKNN.paper(k=3, threshold=0.0, scope_field="doc_id"))
    assert not a[0].any() and not a[:, 0].any()
    assert a[1:, 1:].any()


def test_default_is_unchanged_weight_one_symmetric() -> None:
    a = dense(chunks(), SemanticKNN(k=1, threshold=0.7))
    expected = np.zeros((4, 4))
    for i, j in ((0, 1), (1, 2), (2, 3)):
        expected[i, j] = expected[j, i] = 1.0
    np.testing.assert_allclose(a, expected)


def test_bench_graph_variants_semantic_and_adjacent_plus_semantic() -> None:
    from grapher_bench.enrichment import proximities_for
    from grapher_core.edges.graph import build_graph
    from grapher_core.edges.keys import AdjacentChunks

    semantic = proximities_for("semantic")
    assert semantic == [SemanticKNN.paper()]
    both = proximities_for("adjacent+semantic")
    assert isinstance(both[0], AdjacentChunks) and both[1] == SemanticKNN.paper()
    graph = build_graph(chunks(), both)
    assert set(graph.by_kind) == {"contextual", "semantic"}
    # c0 -> c2 has cosine .6 (kept at tau = .6, top-5) and no adjacency
    assert graph.by_kind["semantic"][0, 2] > 0.59 and graph.by_kind["contextual"][0, 2] == 0
