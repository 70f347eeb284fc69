"""Silent no-ops are said once per reranker and cause, or raised under strict=True."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

from grapher_core import (
    AdjacentChunks,
    Candidate,
    ForeignKeys,
    GraphReranker,
    SemanticKNN,
    SharedEntities,
)
from grapher_core.diagnostics import GraphERDiagnosticError, GraphERWarning


def _tables(n: int = 6) -> list[Candidate]:
    out = [
        Candidate(f"t{i}", score=1.0 - i / 10, metadata={"foreign_keys": [f"t{i + 1}"]})
        for i in range(n)
    ]
    return out


def _said(
    reranker: GraphReranker, candidates: list[Candidate], calls: int = 3, **options: object
) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(calls):
            reranker.rerank(candidates, **options)  # type: ignore[arg-type]
    return [str(w.message) for w in caught if issubclass(w.category, GraphERWarning)]


def test_misspelled_field_is_said_once_and_names_the_keys_seen() -> None:
    said = _said(GraphReranker([ForeignKeys("foreign_key")]), _tables())
    assert len(said) == 1
    assert "'foreign_key'" in said[0] and "'foreign_keys'" in said[0]


def test_missing_entity_field_is_said_once() -> None:
    said = _said(GraphReranker([SharedEntities("entity")]), _tables())
    assert len(said) == 1 and "'entity'" in said[0]


def test_links_naming_no_candidate_suggest_the_target_field() -> None:
    candidates = [
        Candidate(
            f"uuid-{i}",
            score=1.0 - i / 10,
            metadata={"table_id": f"db.t{i}", "foreign_keys": [f"db.t{i + 1}"]},
        )
        for i in range(5)
    ]
    said = _said(GraphReranker([ForeignKeys()]), candidates)
    assert len(said) == 1
    assert "target_field='table_id'" in said[0]


def test_zero_edges_is_said_once() -> None:
    candidates = [
        Candidate(f"c{i}", score=1.0 - i / 10, metadata={"doc_id": f"d{i}", "chunk_index": 0})
        for i in range(5)
    ]
    said = _said(GraphReranker([AdjacentChunks()]), candidates)
    assert len(said) == 1 and "0 edges over 5 candidates" in said[0]


def test_no_proximity_detected_is_said_once() -> None:
    candidates = [Candidate(f"c{i}", score=1.0 - i / 10) for i in range(5)]
    said = _said(GraphReranker(), candidates)
    assert len(said) == 1 and "none detected" in said[0]


def test_semantic_knn_without_vectors_is_said_once() -> None:
    said = _said(GraphReranker([SemanticKNN()]), _tables())
    assert len(said) == 1 and "needs vectors" in said[0]


def test_small_pool_is_said_once() -> None:
    said = _said(GraphReranker([ForeignKeys()]), _tables(6), top_n=5)
    assert len(said) == 1 and "top_n=5" in said[0]
    assert _said(GraphReranker([ForeignKeys()]), _tables(10), top_n=5) == []


@pytest.mark.parametrize("proximity", [ForeignKeys(), ForeignKeys("foreign_key")])
def test_a_pool_no_larger_than_top_n_is_that_one_cause_only(proximity: ForeignKeys) -> None:
    """Links outside the pool or a misspelled field: on 2 candidates for top_n=2 the only
    cause worth saying is the pool (a field hint there sends the user the wrong way)."""
    pool = [Candidate(f"u{i}", score=1 - i / 10, metadata={"foreign_keys": ["x"]}) for i in (0, 1)]
    for top_n in (2, 5):
        said = _said(GraphReranker([proximity]), pool, top_n=top_n)
        assert len(said) == 1 and f"reranking 2 candidates for top_n={top_n}" in said[0]
    said = _said(GraphReranker([proximity]), pool, top_n=1)  # 2 > top_n: the graph is at work
    assert len(said) == 1 and "top_n" not in said[0]


def test_healthy_graph_says_nothing_and_reports_edges_per_kind() -> None:
    reranker = GraphReranker([ForeignKeys()])
    assert _said(reranker, _tables(10), top_n=3) == []
    result = reranker.run(_tables(10), top_n=3)
    assert result.edges == {"structural": 18}  # 9 links, both directions


def test_each_reranker_says_it_again_and_logging_gets_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="grapher"):
        assert len(_said(GraphReranker([ForeignKeys("fk")]), _tables())) == 1
        assert len(_said(GraphReranker([ForeignKeys("fk")]), _tables())) == 1
    assert sum("'fk'" in r.getMessage() for r in caplog.records) == 2


def test_warning_points_at_the_callers_line() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GraphReranker([ForeignKeys("fk")]).rerank(_tables())
    assert caught and caught[0].filename == __file__


@pytest.mark.parametrize(
    "proximity, options",
    [
        (ForeignKeys("foreign_key"), {}),
        (SemanticKNN(), {}),
        (AdjacentChunks(), {}),
        (ForeignKeys(), {"top_n": 5}),
    ],
)
def test_strict_raises_instead(proximity: object, options: dict[str, int]) -> None:
    reranker = GraphReranker([proximity], strict=True)  # type: ignore[list-item]
    with pytest.raises(GraphERDiagnosticError):
        reranker.rerank(_tables(6), **options)  # type: ignore[arg-type]


def test_strict_passes_a_healthy_call() -> None:
    vectors = np.eye(4)
    candidates = [
        Candidate(f"v{i}", score=1.0 - i / 10, embedding=vectors[i % 2]) for i in range(4)
    ]
    ranked = GraphReranker([SemanticKNN(threshold=0.5)], strict=True).rerank(candidates)
    assert len(ranked) == 4
