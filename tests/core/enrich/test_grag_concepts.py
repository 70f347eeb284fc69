"""Concept graphs: storage form, PENMAN reader, G_qp union, shortest-path node text, overlaps."""

from __future__ import annotations

import json

import pytest

from grapher_core.enrich.concepts import (
    QUESTION_NODE,
    ConceptGraph,
    SpacyConceptParser,
    concept_overlaps,
    decode_graph,
    encode_graph,
    graph_to_penman,
    path_text,
    penman_to_graph,
    question_graph,
    read_graph,
    shortest_paths,
)
from grapher_core.metadata import encode_list

AMR = """(w / want-01
   :ARG0 (b / boy)
   :ARG1 (g / go-02 :ARG0 b :ARG4 (c / city :name (n / name :op1 "New York")))
   :time (d / date-entity :year 2010))"""


def test_penman_reader_reads_concepts_relations_and_constants() -> None:
    pytest.importorskip("penman")
    graph = penman_to_graph(AMR)
    assert graph.roots == ("want-01",)
    assert set(graph.nodes) == {
        "want-01",
        "boy",
        "go-02",
        "city",
        "name",
        "new york",
        "date-entity",
        "2010",
    }
    assert ("go-02", "ARG0", "boy") in graph.edges  # the re-entrant b
    assert ("name", "op1", "new york") in graph.edges


def test_penman_round_trip() -> None:
    pytest.importorskip("penman")
    graph = penman_to_graph(AMR)
    again = penman_to_graph(graph_to_penman(graph))
    assert set(again.nodes) == set(graph.nodes)
    assert set(again.edges) == set(graph.edges)
    assert again.roots == graph.roots
    # a disconnected graph (two sentences) is written as two AMRs and read back as one graph
    two = graph.union(
        ConceptGraph(("rain-01", "london"), (("rain-01", "location", "london"),), ("rain-01",))
    )
    back = penman_to_graph(graph_to_penman(two))
    assert set(back.nodes) == set(two.nodes) and set(back.edges) == set(two.edges)
    assert set(back.roots) == {"want-01", "rain-01"}


def test_bad_penman_is_named() -> None:
    pytest.importorskip("penman")
    with pytest.raises(ValueError, match="PENMAN"):
        penman_to_graph("(w / want-01 :ARG0 (b / boy")
    with pytest.raises(ValueError, match="string"):
        read_graph(["not", "penman"], fmt="penman")
    with pytest.raises(ValueError, match="format"):
        read_graph([], fmt="amr")


def test_storage_form_survives_every_list_shape() -> None:
    graph = ConceptGraph(
        ("james cameron", "direct", "titanic"),
        (("direct", "nsubj", "james cameron"), ("direct", "dobj", "titanic")),
        ("direct",),
    )
    values = encode_graph(graph)
    assert decode_graph(values) == graph
    assert read_graph(values) == graph
    assert read_graph(json.dumps(values)) == graph
    assert read_graph(encode_list(values, "delimited")) == graph
    assert read_graph(None) == ConceptGraph()


def _toy() -> ConceptGraph:
    # question -> a -> b -> c ; a -> d ; question -> e ; f isolated
    return ConceptGraph(
        (QUESTION_NODE, "a", "b", "c", "d", "e", "f"),
        (
            (QUESTION_NODE, "question", "a"),
            ("a", "r", "b"),
            ("c", "r", "b"),
            ("a", "r", "d"),
            (QUESTION_NODE, "question", "e"),
        ),
        (QUESTION_NODE,),
    )


def test_shortest_paths_keep_only_maximal_paths() -> None:
    paths = shortest_paths(_toy())
    assert paths == [
        [QUESTION_NODE, "e"],
        [QUESTION_NODE, "a", "d"],
        [QUESTION_NODE, "a", "b", "c"],
    ]
    # the concept text: concepts along the kept paths, in order, each once; f is unreachable
    assert path_text(_toy()) == "question e a d b c"
    assert shortest_paths(ConceptGraph(("x",))) == []


def test_question_graph_links_the_question_roots() -> None:
    question = ConceptGraph(("director", "film"), (("director", "of", "film"),), ("director",))
    document = ConceptGraph(("film", "titanic"), (("film", "name", "titanic"),), ())
    merged = question_graph(question, document)
    assert merged.nodes == (QUESTION_NODE, "director", "film", "titanic")
    assert (QUESTION_NODE, "question", "director") in merged.edges
    assert path_text(merged) == "question director film titanic"


def test_document_paths_leave_the_question_concepts_out() -> None:
    from grapher_core.learned.grag.features import node_texts, path_concepts

    question = ConceptGraph(("director", "film"), (("director", "of", "film"),), ("director",))
    document = ConceptGraph(
        ("film", "titanic", "1997"), (("film", "name", "titanic"), ("titanic", "time", "1997")), ()
    )
    assert path_concepts(question, document) == [
        QUESTION_NODE,
        "director",
        "film",
        "titanic",
        "1997",
    ]
    assert path_concepts(question, document, "document") == ["titanic", "1997"]
    assert node_texts(["p"], [document], question, "document") == ["p\ntitanic 1997"]
    with pytest.raises(ValueError, match="paths must be one of"):
        path_concepts(question, document, "question")


def test_concept_overlaps_count_common_nodes_and_edges() -> None:
    a = ConceptGraph(("x", "y", "z"), (("x", "r", "y"), ("y", "r", "z")))
    b = ConceptGraph(("x", "y"), (("y", "s", "x"),))  # same pair, other role and direction
    c = ConceptGraph(("w",))
    nodes, edges = concept_overlaps([a, b, c])
    assert nodes.toarray().tolist() == [[0, 2, 0], [2, 0, 0], [0, 0, 0]]
    assert edges.toarray().tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
    q = ConceptGraph(("q", "x"), (("q", "r", "x"),))
    nodes_q, edges_q = concept_overlaps([a, b, c], q)
    # with the question united in, every pair shares q's concepts: the graph is complete
    assert nodes_q.toarray().tolist() == [[0, 3, 2], [3, 0, 2], [2, 2, 0]]
    assert edges_q.toarray().tolist() == [[0, 2, 1], [2, 0, 1], [1, 1, 0]]


def test_spacy_parser_builds_concepts_and_collapses_function_words() -> None:
    pytest.importorskip("spacy")
    parser = SpacyConceptParser()
    (graph,) = parser.parse(["James Cameron was born in Kapuskasing, Ontario."])
    assert "james cameron" in graph.nodes and "kapuskasing" in graph.nodes
    assert "the" not in graph.nodes and "in" not in graph.nodes
    assert ("bear", "in", "kapuskasing") in graph.edges  # "born in K." -> one edge, role "in"
    assert graph.roots == ("bear",)
    (result,) = parser.extract_batch(["Paris is in France."])
    assert decode_graph(result.entities) == parser.parse(["Paris is in France."])[0]
    with pytest.raises(TypeError, match="sequence"):
        parser.parse("one string")
