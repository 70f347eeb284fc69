"""One Expansion value, validated once; ExpandingReranker.run has GraphReranker.run's result
shape (ranked, edges of the enlarged graph, proximities), on every path."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from grapher_core import Candidate, ForeignKeys, GraphReranker
from grapher_core.errors import ConfigError, InputTypeError
from grapher_core.expand import (
    DEFAULT_BUDGET,
    DEFAULT_HOPS,
    DEFAULT_SEEDS,
    CosinePruner,
    ExpandingReranker,
    Expansion,
    GraphExpander,
    InMemorySource,
)
from grapher_core.request.result import Reranking

MENTIONS = ForeignKeys("mentions", target_field="title")


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return v / np.linalg.norm(v)


def passage(title: str, mentions: list[str], vector: np.ndarray, score: float | None = None):
    return Candidate(title, title, score, {"title": title, "mentions": mentions}, vector)


def test_defaults_and_a_valid_value() -> None:
    default = Expansion()
    assert (default.seeds, default.hops, default.budget) == (
        DEFAULT_SEEDS,
        DEFAULT_HOPS,
        DEFAULT_BUDGET,
    )
    assert default.prune_threshold is None and default.seed_rule == "calibrated"
    value = Expansion(seeds=2, hops=2, budget=0, prune_threshold=1, seed_rule="floor")
    assert value.prune_threshold == 1.0 and isinstance(value.prune_threshold, float)
    assert value == Expansion(seeds=2, hops=2, budget=0, prune_threshold=1.0, seed_rule="floor")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("seeds", 0),
        ("seeds", True),
        ("seeds", 2.0),
        ("hops", 0),
        ("budget", -1),
        ("budget", "10"),
        ("prune_threshold", 1.5),
        ("prune_threshold", float("nan")),
        ("prune_threshold", "0.5"),
        ("prune_threshold", True),
        ("reverse", "yes"),
        ("follow_entities", 1),
        ("seed_rule", "nope"),
    ],
)
def test_bad_values_are_refused_naming_field_and_value(field: str, value: Any) -> None:
    with pytest.raises(ConfigError) as error:
        Expansion(**{field: value})
    assert field in str(error.value) and repr(value) in str(error.value)


def test_expanders_take_only_an_expansion() -> None:
    with pytest.raises(InputTypeError, match="Expansion"):
        GraphExpander([MENTIONS], InMemorySource([]), {"seeds": 2})  # type: ignore[arg-type]
    reranker = ExpandingReranker(GraphReranker([MENTIONS]), InMemorySource([]), Expansion(hops=2))
    assert reranker.expansion == Expansion(hops=2) and reranker.expander.expansion.hops == 2


@pytest.fixture
def pool() -> tuple[list[Candidate], list[Candidate], np.ndarray]:
    candidates = [
        passage("A", ["F"], unit(1, 0), 0.9),
        passage("B", [], unit(0.8, 0.6), 0.5),
        passage("C", [], unit(0.6, 0.8), 0.4),
    ]
    corpus = [*candidates, passage("F", ["A"], unit(0.9, 0.1))]
    return candidates, corpus, unit(1, 0)


@pytest.mark.parametrize(
    "options",
    [{}, {"pruner": CosinePruner(0.0)}, {"keep_candidate_scores": True}],
    ids=["plain", "pruned", "kept-scores"],
)
def test_run_returns_a_reranking_with_the_enlarged_graphs_edges(
    pool: tuple[list[Candidate], list[Candidate], np.ndarray], options: dict[str, Any]
) -> None:
    candidates, corpus, q = pool
    inner = GraphReranker([MENTIONS])
    alone = inner.run(candidates, query_embedding=q)
    assert sum(alone.edges.values()) == 0  # A's link points outside the candidates
    reranker = ExpandingReranker(inner, InMemorySource(corpus), Expansion(seeds=1), **options)
    result = reranker.run(candidates, query_embedding=q, top_n=3)
    assert isinstance(result, Reranking)
    assert sum(result.edges.values()) == 2  # A -> F and F -> A
    _, expansion = reranker.rerank_with_expansion(candidates, query_embedding=q)
    assert result.edges == inner.run(list(expansion.candidates), query_embedding=q).edges
    assert result.proximities == (MENTIONS,)
    assert len(result.ranked) == 3 and [r.rank for r in result.ranked] == [1, 2, 3]
    assert any(r.expanded and r.id == "F" for r in result.ranked)
    rerank = reranker.rerank(candidates, query_embedding=q, top_n=3)
    assert [r.id for r in rerank] == [r.id for r in result.ranked]


def test_run_without_anything_fetched_is_the_plain_run(
    pool: tuple[list[Candidate], list[Candidate], np.ndarray],
) -> None:
    candidates, _, q = pool
    inner = GraphReranker([MENTIONS])
    result = ExpandingReranker(inner, InMemorySource(candidates)).run(candidates, query_embedding=q)
    plain = inner.run(candidates, query_embedding=q)
    assert [r.id for r in result.ranked] == [r.id for r in plain.ranked]
    assert result.edges == plain.edges and not any(r.expanded for r in result.ranked)
