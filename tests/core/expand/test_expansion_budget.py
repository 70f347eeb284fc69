"""What one query of expansion may cost: objects fetched (``max_fetched``), seconds
(``max_seconds``), hub keys (``max_per_key``); each bound said once; objects scored before
they are read in full when the source allows it."""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from grapher_core import Candidate, ForeignKeys, GraphReranker
from grapher_core.diagnostics import GraphERWarning
from grapher_core.edges.base import LinkKey
from grapher_core.errors import ConfigError
from grapher_core.expand import (
    DEFAULT_MAX_FETCHED,
    DEFAULT_MAX_PER_KEY,
    DEFAULT_MAX_SECONDS,
    ExpandingReranker,
    Expansion,
    GraphExpander,
    HubKeys,
    InMemorySource,
)
from grapher_core.testing import check_neighbour_source

MENTIONS = ForeignKeys("mentions", target_field="title")
CATEGORIES = ForeignKeys("categories", target_field="category")


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return v / np.linalg.norm(v)


def passage(
    title: str,
    mentions: Sequence[str] = (),
    vector: np.ndarray | None = None,
    score: float | None = None,
    **metadata: Any,
) -> Candidate:
    return Candidate(
        title, f"text of {title}", score, {"title": title, "mentions": list(mentions), **metadata},
        unit(1, 0) if vector is None else vector,
    )  # fmt: skip


class SlowSource:
    """A store that takes ``delay`` seconds per call (a remote vector store under load)."""

    def __init__(self, objects: Sequence[Candidate], delay: float) -> None:
        self.inner = InMemorySource(objects)
        self.delay = delay
        self.durations: list[float] = []

    def fetch(self, keys: Sequence[LinkKey]) -> list[Candidate]:
        start = time.monotonic()
        time.sleep(self.delay)
        out = self.inner.fetch(keys)
        self.durations.append(time.monotonic() - start)
        return out


class Recording:
    """Records every call's keys and keywords; takes ``limit`` (and ``full`` when asked)."""

    def __init__(self, objects: Sequence[Candidate], *, partial: bool = False) -> None:
        self.inner = InMemorySource(objects)
        self.calls: list[tuple[list[LinkKey], dict[str, Any]]] = []
        if partial:
            self.fetch = self._fetch_partial  # type: ignore[method-assign]

    def fetch(self, keys: Sequence[LinkKey], *, limit: int | None = None) -> list[Candidate]:
        self.calls.append((list(keys), {"limit": limit}))
        return self.inner.fetch(keys, limit=limit)

    def _fetch_partial(
        self, keys: Sequence[LinkKey], *, limit: int | None = None, full: bool = True
    ) -> list[Candidate]:
        self.calls.append((list(keys), {"limit": limit, "full": full}))
        found = self.inner.fetch(keys, limit=limit)
        if full:
            return found
        return [Candidate(c.id, "", None, c.metadata, c.embedding) for c in found]


def said(caught: list[warnings.WarningMessage], text: str) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, GraphERWarning) and text in str(w.message)
    ]


# -- the value ---------------------------------------------------------------------------------


def test_defaults_are_the_documented_ones() -> None:
    value = Expansion()
    assert (DEFAULT_MAX_FETCHED, DEFAULT_MAX_SECONDS, DEFAULT_MAX_PER_KEY) == (200, 0.2, 50)
    assert (value.max_fetched, value.max_seconds, value.max_per_key) == (200, 0.2, 50)
    free = Expansion(max_fetched=None, max_seconds=None, max_per_key=None)
    assert (free.max_fetched, free.max_seconds, free.max_per_key) == (None, None, None)
    assert Expansion(max_seconds=1).max_seconds == 1.0
    assert isinstance(Expansion(max_seconds=1).max_seconds, float)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_fetched", 0),
        ("max_fetched", True),
        ("max_fetched", 2.0),
        ("max_fetched", "200"),
        ("max_seconds", 0),
        ("max_seconds", -0.5),
        ("max_seconds", float("nan")),
        ("max_seconds", float("inf")),
        ("max_seconds", True),
        ("max_seconds", "0.2"),
        ("max_per_key", 0),
        ("max_per_key", 1.5),
    ],
)
def test_bad_bounds_are_refused_naming_field_and_value(field: str, value: Any) -> None:
    with pytest.raises(ConfigError) as error:
        Expansion(**{field: value})
    assert field in str(error.value) and repr(value) in str(error.value)


# -- max_seconds -------------------------------------------------------------------------------


def chain(n: int) -> list[Candidate]:
    """P0 -> P1 -> ... -> P(n-1): every hop finds exactly one new object."""
    return [passage(f"P{i}", [f"P{i + 1}"] if i + 1 < n else []) for i in range(n)]


def test_time_budget_holds_with_a_slow_source_and_is_said_once() -> None:
    corpus = chain(12)
    source = SlowSource(corpus, delay=0.15)
    seed = Candidate("P0", "text of P0", 1.0, corpus[0].metadata, corpus[0].embedding)
    expander = GraphExpander(
        [MENTIONS], source, Expansion(seeds=1, hops=10, budget=20, max_seconds=0.2)
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            source.durations.clear()
            start = time.monotonic()
            result = expander.expand([seed], query_embedding=unit(1, 0))
            wall = time.monotonic() - start
            # the deadline plus the one fetch that was running when it passed (and some slack
            # for the ranking bookkeeping on a loaded machine)
            assert wall <= 0.2 + max(source.durations) + 0.1
            assert result.stopped == "max_seconds"
            assert 1 <= result.fetch_calls < 10 and len(result.added) == result.fetch_calls
            assert result.seconds <= wall
    messages = said(caught, "max_seconds=0.2")
    assert len(messages) == 1 and "expand_max_seconds" in messages[0]


def test_the_first_hop_always_runs_and_none_lifts_the_time_bound() -> None:
    corpus = chain(4)
    seed = Candidate("P0", "text of P0", 1.0, corpus[0].metadata, corpus[0].embedding)
    tight = GraphExpander(
        [MENTIONS], SlowSource(corpus, 0.02), Expansion(seeds=1, hops=3, max_seconds=1e-6)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GraphERWarning)
        result = tight.expand([seed])
    assert result.added == ("P1",) and result.stopped == "max_seconds"
    free = GraphExpander(
        [MENTIONS], SlowSource(corpus, 0.02), Expansion(seeds=1, hops=3, max_seconds=None)
    )
    result = free.expand([seed])
    assert result.added == ("P1", "P2", "P3") and result.stopped is None


# -- max_fetched -------------------------------------------------------------------------------


def fan(n: int) -> tuple[Candidate, list[Candidate]]:
    """A seed that mentions ``n`` objects, one per key (no hub)."""
    objects = [passage(f"T{i}") for i in range(n)]
    return passage("Seed", [f"T{i}" for i in range(n)], score=1.0), objects


def test_object_budget_is_passed_to_the_source_as_its_limit_and_said_once() -> None:
    seed, objects = fan(30)
    source = Recording(objects)
    expander = GraphExpander(
        [MENTIONS], source, Expansion(seeds=1, hops=2, budget=100, max_fetched=10)
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            result = expander.expand([seed], query_embedding=unit(1, 0))
            assert result.fetched == 10 and len(result.added) == 10
            assert result.stopped == "max_fetched" and result.fetch_calls == 1
    assert [options["limit"] for _keys, options in source.calls] == [10, 10, 10]
    messages = said(caught, "max_fetched=10")
    assert len(messages) == 1 and "expand_max_fetched" in messages[0]


def test_a_source_without_limit_is_cut_after_the_call() -> None:
    seed, objects = fan(30)
    source = SlowSource(objects, delay=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GraphERWarning)
        result = GraphExpander(
            [MENTIONS], source, Expansion(seeds=1, budget=100, max_fetched=10)
        ).expand([seed])
    assert result.fetched == 30  # what the store returned: it could not be told
    assert len(result.added) == 10 and result.stopped == "max_fetched"


def test_budgets_left_alone_say_nothing() -> None:
    seed, objects = fan(5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = GraphExpander([MENTIONS], Recording(objects), Expansion(seeds=1)).expand([seed])
    assert len(result.added) == 5 and result.stopped is None and result.hub_keys == ()
    assert said(caught, "") == []


# -- hub keys ----------------------------------------------------------------------------------


def category_corpus(members: int) -> tuple[Candidate, list[Candidate]]:
    """A seed in the hub category "Films" (``members`` objects) and in "Nolan" (two)."""
    films = [passage(f"F{i}", category="Films") for i in range(members)]
    nolan = [
        passage("Inception", category=["Films", "Nolan"]),
        passage("Memento", category="Nolan"),
    ]
    seed = passage("Seed", score=1.0, categories=["Films", "Nolan"])
    return seed, [*films, *nolan]


def test_a_hub_key_is_skipped_remembered_and_said_once() -> None:
    seed, corpus = category_corpus(120)
    source = Recording(corpus)
    reranker = ExpandingReranker(GraphReranker([CATEGORIES]), source, Expansion(seeds=1, budget=10))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = reranker.expander.expand([seed], query_embedding=unit(1, 0))
        second = reranker.expander.expand([seed], query_embedding=unit(1, 0))
        reranker.rerank([seed], query_embedding=unit(1, 0))
    hub = (("category", "Films"),)
    # Inception is also in "Nolan", so another key found it: it stays
    assert set(first.added) == {"Inception", "Memento"} and first.hub_keys == (hub,)
    assert set(second.added) == {"Inception", "Memento"} and second.hub_keys == (hub,)
    assert hub in source.calls[0][0]
    assert all(hub not in keys for keys, _options in source.calls[1:])  # never fetched again
    assert reranker.expander.hubs.count(hub) == 121  # 120 films and Inception
    messages = said(caught, "max_per_key=50")
    assert len(messages) == 1 and "category='Films'" in messages[0]


def test_a_shared_hub_memory_and_none_lifts_the_cap() -> None:
    seed, corpus = category_corpus(60)
    hubs = HubKeys()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GraphERWarning)
        GraphExpander([CATEGORIES], InMemorySource(corpus), hubs=hubs).expand([seed])
    source = Recording(corpus)
    GraphExpander([CATEGORIES], source, hubs=hubs).expand([seed])
    assert source.calls[0][0] == [(("category", "Nolan"),)]  # known before any fetch
    free = GraphExpander(
        [CATEGORIES], InMemorySource(corpus), Expansion(budget=100, max_per_key=None), hubs=hubs
    ).expand([seed])
    assert len(free.added) == 62 and free.hub_keys == ()


def test_hub_memory_is_bounded_and_picklable() -> None:
    import pickle

    hubs = HubKeys(size=2)
    for i in range(3):
        hubs.add(((f"f{i}", "v"),), 100 + i)
    assert len(hubs) == 2 and hubs.count((("f0", "v"),)) == 0
    copy = pickle.loads(pickle.dumps(hubs))
    assert copy.count((("f2", "v"),)) == 102
    with pytest.raises(ConfigError):
        HubKeys(size=0)


# -- scored before read in full ----------------------------------------------------------------


def test_objects_are_scored_before_the_kept_ones_are_read_in_full() -> None:
    objects = [passage(f"T{i}", vector=unit(1, i)) for i in range(15)]  # T0 most similar
    seed = passage("Seed", [f"T{i}" for i in range(15)], score=1.0)
    source = Recording(objects, partial=True)
    result = GraphExpander([MENTIONS], source, Expansion(seeds=1, budget=3)).expand(
        [seed], query_embedding=unit(1, 0)
    )
    assert result.added == ("T0", "T1", "T2")
    assert result.fetch_calls == 2 and result.fetched == 15
    (first_keys, first), (read_keys, read) = source.calls
    assert first == {"limit": 200, "full": False} and len(first_keys) == 15
    assert read["full"] is True and read_keys == [((None, f"T{i}"),) for i in range(3)]
    assert [c.text for c in result.candidates[1:]] == ["text of T0", "text of T1", "text of T2"]
    assert set(result.similarities) == {"T0", "T1", "T2"}


def test_a_hop_with_no_more_keys_than_room_reads_in_one_call() -> None:
    objects = [passage(f"T{i}", vector=unit(1, i)) for i in range(3)]
    seed = passage("Seed", [f"T{i}" for i in range(3)], score=1.0)
    source = Recording(objects, partial=True)
    result = GraphExpander([MENTIONS], source, Expansion(seeds=1, budget=10)).expand(
        [seed], query_embedding=unit(1, 0)
    )
    assert len(result.added) == 3 and result.fetch_calls == 1
    assert source.calls[0][1] == {"limit": 200, "full": True}


def test_in_memory_source_honours_limit_in_key_order() -> None:
    _seed, objects = fan(5)
    source = InMemorySource(objects)
    keys = [(("title", f"T{i}"),) for i in (3, 1, 4)]
    assert [c.id for c in source.fetch(keys, limit=2)] == ["T3", "T1"]
    assert source.fetch(keys, limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        source.fetch(keys, limit=-1)
    check_neighbour_source(source, [(("title", "T0"),), (("title", "T1"),)])
