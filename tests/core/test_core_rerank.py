from __future__ import annotations

import copy

import numpy as np
import pytest

from grapher_core import (
    BaselineRanker,
    Candidate,
    ForeignKeys,
    GraphReranker,
    RankContext,
    SharedEntities,
)
from grapher_core.edges.graph import CandidateGraph


def tables() -> list[Candidate]:
    """Orders and Stores match the question; Customers only matters through its foreign key."""
    return [
        Candidate(
            "shop.orders",
            "Table: orders",
            0.90,
            {"foreign_keys": ["shop.customers", "shop.stores"]},
        ),
        Candidate("shop.stores", "Table: stores", 0.85, {"foreign_keys": '["shop.orders"]'}),
        Candidate("shop.products", "Table: products", 0.80, {}),
        Candidate("shop.suppliers", "Table: suppliers", 0.75, {}),
        Candidate("hr.staff", "Table: staff", 0.72, {}),
        Candidate("shop.customers", "Table: customers", 0.40, {"foreign_keys": "shop.orders"}),
    ]


def test_foreign_key_lifts_linked_table_with_explanation() -> None:
    results = GraphReranker([ForeignKeys()], ranker="gcs", alpha=0.1).rerank(tables(), top_n=5)
    ids = [r.id for r in results]
    assert ids[:2] == ["shop.orders", "shop.stores"]
    assert "shop.customers" in ids  # 6th by the retriever, inside the top 5 after GCS
    customers = next(r for r in results if r.id == "shop.customers")
    assert customers.lifted and customers.original_rank == 6
    assert customers.original_score == 0.40 and customers.score > 0.40
    assert customers.explanation[0].neighbour_id == "shop.orders"
    assert customers.explanation[0].kinds == ("structural",)
    assert customers.explanation[0].edge_weight == 1.0
    assert [r.rank for r in results] == [1, 2, 3, 4, 5]


def test_baseline_keeps_the_retriever_order() -> None:
    results = GraphReranker([ForeignKeys()], ranker="baseline").rerank(tables())
    assert [r.id for r in results] == [c.id for c in tables()]


def test_ppr_and_custom_ranker() -> None:
    assert len(GraphReranker([ForeignKeys()], ranker="ppr").rerank(tables())) == 6

    class Reverse:
        name = "reverse"

        def rank(
            self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext
        ) -> np.ndarray:
            assert context.query == "q"
            return -seeds

    results = GraphReranker(ranker=Reverse()).rerank(tables(), query="q")
    assert results[0].id == "shop.customers"


def test_input_is_never_mutated() -> None:
    given = tables()
    snapshot = copy.deepcopy(given)
    GraphReranker([ForeignKeys(), SharedEntities()]).rerank(given, top_n=2)
    assert given == snapshot
    assert [dict(c.metadata) for c in given] == [dict(c.metadata) for c in snapshot]


def test_empty_and_single() -> None:
    reranker = GraphReranker([ForeignKeys()])
    assert reranker.rerank([]) == []
    (only,) = reranker.rerank([Candidate("a", score=0.3)])
    assert only.id == "a" and only.score == pytest.approx(1.0) and only.rank == 1  # rank seed
    reranker.seed_transform = "auto"
    (only,) = reranker.rerank([Candidate("a", score=0.3)])
    assert only.score == pytest.approx(0.3)


def test_duplicate_ids_are_named() -> None:
    with pytest.raises(ValueError, match=r"duplicate candidate ids: 'a'"):
        GraphReranker().rerank(
            [Candidate("a", score=1), Candidate("b", score=1), Candidate("a", score=2)]
        )


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "0.5", True])
def test_bad_scores_are_named(bad: object) -> None:
    with pytest.raises(ValueError, match="'b'"):
        GraphReranker().rerank([Candidate("a", score=1.0), Candidate("b", score=bad)])  # type: ignore[arg-type]


def test_partial_scores_rejected_and_absent_scores_use_rank() -> None:
    with pytest.raises(ValueError, match="no score"):
        GraphReranker().rerank([Candidate("a", score=1.0), Candidate("b")])
    results = GraphReranker([ForeignKeys()]).rerank(
        [Candidate("a"), Candidate("b"), Candidate("c", metadata={"foreign_keys": ["a"]})]
    )
    assert [r.original_score for r in results] == [None, None, None]
    assert results[0].id == "a"


def test_bad_ids_and_types() -> None:
    with pytest.raises(ValueError, match="position 1"):
        GraphReranker().rerank([Candidate("a"), Candidate("")])
    with pytest.raises(TypeError, match="position 0 is a dict"):
        GraphReranker().rerank([{"id": "a"}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="top_n"):
        GraphReranker().rerank([Candidate("a")], top_n=-1)
    with pytest.raises(TypeError, match="not a proximity"):
        GraphReranker(["foreign_keys"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="seed_transform"):
        GraphReranker(seed_transform="log")


def test_negative_scores_are_scaled_not_rejected() -> None:
    # Cosine similarities can be negative; seeds are min-max scaled so PPR accepts them too.
    candidates = [
        Candidate("a", score=0.2),
        Candidate("b", score=-0.3),
        Candidate("c", score=-0.1, metadata={"foreign_keys": ["a"]}),
    ]
    for ranker in ("gcs", "ppr"):
        ids = [r.id for r in GraphReranker([ForeignKeys()], ranker=ranker).rerank(candidates)]
        assert ids[0] == "a" and ids[-1] == "b"


def test_hub_linked_to_everything_does_not_jump_ahead_under_gcs() -> None:
    n = 50
    candidates = [Candidate(f"c{i}", score=1.0 - i / n) for i in range(n - 1)]
    candidates.append(
        Candidate("hub", score=0.01, metadata={"foreign_keys": [f"c{i}" for i in range(n - 1)]})
    )
    results = GraphReranker([ForeignKeys()], ranker="gcs", alpha=0.1).rerank(candidates)
    assert [r.id for r in results[:5]] == ["c0", "c1", "c2", "c3", "c4"]


def test_self_links_outside_ids_and_malformed_metadata() -> None:
    candidates = [
        Candidate("a", score=1.0, metadata={"foreign_keys": ["a", "zzz"], "entities": 5}),
        Candidate("b", score=0.5, metadata={"foreign_keys": {"bad": "shape"}, "entities": None}),
        Candidate("c", score=0.1, metadata={"foreign_keys": "[broken json"}),
    ]
    reranker = GraphReranker([ForeignKeys(), SharedEntities()])
    assert reranker.graph(candidates).n_edges == 0
    assert [r.id for r in reranker.rerank(candidates)] == ["a", "b", "c"]


def test_ranker_returning_wrong_shape_is_named() -> None:
    class Broken:
        name = "broken"

        def rank(
            self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext
        ) -> np.ndarray:
            return seeds[:-1]

    with pytest.raises(ValueError, match="broken"):
        GraphReranker(ranker=Broken()).rerank(tables())


def test_order_invariance_of_scores() -> None:
    """With score seeds a shuffled input ranks the same (the default reads the order; scores
    rising along the whole input would be read as distances, so the shuffle is not a reversal)."""
    given = tables()
    reranker = GraphReranker([ForeignKeys()], seed_transform="auto")
    forward = {r.id: r.score for r in reranker.rerank(given)}
    shuffled = [given[i] for i in (3, 0, 5, 1, 4, 2)]
    backward = {r.id: r.score for r in reranker.rerank(shuffled)}
    assert forward.keys() == backward.keys()
    for key, value in forward.items():
        assert backward[key] == pytest.approx(value)


def test_explain_zero_and_baseline_alpha_error() -> None:
    results = GraphReranker([ForeignKeys()], explain=0).rerank(tables())
    assert all(r.explanation == () for r in results)
    with pytest.raises(ValueError, match="alpha"):
        GraphReranker(ranker=BaselineRanker(), alpha=0.5)


def test_explanation_names_every_edge_kind_between_two_candidates() -> None:
    candidates = [
        Candidate("a", score=0.9, metadata={"foreign_keys": ["b"], "entities": ["x"]}),
        Candidate("b", score=0.2, metadata={"entities": ["x"]}),
        Candidate("c", score=0.8, metadata={"entities": ["x"]}),
    ]
    results = GraphReranker([ForeignKeys(), SharedEntities()], ranker="gcs").rerank(candidates)
    b = next(r for r in results if r.id == "b")
    by_neighbour = {c.neighbour_id: c for c in b.explanation}
    assert by_neighbour["a"].kinds == ("structural", "conceptual")
    assert by_neighbour["a"].edge_weight == pytest.approx(2.0)  # 1 (FK) + |{x}|/|{x}| (entities)
    assert by_neighbour["c"].kinds == ("conceptual",)
    assert b.explanation[0].neighbour_id == "a"  # the larger weighted share comes first


def test_needs_embeddings_comes_from_declared_capabilities() -> None:
    from grapher_core import ForeignKeys, GraphReranker, SemanticKNN

    class VectorRanker:
        name = "vectors"
        needs_embeddings = True

        def rank(self, graph: object, seeds: np.ndarray, context: object) -> np.ndarray:
            return seeds

    assert not GraphReranker([ForeignKeys()]).needs_embeddings
    assert not GraphReranker([ForeignKeys()], ranker="ppr").needs_embeddings
    assert GraphReranker([ForeignKeys(), SemanticKNN()]).needs_embeddings
    assert GraphReranker([ForeignKeys()], ranker=VectorRanker()).needs_embeddings


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("shape", ["short", "long"])
def test_top_per_row_equals_a_stable_sort_of_each_row(seed: int, shape: str) -> None:
    """The explanations' neighbour choice (argmax rounds on long rows, one lexsort on short
    ones) picks what a stable sort of each row picks: the ``limit`` largest shares, ties in
    column order, rows shorter than ``limit`` whole."""
    from grapher_core.ranking.explain import top_per_row as _top_per_row

    rng = np.random.default_rng(seed)
    if shape == "short":
        lengths = rng.integers(0, 12, size=int(rng.integers(1, 15)))
        lengths[0] = max(int(lengths[0]), 1)
    else:  # long rows, a few short or empty ones: the argmax grid
        lengths = rng.integers(80, 160, size=10)
        lengths[rng.choice(10, 3, replace=False)] = [0, 1, 2]
    total = int(lengths.sum())
    shares = rng.integers(0, 4, size=total).astype(float) / 4  # many exact ties
    segment = np.repeat(np.arange(lengths.size), lengths)
    offsets = np.cumsum(lengths) - lengths
    position = np.arange(total) - np.repeat(offsets, lengths)
    for limit in (1, 3, 5, 20):
        expected = [
            offsets[r]
            + np.argsort(-shares[offsets[r] : offsets[r] + lengths[r]], kind="stable")[:limit]
            for r in range(lengths.size)
        ]
        got = _top_per_row(shares, segment, position, offsets, lengths, limit)
        np.testing.assert_array_equal(got, np.concatenate(expected))
