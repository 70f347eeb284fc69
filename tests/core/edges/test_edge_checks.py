"""Proximities refuse bad weights, k and thresholds when they are made, and SemanticKNN names
the candidate whose vector is wrong instead of passing numpy's message on."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from grapher_core.candidates import Candidate
from grapher_core.edges import (
    AdjacentChunks,
    ChunkLinks,
    ForeignKeys,
    SemanticKNN,
    SharedEntities,
)
from grapher_core.edges.checks import check_weight
from grapher_core.edges.concepts import SharedConcepts
from grapher_core.errors import GraphERError

PROXIMITIES: list[Callable[..., Any]] = [
    ForeignKeys,
    AdjacentChunks,
    SharedEntities,
    SemanticKNN,
    ChunkLinks,
    SharedConcepts,
]
BAD_WEIGHTS = [math.nan, math.inf, -math.inf, -1.0, 0, 0.0, True, "1", None, np.float64("nan")]


@pytest.mark.parametrize("make", PROXIMITIES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("weight", BAD_WEIGHTS, ids=repr)
def test_every_proximity_refuses_a_bad_weight(make: Callable[..., Any], weight: object) -> None:
    with pytest.raises(GraphERError, match=rf"{make.__name__}\.weight") as error:
        make(weight=weight)
    assert repr(weight) in str(error.value)


@pytest.mark.parametrize("make", PROXIMITIES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("weight", [0.5, 2, np.float32(1.5), np.int64(3)], ids=repr)
def test_every_proximity_keeps_a_good_weight(make: Callable[..., Any], weight: object) -> None:
    assert make(weight=weight).weight == weight


def test_check_weight_returns_a_float() -> None:
    assert check_weight("X", np.int64(2)) == 2.0
    assert isinstance(check_weight("X", 3), float)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("threshold", math.nan),
        ("threshold", math.inf),
        ("threshold", 1.5),
        ("threshold", -1.01),
        ("threshold", "0.6"),
        ("threshold", True),
        ("k", 0),
        ("k", -3),
        ("k", 2.5),
        ("k", True),
        ("block_size", 0),
    ],
)
def test_semantic_knn_refuses_bad_options(option: str, value: object) -> None:
    with pytest.raises(GraphERError, match=rf"SemanticKNN\.{option}"):
        SemanticKNN(**{option: value})


@pytest.mark.parametrize(("k", "threshold"), [(5, math.nan), (0, 0.6), (3, -2.0)])
def test_paper_refuses_what_the_constructor_refuses(k: int, threshold: float) -> None:
    with pytest.raises(GraphERError, match="SemanticKNN"):
        SemanticKNN.paper(k=k, threshold=threshold)


@pytest.mark.parametrize("threshold", [-1.0, 0.0, 1.0])
def test_semantic_knn_accepts_the_whole_cosine_range(threshold: float) -> None:
    assert SemanticKNN(threshold=threshold).threshold == threshold


def _pool(bad: Any) -> list[Candidate]:
    return [
        Candidate("a", embedding=np.ones(4)),
        Candidate("b", embedding=np.arange(4.0)),
        Candidate("odd", embedding=bad),
    ]


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        (np.ones(3), "dimension 3"),
        ([1.0, 2.0, 3.0, 4.0, 5.0], "dimension 5"),
        ("0.5", "str"),
        ("1 2 3 4", "str"),
        (b"\x00\x01", "bytes"),
        (["x", "y", "z", "w"], "not a vector of numbers"),
        ([[1.0, 2.0], [3.0]], "not a vector of numbers"),
        ({"a": 1}, "not a vector of numbers"),
        (np.zeros(0), "empty"),
    ],
    ids=["short", "long", "numeric-string", "string", "bytes", "words", "ragged", "dict", "empty"],
)
def test_semantic_knn_names_the_candidate_with_a_bad_vector(bad: Any, what: str) -> None:
    for proximity in (SemanticKNN(), SemanticKNN.paper(), SemanticKNN(scope_field=None, k=1)):
        with pytest.raises(GraphERError, match="'odd'") as error:
            proximity.adjacency(_pool(bad))
        assert what in str(error.value)


def test_semantic_knn_still_builds_edges_for_good_vectors() -> None:
    pool = _pool(np.full(4, 2.0))
    assert SemanticKNN(k=1, threshold=0.0).adjacency(pool).nnz > 0
