"""Min-max seeds stay finite for any finite scores, however large: the range of 1e308 and
-1e308 overflows, the scores do not, so the scaling must not report them as NaN or inf."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grapher_core import Candidate, ForeignKeys, GraphReranker
from grapher_core.ranking.seeds import make_seeds, minmax

BIG = sys.float_info.max


@pytest.fixture
def overflow_raises() -> Iterator[None]:
    """An overflow in the seeds would be a silent inf: make numpy raise instead (only around
    the seed code: validation elsewhere sums on purpose and reads an inf sum as a signal)."""
    with np.errstate(over="raise", invalid="raise"):
        yield


EXTREMES = [
    [1e308, -1e308, 0.0],
    [-1e308, 0.0, 1e308],
    [BIG, -BIG, 1.0],
    [BIG, BIG / 2, -BIG],
    [-BIG, -BIG / 3, BIG],
    [1e308, -1e308],
]


@pytest.mark.parametrize("scores", EXTREMES, ids=str)
@pytest.mark.usefixtures("overflow_raises")
def test_minmax_of_extreme_scores_is_finite_and_in_the_unit_interval(scores: list[float]) -> None:
    out = minmax(np.array(scores))
    assert np.all(np.isfinite(out))
    assert out.min() == 0.0 and out.max() == 1.0
    assert list(np.argsort(out, kind="stable")) == list(np.argsort(scores, kind="stable"))


def test_minmax_of_ordinary_scores_is_unchanged() -> None:
    np.testing.assert_array_equal(minmax(np.array([1.0, 2.0, 3.0])), [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(minmax(np.array([2.0, 2.0])), [1.0, 1.0])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=12))
def test_minmax_is_finite_and_monotone_for_any_finite_scores(scores: list[float]) -> None:
    values = np.array(scores)
    with np.errstate(over="raise", invalid="raise"):
        out = minmax(values)
    assert np.all(np.isfinite(out)) and np.all((out >= 0) & (out <= 1))
    order = np.argsort(values, kind="stable")
    assert np.all(np.diff(out[order]) >= 0)  # never reverses two scores


@pytest.mark.parametrize("ranker", ["gcs", "ppr"])
@pytest.mark.parametrize("scores", EXTREMES, ids=str)
def test_reranking_with_minmax_seeds_on_extreme_scores(ranker: str, scores: list[float]) -> None:
    pool = [
        Candidate(f"t{i}", "x", s, {"foreign_keys": [f"t{(i + 1) % len(scores)}"]})
        for i, s in enumerate(scores)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranked = GraphReranker([ForeignKeys()], ranker, seed_transform="minmax").rerank(pool)
    assert all(np.isfinite(r.score) for r in ranked)
    with np.errstate(over="raise", invalid="raise"):
        seeds = make_seeds(pool, "minmax")
    rising = all(b >= a for a, b in pairwise(scores))
    best = int(np.argmin(scores)) if rising else int(np.argmax(scores))  # rising: distances
    assert int(np.argmax(seeds)) == best
