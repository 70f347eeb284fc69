"""Both wrappers: a pool too small to lift anything is one warning, not two; the expansion
bounds (``expand_max_fetched``, ``expand_max_seconds``, ``expand_max_per_key``) have the same
names and defaults, reach the core's ``Expansion`` and hold through either wrapper."""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, TextNode

from grapher_core import Candidate, ForeignKeys, SharedEntities
from grapher_core.diagnostics import GraphERWarning
from grapher_core.edges.base import LinkKey
from grapher_core.expand import (
    DEFAULT_MAX_FETCHED,
    DEFAULT_MAX_PER_KEY,
    DEFAULT_MAX_SECONDS,
    Expansion,
    InMemorySource,
)
from langchain_grapher import GraphERReranker
from llama_index_grapher import GraphERPostprocessor

WRAPPERS = [GraphERReranker, GraphERPostprocessor]
MENTIONS = ForeignKeys("mentions", target_field="title")
BOUNDS = {"expand_max_fetched": "max_fetched", "expand_max_seconds": "max_seconds",
          "expand_max_per_key": "max_per_key"}  # fmt: skip


def graph_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, GraphERWarning)]


def rerank(wrapper: Any, records: Sequence[tuple[str, dict[str, Any]]], query: str = "q") -> list:
    """Run either wrapper on (id, metadata) records, best first."""
    if isinstance(wrapper, GraphERReranker):
        documents = [Document(id=i, page_content=f"text {i}", metadata=m) for i, m in records]
        return wrapper.compress_documents(documents, query)
    nodes = [
        NodeWithScore(node=TextNode(id_=i, text=f"text {i}", metadata=m), score=0.9 - k / 10)
        for k, (i, m) in enumerate(records)
    ]
    return wrapper.postprocess_nodes(nodes, query_str=query)


# -- a two-node pool: one cause, one warning ------------------------------------------------


@pytest.mark.parametrize("kind", WRAPPERS)
@pytest.mark.parametrize("top_n", [2, 5])
@pytest.mark.parametrize(
    ("proximities", "metadata"),
    [
        # detected ForeignKeys whose links name nothing in the pool: "set target_field" before
        (None, {"foreign_keys": '["elsewhere"]'}),
        # a field no node has: "check the field name" before
        ([SharedEntities("entity")], {"entities": '["Nolan"]'}),
    ],
    ids=["links-outside", "field-absent"],
)
def test_a_two_node_pool_is_one_warning(
    kind: type, top_n: int, proximities: list[Any] | None, metadata: dict[str, Any]
) -> None:
    options: dict[str, Any] = {"top_n": top_n}
    if proximities is not None:
        options["proximities"] = proximities
    wrapper = kind(**options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rerank(wrapper, [("a", dict(metadata)), ("b", dict(metadata))])
        rerank(wrapper, [("a", dict(metadata)), ("b", dict(metadata))])
    said = graph_warnings(caught)
    assert len(said) == 1, said
    assert f"reranking 2 candidates for top_n={top_n}" in said[0]
    assert "fetch at least top_n * 2" in said[0]


@pytest.mark.parametrize("kind", WRAPPERS)
def test_a_pool_above_top_n_still_gets_the_graph_hints(kind: type) -> None:
    wrapper = kind(top_n=2)
    metadata = {"foreign_keys": '["elsewhere"]'}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rerank(wrapper, [(name, dict(metadata)) for name in "abc"])
    said = graph_warnings(caught)
    assert len(said) == 2 and "target_field" in said[1]


# -- the bounds' fields ---------------------------------------------------------------------


class Slow:
    """A neighbour source for both wrappers (``fetch`` and LlamaIndex's ``node``) that takes
    ``delay`` seconds per call and records the limit it was given."""

    def __init__(self, objects: Sequence[Candidate], delay: float = 0.0) -> None:
        self.inner = InMemorySource(objects)
        self.objects = {c.id: c for c in objects}
        self.delay = delay
        self.limits: list[int | None] = []
        self.durations: list[float] = []

    def fetch(self, keys: Sequence[LinkKey], *, limit: int | None = None) -> list[Candidate]:
        start = time.monotonic()
        time.sleep(self.delay)
        self.limits.append(limit)
        out = self.inner.fetch(keys, limit=limit)
        self.durations.append(time.monotonic() - start)
        return out

    def node(self, node_id: str) -> TextNode:
        c = self.objects[node_id]
        return TextNode(id_=c.id, text=c.text, metadata=dict(c.metadata))


def chain(n: int) -> list[Candidate]:
    return [
        Candidate(f"P{i}", f"text P{i}", None, {"title": f"P{i}", "mentions": [f"P{i + 1}"]})
        for i in range(n)
    ]


@pytest.mark.parametrize("kind", WRAPPERS)
def test_same_names_and_defaults_reach_the_core(kind: type) -> None:
    default = kind(proximities=[MENTIONS])
    assert {field: getattr(default, field) for field in BOUNDS} == {
        "expand_max_fetched": DEFAULT_MAX_FETCHED,
        "expand_max_seconds": DEFAULT_MAX_SECONDS,
        "expand_max_per_key": DEFAULT_MAX_PER_KEY,
    }
    wrapper = kind(
        proximities=[MENTIONS],
        neighbour_source=Slow(chain(3)),
        expand_max_fetched=7,
        expand_max_seconds=1.5,
        expand_max_per_key=None,
    )
    engine = wrapper.engine
    assert engine.expansion == Expansion(max_fetched=7, max_seconds=1.5, max_per_key=None)
    wrapper.expand_max_fetched = 3  # assignment rebuilds the engine
    engine = wrapper.engine
    assert engine.expansion.max_fetched == 3


@pytest.mark.parametrize("kind", WRAPPERS)
@pytest.mark.parametrize(
    ("field", "value"),
    [("expand_max_fetched", 0), ("expand_max_seconds", 0.0), ("expand_max_seconds", -1.0),
     ("expand_max_per_key", 0)],
)  # fmt: skip
def test_bad_bounds_are_refused_by_the_core(kind: type, field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"expansion {BOUNDS[field]} .*got {value}"):
        kind(**{field: value})
    wrapper = kind()
    with pytest.raises(ValueError, match=BOUNDS[field]):
        setattr(wrapper, field, value)
    assert getattr(wrapper, field) == getattr(kind(), field)


@pytest.mark.parametrize("kind", WRAPPERS)
def test_the_time_budget_holds_through_the_wrapper_and_is_said_once(kind: type) -> None:
    corpus = chain(10)
    source = Slow(corpus, delay=0.1)
    wrapper = kind(
        proximities=[MENTIONS],
        neighbour_source=source,
        top_n=None,
        expand_seeds=1,
        expand_hops=8,
        expand_max_seconds=0.15,
    )
    records = [("P0", dict(corpus[0].metadata)), ("Other", {"title": "Other"})]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            source.durations.clear()
            start = time.monotonic()
            out = rerank(wrapper, records)
            assert time.monotonic() - start <= 0.15 + max(source.durations) + 0.3
            assert 3 <= len(out) < 10  # some hops ran, the rest were skipped
    said = [m for m in graph_warnings(caught) if "max_seconds" in m]
    assert len(said) == 1 and "max_seconds=0.15" in said[0]


@pytest.mark.parametrize("kind", WRAPPERS)
def test_the_object_budget_is_the_sources_limit(kind: type) -> None:
    seed = Candidate("S", "text S", None, {"title": "S", "mentions": [f"T{i}" for i in range(9)]})
    corpus = [seed, *(Candidate(f"T{i}", f"text T{i}", None, {"title": f"T{i}"}) for i in range(9))]
    source = Slow(corpus)
    wrapper = kind(
        proximities=[MENTIONS], neighbour_source=source, top_n=None, expand_max_fetched=4
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = rerank(wrapper, [("S", dict(seed.metadata)), ("Other", {"title": "Other"})])
        rerank(wrapper, [("S", dict(seed.metadata)), ("Other", {"title": "Other"})])
    assert source.limits == [4, 4] and len(out) == 2 + 4
    said = [m for m in graph_warnings(caught) if "max_fetched" in m]
    assert len(said) == 1 and "expand_max_fetched" in said[0]
