"""The PENMAN the library writes is read back by its own reader: roles of any text are escaped,
concepts the reader would change (a newline, upper case) are refused at write, naming them."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grapher_core.enrich.concepts import (
    ConceptGraph,
    graph_to_penman,
    normalise_concept,
    penman_to_graph,
)
from grapher_core.errors import InputError

pytest.importorskip("penman", reason="needs the grag extra (penman)")

ANY_TEXT = st.text(min_size=1, max_size=12)
CONCEPT = ANY_TEXT.map(normalise_concept).filter(bool)
ROLE = st.one_of(
    ANY_TEXT,
    st.sampled_from(["ARG0-of", "consist-of", "instance", "top", ":x", "a b", "x%2Dof", "-of"]),
)


@st.composite
def concept_graphs(draw: st.DrawFn) -> ConceptGraph:
    nodes = draw(st.lists(CONCEPT, min_size=1, max_size=6, unique=True))
    pairs = draw(st.lists(st.tuples(st.sampled_from(nodes), ROLE, st.sampled_from(nodes))))
    roots = draw(st.lists(st.sampled_from(nodes), max_size=3, unique=True))
    return ConceptGraph(tuple(nodes), tuple(dict.fromkeys(pairs)), tuple(roots))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(concept_graphs())
def test_what_the_writer_writes_the_reader_reads_back(graph: ConceptGraph) -> None:
    back = penman_to_graph(graph_to_penman(graph))
    assert set(back.nodes) == set(graph.nodes)
    assert set(back.edges) == set(graph.edges)
    assert set(back.roots) <= set(graph.nodes)  # one top per connected component
    assert not graph.roots or set(back.roots) & set(graph.roots)


@settings(max_examples=200, deadline=None)
@given(st.lists(ANY_TEXT, min_size=1, max_size=4, unique=True))
def test_any_concept_is_written_exactly_or_refused_by_name(concepts: list[str]) -> None:
    edges = tuple((a, "ARG1", b) for a, b in itertools.pairwise(concepts))
    graph = ConceptGraph(tuple(concepts), edges)
    try:
        text = graph_to_penman(graph)
    except InputError as error:
        bad = next(c for c in concepts if normalise_concept(c) != c)
        assert repr(bad) in str(error)
        return
    back = penman_to_graph(text)
    assert set(back.nodes) == set(concepts) and set(back.edges) == set(edges)


@pytest.mark.parametrize(
    "concept", ["a\nb", "New York", " padded", "two  spaces", "a|b", "x\u2028y", "tab\there"]
)
def test_a_concept_the_reader_would_change_is_refused_naming_it(concept: str) -> None:
    with pytest.raises(InputError, match="cannot write PENMAN") as error:
        graph_to_penman(ConceptGraph((concept, "b"), ((concept, "r", "b"),)))
    assert repr(concept) in str(error.value)


@pytest.mark.parametrize(
    "role", ["has part", "x:y", ":x", 'say"', "(", "a/b", "~1", "ARG0-of", "instance", "\n", "%"]
)
def test_a_role_of_any_text_comes_back(role: str) -> None:
    graph = ConceptGraph(("a", "b"), (("a", role, "b"),))
    assert penman_to_graph(graph_to_penman(graph)).edges == (("a", role, "b"),)


def test_an_empty_role_or_a_dangling_edge_or_root_is_refused() -> None:
    with pytest.raises(InputError, match="empty role"):
        graph_to_penman(ConceptGraph(("a", "b"), (("a", "", "b"),)))
    with pytest.raises(InputError, match="'missing'"):
        graph_to_penman(ConceptGraph(("a",), (("a", "r", "missing"),)))
    with pytest.raises(InputError, match="root 'z'"):
        graph_to_penman(ConceptGraph(("a",), (), ("z",)))


def test_real_amr_inverse_roles_are_still_read_as_amr() -> None:
    graph = penman_to_graph("(b / boy :ARG0-of (w / want-01))")
    assert graph.edges == (("want-01", "ARG0", "boy"),)
