"""Parsers: bounded text length, lone surrogates, deep PENMAN, exact concept-graph round trips.

* The concept parser cuts a text at ``max_chars`` (warned once) and hands spaCy pieces of at
  most ``chunk_chars``, so a 1,000,000-character text costs what its first 100,000 do.
* ``"bad \\ud800 text"`` reaches neither spaCy nor an embedder: U+FFFD instead, said once.
* PENMAN nested 3,000 deep raises the documented ``InputError``, not ``RecursionError``.
* Concept graphs written to metadata come back exactly, in every list shape (hypothesis).
"""

from __future__ import annotations

import itertools
import json
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grapher_core.candidates import Candidate
from grapher_core.edges.concepts import candidate_concepts
from grapher_core.enrich.concepts import (
    ConceptGraph,
    SpacyConceptParser,
    decode_graph,
    encode_graph,
    graph_to_penman,
    normalise_concept,
    penman_to_graph,
    read_graph,
    split_text,
)
from grapher_core.errors import ConfigError, InputError
from grapher_core.metadata import encode_list
from grapher_core.utils import callsite

spacy = pytest.importorskip("spacy")


class RecordingNlp:
    """A blank spaCy pipeline (tokenizer + sentencizer, fast) that records what it is given."""

    def __init__(self) -> None:
        self.nlp = spacy.blank("en")
        self.nlp.add_pipe("sentencizer")
        self.max_length = self.nlp.max_length
        self.seen: list[int] = []
        self.calls = 0

    def pipe(self, texts: list[str], batch_size: int = 1) -> Any:
        self.calls += 1
        self.seen += [len(t) for t in texts]
        return self.nlp.pipe(texts, batch_size=batch_size)


def parser_with(nlp: RecordingNlp, **options: Any) -> SpacyConceptParser:
    parser = SpacyConceptParser(**options)
    parser._spacy._nlp = nlp  # the real model's time is what is bounded; the bound is the same
    return parser


# --- 3. bounded parsing cost -----------------------------------------------------------------


def test_a_million_characters_are_cut_and_parsed_in_bounded_pieces() -> None:
    nlp = RecordingNlp()
    parser = parser_with(nlp)
    sentence = "James Cameron was born in Kapuskasing, Ontario. "
    text = sentence * (1_000_000 // len(sentence) + 1)
    callsite._said.clear()  # once-per-process warnings: say them again here
    with pytest.warns(UserWarning, match="cut there") as caught:
        parser.parse([text, "short"], names=["huge", "small"])
        parser.parse([text])
    assert len([w for w in caught if "cut there" in str(w.message)]) == 1  # said once
    assert sum(nlp.seen) <= 2 * parser.max_chars + len("short")  # two huge texts, cut
    assert max(nlp.seen) <= parser.chunk_chars
    assert max(nlp.seen) > parser.chunk_chars // 2  # cut at a sentence, not mid-word


def test_length_bounds_are_configurable_and_checked() -> None:
    nlp = RecordingNlp()
    parser = parser_with(nlp, max_chars=None, chunk_chars=1000)
    parser.parse(["word " * 5000])
    assert sum(nlp.seen) == len("word " * 5000) and max(nlp.seen) <= 1000
    for bad in ({"max_chars": 0}, {"chunk_chars": True}, {"batch_size": "8"}, {"model": ""}):
        with pytest.raises(ConfigError):
            SpacyConceptParser(**bad)  # type: ignore[arg-type]
    assert split_text("a. b. c", 3) == ["a. ", "b. ", "c"]
    assert "".join(split_text("x" * 25, 10)) == "x" * 25  # no break: cut mid-word


# --- 4. lone surrogates and deep PENMAN ------------------------------------------------------


def test_lone_surrogates_reach_no_parser_and_are_named() -> None:
    parser = parser_with(RecordingNlp())
    callsite._said.clear()  # once-per-process warnings: say them again here
    with pytest.warns(UserWarning, match="lone surrogates.*doc-7"):
        (graph,) = parser.parse(["bad \ud800 text"], names=["doc-7"])
    assert isinstance(graph, ConceptGraph)


def test_grag_with_a_lone_surrogate_in_question_and_candidate() -> None:
    torch = pytest.importorskip("torch")
    assert torch
    from helpers_grag import FakeEmbedder

    from grapher_core.edges.graph import build_graph
    from grapher_core.learned.grag.ranker import GRAGRanker
    from grapher_core.ranking.base import RankContext

    real = SpacyConceptParser()
    ranker = GRAGRanker(embedder=FakeEmbedder(), parser=parser_with(RecordingNlp()))
    candidates = [Candidate("a", "bad \ud800 text", 1.0), Candidate("b", "good text", 0.5)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = ranker.rank(
            build_graph(candidates, []), np.ones(2), RankContext(candidates, "bad \udfff q")
        )
        (graph,) = real.parse(["bad \ud800 text about Paris"])  # the real model too
    assert np.all(np.isfinite(scores))
    assert "paris" in graph.nodes


@pytest.mark.parametrize(
    "text",
    [
        "(a / b" + " :r (c / d" * 3000 + ")" * 3001,  # nested instances: penman recursed
        "(" * 3000 + "a" + ")" * 3000,
    ],
    ids=["nested instances", "parentheses"],
)
def test_deep_penman_raises_the_documented_error(text: str) -> None:
    pytest.importorskip("penman")
    with pytest.raises(InputError, match="not valid PENMAN"):
        penman_to_graph(text)
    with pytest.raises(InputError, match="not valid PENMAN"):
        read_graph(text, "penman")
    assert penman_to_graph('(a / "x (((" :r (b / c))').nodes == ("x (((", "c")  # quoted: not deep


# --- 5. exact round trips --------------------------------------------------------------------

TRICKY = st.sampled_from(
    [
        " :root",
        " :",
        ":",
        "|",
        ";",
        ",",
        "\n",
        "\r",
        "\t",
        "%",
        "%7C",
        "[",
        "]",
        '"',
        "'",
        " ",
        "\\",
    ]
)
CONCEPT = st.lists(st.one_of(TRICKY, st.text(min_size=1, max_size=4)), min_size=1, max_size=4).map(
    "".join
)


@st.composite
def concept_graphs(draw: Any) -> ConceptGraph:
    nodes = draw(st.lists(CONCEPT, max_size=6, unique=True))
    if not nodes:
        return ConceptGraph()
    node = st.sampled_from(nodes)
    edges = draw(st.lists(st.tuples(node, CONCEPT, node), max_size=6, unique=True))
    roots = draw(st.lists(node, max_size=3, unique=True))
    return ConceptGraph(tuple(nodes), tuple(edges), tuple(roots))


@settings(max_examples=300, deadline=None)
@given(concept_graphs())
def test_metadata_round_trip_is_exact_in_every_list_shape(graph: ConceptGraph) -> None:
    values = encode_graph(graph)
    assert decode_graph(values) == graph
    assert read_graph(values) == graph
    assert read_graph(json.dumps(values)) == graph
    if values:
        assert read_graph(encode_list(values, "delimited")) == graph
    stored = [Candidate("x", "t", 1.0, {"concepts": values})]
    assert candidate_concepts(stored) == [graph]


def test_old_plain_values_read_as_before_and_empty_names_are_refused() -> None:
    plain = ["paris :root", "france", "paris :in france", "10:30"]
    assert decode_graph(plain) == ConceptGraph(
        ("paris", "france", "10:30"), (("paris", "in", "france"),), ("paris",)
    )
    with pytest.raises(InputError, match="non-empty"):
        encode_graph(ConceptGraph(("a", "b"), (("a", "", "b"),)))
    assert decode_graph(encode_graph(ConceptGraph(("a\ud800",)))) == ConceptGraph(("a\ud800",))


@settings(max_examples=100, deadline=None)
@given(st.lists(CONCEPT.map(normalise_concept).filter(bool), min_size=1, max_size=5, unique=True))
def test_penman_round_trip_keeps_quoted_concepts(concepts: list[str]) -> None:
    pytest.importorskip("penman")
    edges = tuple((a, "ARG0", b) for a, b in itertools.pairwise(concepts))
    graph = ConceptGraph(tuple(concepts), edges, concepts[:1])
    back = penman_to_graph(graph_to_penman(graph))
    assert set(back.nodes) == set(graph.nodes) and set(back.edges) == set(graph.edges)
