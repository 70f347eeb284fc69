"""A neighbour source that answers with something other than candidates is named, with what it
returned, instead of being dropped without a word or failing deep inside expansion."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from grapher_core import Candidate, CorpusObject, ForeignKeys, GraphReranker
from grapher_core.edges.base import LinkKey
from grapher_core.errors import GraphERError
from grapher_core.expand import Expansion, GraphExpander
from grapher_core.expand.egograph import EgoGraphIndex, EgoGraphReranker
from grapher_core.expand.source import InMemorySource, check_fetched

MENTIONS = ForeignKeys("mentions", target_field="title")


class Answering:
    """A source whose fetch returns ``answer`` whatever it is asked."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def __repr__(self) -> str:
        return "Answering(fixed)"

    def fetch(self, keys: Sequence[LinkKey]) -> Any:
        return self.answer


WRONG: list[tuple[Any, str]] = [
    (None, "returned None"),
    ([{"id": "B", "text": "b"}], "a dict"),
    ({"B": "b"}, "returned a dict"),
    ("B", "returned a str"),
    (42, "returned an int"),
    ([CorpusObject("B", "b")], "a CorpusObject"),
    ([Candidate("B"), None], "item 1 (of 2) is None"),
    ([("B", "b")], "a tuple"),
]


def _pool() -> list[Candidate]:
    return [
        Candidate("A", "a", 0.9, {"title": "A", "mentions": ["B"]}, np.array([1.0, 0.0])),
        Candidate("C", "c", 0.5, {"title": "C"}, np.array([0.0, 1.0])),
    ]


@pytest.mark.parametrize(("answer", "said"), WRONG, ids=[w[1] for w in WRONG])
def test_expansion_names_the_source_and_what_it_returned(answer: Any, said: str) -> None:
    expander = GraphExpander([MENTIONS], Answering(answer), Expansion(seeds=1, hops=1))
    with pytest.raises(GraphERError) as error:
        expander.expand(_pool(), query_embedding=np.array([1.0, 0.0]))
    message = str(error.value)
    assert "Answering(fixed)" in message and said in message
    assert "expected a list of grapher_core.Candidate" in message


@pytest.mark.parametrize(("answer", "said"), WRONG[:3], ids=[w[1] for w in WRONG[:3]])
def test_ego_graph_join_checks_the_source_too(answer: Any, said: str) -> None:
    corpus = [CorpusObject(i, i, {"title": i, "mentions": []}) for i in "ABCD"]
    index = EgoGraphIndex.build(corpus, np.eye(4, 3) + 0.1, [MENTIONS])
    ego = EgoGraphReranker(GraphReranker([MENTIONS]), index, Answering(answer), n=2)
    with pytest.raises(GraphERError, match=said):
        ego.join([Candidate("A", "a", 1.0, {"title": "A"})], np.array([0.0, 1.0, 0.1]))


@pytest.mark.parametrize(
    ("answer", "count"),
    [([], 0), ((), 0), (iter([Candidate("B", "b")]), 1), ((Candidate(i) for i in "xy"), 2)],
    ids=["list", "tuple", "iterator", "generator"],
)
def test_any_iterable_of_candidates_is_accepted(answer: Any, count: int) -> None:
    got = check_fetched(Answering(answer), answer)
    assert isinstance(got, list) and len(got) == count


def test_a_good_source_still_expands() -> None:
    source = InMemorySource([CorpusObject("B", "b", {"title": "B"})], np.array([[1.0, 0.1]]))
    expander = GraphExpander([MENTIONS], source, Expansion(seeds=1, hops=1))
    assert expander.expand(_pool(), query_embedding=np.array([1.0, 0.0])).added == ("B",)


@pytest.mark.parametrize(
    ("vector", "said"),
    [(np.ones((2, 3)), r"shape \(2, 3\)"), (["x", "y"], "not a vector"), ([np.nan], "NaN")],
)
def test_a_fetched_objects_vector_passes_the_cores_one_check(vector: Any, said: str) -> None:
    """A (2, 3) vector a source returns is refused naming it, never flattened into a cosine."""
    with pytest.raises(GraphERError, match=f"Answering\\(fixed\\): the embedding of 'n1'.*{said}"):
        check_fetched(Answering(None), [Candidate("n1", "t", None, {}, vector)])
    fine = check_fetched(Answering(None), [Candidate("n2", "t", None, {}, [1, 2, 3])])
    assert fine[0].embedding is not None and fine[0].embedding.dtype == np.float32
