"""The entity graph's request-path shortcuts change nothing they skip.

Three things the graph build no longer does per call, each checked against what it replaced:
the entity keys come from a cache of bytes joined once (against each candidate's
``entity_keys`` concatenated); the csr matrix gets its arrays directly (against scipy's
constructor, every stored field); ``build_graph`` does not re-check the library's own entity
product (the full check leaves it unchanged, and a subclass's matrix is still checked).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from grapher_core.candidates import Candidate
from grapher_core.edges import entities
from grapher_core.edges.entities import (
    SharedEntities,
    _canonical_csr,
    _keys_of,
    _parsed_key_bytes,
    entity_keys,
)
from grapher_core.edges.graph import _checked, build_graph
from grapher_core.errors import InputError

VALUES: list[object] = [
    ["Paris", "paris ", "Berlin"],
    "Rome|Oslo",
    None,
    [],
    ("Lima", "Quito"),  # a tuple: parsed, not cached
    {"a": 1},  # a mapping: no entities
    [["Paris", "Oslo"], "Rome"],  # nested list: unhashable, parsed without the cache
    ["Berlin", "Paris"],
    7,
    ["Paris", "Paris"],
]


def _candidates(values: list[object]) -> list[Candidate]:
    return [Candidate(f"c{i}", "", None, {"entities": v}) for i, v in enumerate(values)]


@pytest.mark.parametrize("order", range(4))
def test_keys_of_equals_each_candidates_keys_concatenated(order: int) -> None:
    values = list(np.random.default_rng(order).permutation(np.array(VALUES, dtype=object)))
    candidates = _candidates(values)
    expected = [np.frombuffer(_parsed_key_bytes(v), dtype=np.int64) for v in values]
    for _ in range(2):  # cold, then from the cache
        keys, lengths = _keys_of(candidates, "entities")
        np.testing.assert_array_equal(keys, np.concatenate(expected))
        np.testing.assert_array_equal(lengths, [k.size for k in expected])
        for value, one in zip(values, expected, strict=True):
            np.testing.assert_array_equal(entity_keys(value), one)
    assert not entity_keys(["x"]).flags.writeable  # shared cached bytes: read-only


def test_keys_of_all_lists_takes_the_cache_and_agrees() -> None:
    rng = np.random.default_rng(3)
    values = [[f"e{int(e)}" for e in rng.integers(0, 30, 6)] for _ in range(50)]
    candidates = _candidates(values)  # type: ignore[arg-type]
    first = _keys_of(candidates, "entities")
    second = _keys_of(candidates, "entities")
    expected = np.concatenate([np.frombuffer(_parsed_key_bytes(v), dtype=np.int64) for v in values])
    for keys, lengths in (first, second):
        np.testing.assert_array_equal(keys, expected)
        assert int(lengths.sum()) == expected.size


def test_the_key_cache_forgets_its_older_half_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entities, "KEY_CACHE_SIZE", 8)
    monkeypatch.setattr(entities, "_KEY_BYTES", {})
    for i in range(20):
        entity_keys([f"entity {i}"])
        assert len(entities._KEY_BYTES) <= 8
    assert ("entity 19",) in entities._KEY_BYTES and ("entity 0",) not in entities._KEY_BYTES
    np.testing.assert_array_equal(  # a forgotten value is parsed again, to the same keys
        entity_keys(["entity 0"]), np.frombuffer(_parsed_key_bytes(["entity 0"]), np.int64)
    )


@pytest.mark.parametrize("seed", range(6))
def test_canonical_csr_is_the_constructors_matrix(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    dense = rng.random((n, n)) * (rng.random((n, n)) < 0.2)
    reference = sp.csr_matrix(dense)
    indptr = reference.indptr.astype(np.int32)
    indices = reference.indices.astype(np.int32)
    data = reference.data.copy()
    built = _canonical_csr(data, indices, indptr, n)
    constructed = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    assert type(built) is type(constructed) is sp.csr_matrix
    assert vars(built).keys() == vars(constructed).keys()
    for name, value in vars(constructed).items():
        if isinstance(value, np.ndarray):  # the same arrays (the constructor keeps views)
            mine = vars(built)[name]
            assert mine.dtype == value.dtype and np.shares_memory(mine, value)
            np.testing.assert_array_equal(mine, value)
        else:
            assert vars(built)[name] == value
    built.check_format(full_check=True)
    assert built.has_sorted_indices and built.has_canonical_format
    np.testing.assert_array_equal(built.toarray(), dense)
    np.testing.assert_array_equal(built @ np.arange(n), constructed @ np.arange(n))


def test_canonical_csr_leaves_int64_indices_to_the_constructor() -> None:
    """The constructor may narrow int64 index arrays: they keep going through it."""
    indices, indptr = np.array([1, 0], dtype=np.int64), np.array([0, 1, 2], dtype=np.int64)
    built = _canonical_csr(np.ones(2), indices, indptr, 2)
    assert built.indices.dtype == sp.csr_matrix((np.ones(2), indices, indptr)).indices.dtype


@pytest.mark.parametrize("seed", range(8))
def test_the_entity_product_needs_nothing_from_the_full_check(seed: int) -> None:
    """What ``build_graph`` no longer runs on the library's own product (negative, non-finite,
    diagonal, explicit zeros, dtype) would leave it unchanged: the full check returns the same
    matrix object, and the factor is kept."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 200))
    vocabulary = int(rng.integers(2, 80))
    candidates = _candidates(
        [
            [f"e{int(e)}" for e in rng.integers(0, vocabulary, int(rng.integers(0, 7)))]
            for _ in range(n)
        ]
    )
    for proximity in (SharedEntities(), SharedEntities(max_holders=3), SharedEntities(weight=0.5)):
        matrix, factor = proximity.factored(candidates)
        assert _checked(proximity, matrix, n) is matrix
        graph = build_graph(candidates, [proximity])
        if factor is not None:
            assert graph.adjacency_factor is not None
        expected = matrix * proximity.weight if proximity.weight != 1.0 else matrix
        assert (graph.adjacency != expected).nnz == 0


def test_a_subclass_product_is_checked_like_any_proximity() -> None:
    """Only ``SharedEntities.factored`` itself is trusted: a subclass that overrides it gets
    every check (here a negative weight is refused) and no factor."""

    class Negative(SharedEntities):
        def factored(self, candidates):  # type: ignore[no-untyped-def]
            matrix, _ = super().factored(candidates)
            return -matrix, None

    candidates = _candidates([["a", "b"], ["a"], ["b"]])
    with pytest.raises(InputError, match="negative or non-finite"):
        build_graph(candidates, [Negative()])

    class Same(SharedEntities):
        def factored(self, candidates):  # type: ignore[no-untyped-def]
            return super().factored(candidates)

    graph = build_graph(candidates, [Same()])
    assert graph.adjacency_factor is None and graph.n_edges == 4
