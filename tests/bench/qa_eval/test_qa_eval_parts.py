"""qa-eval parts: prompts, SQuAD measures, lenient judge parsing, exact McNemar."""

from __future__ import annotations

import pytest

from grapher_bench.enrichment import LINK_GRAPH
from grapher_bench.peers.rankers import peer_graph
from grapher_bench.qa_eval.prompts import A12_TEMPLATE, A13_TEMPLATE, answer_prompt, judge_prompt
from grapher_bench.qa_eval.scoring import (
    answer_in_text,
    best_exact_match,
    best_f1,
    exact_match,
    normalize_answer,
    parse_judgement,
    token_f1,
)
from grapher_bench.qa_eval.stats import mcnemar_exact, paired_compare
from grapher_bench.qa_eval.systems import parse_system, ranker_spec


def test_prompts_are_the_papers_and_filled_once() -> None:
    assert A12_TEMPLATE.startswith("You are an AI assistant. Use ONLY the information")
    assert A12_TEMPLATE.endswith("Question:\n\n{query}\n\nAnswer:")
    assert "Decision: <yes or no>" in A13_TEMPLATE
    filled = answer_prompt("Who is {query}?", "[1] ctx {retrieved_objects}")
    # one pass: braces inside the values are left as they are
    assert "<context>\n\n[1] ctx {retrieved_objects}\n\n</context>" in filled
    assert filled.endswith("Question:\n\nWho is {query}?\n\nAnswer:")
    judged = judge_prompt("Q?", "It is Paris.", "Paris")
    assert (
        "- Question: Q?\n- Generated Answer: It is Paris.\n- Ground Truth Answer: Paris\n" in judged
    )
    with pytest.raises(ValueError, match="question is empty"):
        answer_prompt("  ", "ctx")


def test_squad_exact_match_and_f1_by_hand() -> None:
    assert normalize_answer("The  Eiffel Tower!") == "eiffel tower"
    assert exact_match("The Eiffel Tower!", "eiffel tower") == 1.0
    assert exact_match("Eiffel", "eiffel tower") == 0.0
    # prediction "in paris france" vs "paris": precision 1/3, recall 1 -> F1 = 0.5
    assert token_f1("in Paris, France", "Paris") == pytest.approx(0.5)
    # two shared tokens out of 3 predicted and 4 gold: P=2/3, R=1/2 -> F1 = 4/7
    assert token_f1("red big dog", "a big red cat sat") == pytest.approx(4 / 7)
    assert token_f1("", "") == 1.0 and token_f1("the", "paris") == 0.0
    assert best_exact_match("Alex Chiang", ["Chiang Hsiao-wu", "Alex Chiang"]) == 1.0
    assert best_f1("Chiang", ["Chiang Hsiao-wu", "Alex Chiang"]) == pytest.approx(2 / 3)
    assert answer_in_text("It lies in Bravo City.", ["bravo city"])
    assert not answer_in_text("Bravo Cityscape", ["Bravo City"])  # word boundaries
    with pytest.raises(ValueError, match="no ground-truth"):
        best_f1("x", ["", "  "])


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("Explanation: same city.\n\nDecision: yes", True),
        ("Explanation: wrong.\nDecision: No", False),
        ("**Decision:** YES", True),
        ('After comparing, the decision is "no".', False),
        ("The decision is: 'yes'", True),
        ("Decision: <yes or no>\nExplanation: it matches.\nDecision: yes", True),
        ("Yes, the answer is correct.", True),
        ("no.", False),
        ("I cannot tell whether these match.", None),
        ("The generated answer mentions Norway.", None),
        ("", None),
        (None, None),
    ],
)
def test_judge_parsing_is_lenient_and_never_guesses(
    reply: str | None, verdict: bool | None
) -> None:
    assert parse_judgement(reply) is verdict


def test_exact_mcnemar_on_hand_computed_tables() -> None:
    # b=1, c=5: P[X<=1] for Bin(6, 1/2) = (1 + 6) / 64 -> two-sided 14/64
    assert mcnemar_exact(1, 5) == pytest.approx(14 / 64)
    assert mcnemar_exact(5, 1) == pytest.approx(14 / 64)
    # b=2, c=8: (1 + 10 + 45) / 1024, doubled
    assert mcnemar_exact(2, 8) == pytest.approx(112 / 1024)
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)
    # the 2x2 table: both right 2, A only 1, B only 5, both wrong 1, one unscored question
    a = [True, True, True, False, False, False, False, False, False, None]
    b = [True, True, False, True, True, True, True, True, False, True]
    result = paired_compare(a, b)
    assert (result.n, result.a_only, result.b_only) == (9, 1, 5)
    assert (result.correct_a, result.correct_b) == (3, 7)
    assert result.delta == pytest.approx(100 * 4 / 9)
    assert result.p_value == pytest.approx(14 / 64)
    with pytest.raises(ValueError, match="length"):
        paired_compare([True], [True, False])


def test_system_specs() -> None:
    system = parse_system("gat[entities-capped]:graph")
    assert (system.ranker, system.style) == ("gat[entities-capped]", "graph")
    assert parse_system("baseline").style == "flat"
    assert parse_system("gcs[mentions]:relation").label == "gcs[mentions] + relation context"
    with pytest.raises(ValueError, match="context style"):
        parse_system("gcs:tree")
    with pytest.raises(ValueError, match="expected RANKER"):
        parse_system("gcs[mentions")
    assert ranker_spec("expand-gcs", "passages").graph == peer_graph("expand-gcs", "passages")
    assert ranker_spec("expand-gcs-v1", "passages").graph == LINK_GRAPH["passages"]
    assert ranker_spec("baseline", "passages").graph == "none"
    assert ranker_spec("gcs[mentions]", "passages").graph == "mentions"
    with pytest.raises(ValueError):
        ranker_spec("gcs[nonsense]", "passages")


def test_doc_section_skips_markers_quoted_in_prose(tmp_path) -> None:
    from grapher_bench.qa_eval.report import END, START, write_doc_section

    doc = tmp_path / "qa.md"
    prose = f"`--write-doc` rewrites `{START}` ... `{END}`.\n"
    doc.write_text(f"{prose}\n{START}\nold table\n{END}\n\ntail\n", encoding="utf-8")
    write_doc_section(doc, "new table")
    assert doc.read_text(encoding="utf-8") == f"{prose}\n{START}\nnew table\n{END}\n\ntail\n"
    doc.write_text(f"{END}\n{START}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="comes before"):
        write_doc_section(doc, "x")


def test_paired_rows_count_changed_answers_and_test_the_context() -> None:
    from grapher_bench.qa_eval.pipeline import QARecord, QARun
    from grapher_bench.qa_eval.report import answers_differ, markdown

    def record(system: str, answer: str | None, in_context: bool) -> QARecord:
        return QARecord(
            "q", system, [], 0.0, answer, None, None, None, None, None, False, in_context, False
        )

    a = [
        record("a", "The Mantua.", False),
        record("a", "Paris", False),
        record("a", None, True),
        record("a", "Rome", False),
    ]
    b = [
        record("b", "mantua", True),
        record("b", "Lyon", True),
        record("b", "Oslo", True),
        record("b", "Rome", True),
    ]
    run = QARun("tiny", [parse_system("a"), parse_system("b")], [], {"a": a, "b": b}, 0, 0, 0, 0)
    # normalised "the mantua" == "mantua"; the unanswered question is left out
    assert answers_differ(run, "a", "b") == (1, 3)
    table = markdown([run], "m", None, 10)
    # 3 questions gained the answer in context, none lost it: p = 2 / 2**3
    assert "| a → b | 1 / 3 | +75.0 | 0 / 3 | 0.250 |" in table


def test_sets_are_pooled_for_the_paired_tests() -> None:
    from grapher_bench.qa_eval.pipeline import QARecord, QARun
    from grapher_bench.qa_eval.report import markdown, pooled

    def record(system: str, gold: bool) -> QARecord:
        return QARecord("q", system, [], 0.0, "x", None, None, None, None, None, gold, True, False)

    def run(name: str, a: list[bool], b: list[bool]) -> QARun:
        records = {"a": [record("a", x) for x in a], "b": [record("b", x) for x in b]}
        return QARun(name, [parse_system("a"), parse_system("b")], [], records, 1, 2, 3, 4)

    one = run("one", [False, False, False], [True, True, True])  # b gains 3: p = 0.25
    two = run("two", [False, False, True], [True, True, True])  # b gains 2: p = 0.5
    both = pooled([one, two])
    assert both is not None and both.dataset == "all 2 sets pooled"
    assert len(both.records["a"]) == 6 and both.n_judge_cached == 8
    table = markdown([one, two], "m", None, 10)
    # pooled: 5 gained, 0 lost, p = 2 / 2**5; neither set alone reaches it
    assert "#### all 2 sets pooled" in table
    assert "| +83.3 | 0 / 5 | 0.062 |" in table
    assert pooled([one]) is None
    other = QARun("x", [parse_system("a")], [], {"a": one.records["a"]}, 0, 0, 0, 0)
    assert pooled([one, other]) is None  # different systems are not pooled
