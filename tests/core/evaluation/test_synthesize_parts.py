"""The parts of question synthesis that need no server: reading a model's answer leniently (never
``eval``), the identifiers a question must not quote, and the seeded draw of linked pairs and
controls from a corpus's own edges."""

from __future__ import annotations

import pytest

from grapher_core.candidates import CorpusObject
from grapher_core.errors import ConfigError
from grapher_core.evaluation.kinds import by_kind
from grapher_core.evaluation.measure import Measurement
from grapher_core.evaluation.synthesize_plan import PAIR, SINGLE, linked_pairs, plan_seeds
from grapher_core.evaluation.synthesize_text import (
    PROMPT_WORDS,
    identifiers,
    named_identifier,
    parse_question,
)

ASKED = "Which trials of a study were pruned at step 10?"


@pytest.mark.parametrize(
    "answer",
    [
        '{"question": "Which trials of a study were pruned at step 10?"}',
        'Sure!\n```json\n{"question": "Which trials of a study were pruned at step 10?"}\n```',
        'Here it is: {"question": "Which trials of a study were pruned at step 10?"} Hope it helps',
        '"Which trials of a study were pruned at step 10?"',
        "Question: Which trials of a study were pruned at step 10?",
        "**Question 1:** Which trials of a study were pruned at step 10?",
        "1. Which trials of a study were pruned at step 10?\n2. Another one?",
        '{"q": "Which trials of a study were pruned at step 10?"}',
        '{"question": "Which trials of a study were pruned at step 10?',  # cut short
    ],
)
def test_answers_are_read_leniently(answer: str) -> None:
    assert parse_question(answer) == ASKED


@pytest.mark.parametrize(
    "answer",
    [
        None,
        "",
        "I cannot write a question about this.",
        '{"question": "Why?"}',  # under three words
        '{"question": 42}',
        "__import__('os').system('echo no')",  # read as text, never run; not a question
        "x?" * 300,  # too long
    ],
)
def test_answers_without_a_question_are_none(answer: str | None) -> None:
    assert parse_question(answer) is None


def test_a_request_without_a_question_mark_is_a_question() -> None:
    assert parse_question("List the runs whose metrics exceed 0.9") == (
        "List the runs whose metrics exceed 0.9"
    )


def test_identifiers_are_names_not_plain_words() -> None:
    table = CorpusObject("optuna.trial_params", "Table: trial_params", {"table": "trial_params"})
    assert identifiers(table) == ["optuna.trial_params", "trial_params"]
    plain = CorpusObject("optuna.trials", "Table: trials", {"table": "trials"})
    assert identifiers(plain) == ["optuna.trials"]  # "trials" may be asked about as a word
    chunk = CorpusObject("ref/surface.html#006", "...", {"doc_id": "ref/surface.html"})
    assert identifiers(chunk) == ["ref/surface.html#006", "surface.html", "ref/surface.html"]
    names = identifiers(table) + identifiers(chunk)
    assert named_identifier("What does TRIAL_PARAMS hold?", names) == ["trial_params"]
    assert named_identifier("See surface.html for blit", names) == ["surface.html"]
    assert named_identifier("What do trial params hold?", names) == []
    assert named_identifier("What do my_trial_params hold?", names) == []  # whole words only
    said = "What changed, as described in Item A and item B?"
    assert named_identifier(said, PROMPT_WORDS) == ["Item A", "Item B"]  # the prompt's words
    assert named_identifier("How are nested list items indented?", PROMPT_WORDS) == []


def _chunks() -> list[CorpusObject]:
    """Two pages of three chunks; page a's second chunk links to page b's last."""
    objects = []
    for page in ("a", "b"):
        for i in range(3):
            links = ["b.md#end"] if (page, i) == ("a", 1) else []
            anchors = ["end"] if (page, i) == ("b", 2) else []
            metadata = {"doc_id": f"{page}.md", "source": f"{page}.md", "chunk_index": i}
            metadata.update({"links": links, "anchors": anchors})
            objects.append(CorpusObject(f"{page}.md#{i}", f"page {page} chunk {i} " * 6, metadata))
    return objects


def test_pairs_are_the_corpus_edges_each_once() -> None:
    objects = _chunks()
    pairs = {(objects[p.a].id, objects[p.b].id, p.via) for p in linked_pairs(objects)}
    link = "ChunkLinks('links' -> 'source')"
    order = "AdjacentChunks('doc_id')"
    assert pairs == {
        ("a.md#1", "b.md#2", link),
        ("a.md#0", "a.md#1", order),
        ("a.md#1", "a.md#2", order),
        ("b.md#0", "b.md#1", order),
        ("b.md#1", "b.md#2", order),
    }


def test_seeds_are_drawn_per_edge_kind_with_a_seed() -> None:
    objects = _chunks()
    seeds = plan_seeds(objects, 4, pair_share=0.5, seed=3)
    assert [s.kind for s in seeds] == [PAIR, PAIR, SINGLE, SINGLE]
    assert {s.via for s in seeds[:2]} == {
        "ChunkLinks('links' -> 'source')",
        "AdjacentChunks('doc_id')",
    }  # the one link is drawn, not crowded out by the four chunk-order pairs
    in_pairs = {i for s in seeds[:2] for i in s.ids}
    assert not in_pairs & {i for s in seeds[2:] for i in s.ids}  # controls: other objects
    assert plan_seeds(objects, 4, pair_share=0.5, seed=3) == seeds
    many = plan_seeds(objects, 20)  # more asked than there are pairs: singles fill
    assert [s.kind for s in many].count(SINGLE) == 6  # every object once
    pairs = [s for s in many if s.kind == PAIR]
    assert 0 < len(pairs) < 5  # not all 5 edges: no object in more than two pairs
    assert max(sum(o in s.ids for s in pairs) for o in (x.id for x in objects)) <= 2
    short = [CorpusObject("x", "too short", {})]
    assert plan_seeds(short, 3) == []
    with pytest.raises(ConfigError, match="integer >= 1"):
        plan_seeds(objects, 0)
    with pytest.raises(ConfigError, match="pair_share"):
        plan_seeds(objects, 3, pair_share=1.5)


def test_results_split_by_kind() -> None:
    retriever = Measurement("retriever", None, ((1, 9), (1,), (4,)))  # gold ranks per question
    graph = Measurement("graph", None, ((1, 2), (2,), (5,)))
    kinds = {"q1": "pair", "q2": "single", "q3": "single"}
    pair, single = by_kind([retriever, graph], ["q1", "q2", "q3"], kinds, 1)
    assert (pair.kind, pair.questions, single.questions) == ("pair", 1, 2)
    assert pair.pr == {"retriever": 0.0, "graph": 0.0}
    assert pair.gold == {"retriever": 0.5, "graph": 0.5}
    assert single.pr == {"retriever": 0.5, "graph": 0.0}
    assert (single.wins["graph"], single.losses["graph"]) == (0, 1)
