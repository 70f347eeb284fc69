"""qa-eval stays honest about what small models reply: judge verdicts in every format they use,
answers with reasoning or labels, one normalisation for both "in" measures, versioned prompts.

The scripted server (tests/helpers/enrich_fault_server.py) answers the judge in the formats
below, so the whole pipeline is checked on them, not the parser alone.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from enrich_fault_server import FaultConfig, FaultServer, qa_reply

from grapher_bench.qa_eval import prompts
from grapher_bench.qa_eval.scoring import (
    answer_in_context,
    answer_in_text,
    final_answer,
    gold_in_answer,
    is_refusal,
    normalize_answer,
    parse_judgement,
    strip_reasoning,
)

#: Replies small models give to A.1.3, and what they decide (None: no decision stated).
REPLIES: list[tuple[str | None, bool | None]] = [
    # plain words, punctuation, casing, markdown
    ("yes", True),
    ("no", False),
    ("Yes.", True),
    ("No.", False),
    ("YES", True),
    ("yEs", True),
    ("**Yes**", True),
    ("**No**", False),
    ("Correct", True),
    ("Incorrect.", False),
    ("True", True),
    # labels
    ("Answer: no", False),
    ("Answer: Yes", True),
    ("Explanation: both say Echo Town.\n\n**Decision:** **Yes**", True),
    ("### Decision\nNo", False),
    ("Decision - correct", True),
    ("Final decision: NO.", False),
    ("the verdict: no", False),
    ("So the answer is yes.", True),
    ("Decision: Yes, the generated answer is correct.", True),
    ("Evaluation: Explanation: the same. Decision: yes", True),
    # JSON, fenced or not
    ('{"verdict": "yes"}', True),
    ('```json\n{"decision": "no", "explanation": "other city"}\n```', False),
    ('{"correct": true}', True),
    ("{'decision': 'no'}", False),
    # reasoning blocks: only what follows them counts
    ("<think>The answer says Paris. Decision: no?</think>\nDecision: yes", True),
    ("<think>hmm, the decision is yes", None),  # cut while thinking
    ("weighing both answers...</think>\n\nNo", False),  # the template opened the block
    # trailing explanations
    ("Yes. The generated answer names Bravo City, as the ground truth does.", True),
    ("No, the answer names another city.", False),
    ("Yes the generated answer matches", True),
    ("The generated answer is correct.", True),
    ("The generated answer is not correct.", False),
    (
        "Explanation: wrong city.\nDecision: No\n\n"
        "A different answer would change the decision to yes.",
        False,
    ),
    # Chinese
    ("是", True),
    ("否", False),
    ("决定：是", True),
    ("判断：不正确", False),
    ("是的，答案正确。", True),
    # no decision: never read as "no"
    ("", None),
    ("   ", None),
    (None, None),
    ("I'm sorry, but I can't help with that.", None),
    ("I cannot tell whether these match.", None),
    ("Decision: <yes or no>", None),  # the format echoed
    ("Decision: yes or no", None),
    ("Decision: yes/no", None),
    ("If the generated answer is correct, the decision is yes.", None),  # the rule restated
    ("No information about the founder is given.", None),
    ("Nope", None),
    ("Explanation: The ground truth answer is no but the generated answer is yes.", None),
    ("- Generated Answer: no\n- Ground Truth Answer: yes", None),  # the input echoed
    # the format echoed, then decided
    ("Decision: <yes or no>\nExplanation: it matches.\nDecision: yes", True),
    ("- Generated Answer: no\n- Ground Truth Answer: yes\nDecision: no", False),
]


@pytest.mark.parametrize(("reply", "verdict"), REPLIES)
def test_judge_replies_in_every_format(reply: str | None, verdict: bool | None) -> None:
    assert parse_judgement(reply) is verdict


def test_answers_lose_reasoning_and_labels_but_nothing_else() -> None:
    assert final_answer("<think>Bravo? or Echo?</think>\nBravo City") == "Bravo City"
    assert final_answer("**Answer:** Echo Town.") == "Echo Town."
    assert final_answer("Answer: Echo Town") == "Echo Town"
    assert final_answer("<think>still thinking about Echo Town") == ""  # cut while thinking
    assert final_answer("The answer: it is Echo Town") == "The answer: it is Echo Town"
    assert strip_reasoning("<THINKING>x</THINKING> y") == "y"
    # the gold string inside the reasoning does not count as answered
    assert not gold_in_answer(final_answer("<think>Echo Town?</think> Foxtrot"), ["Echo Town"])
    assert is_refusal(prompts.REFUSAL)
    assert is_refusal("I do not know.") and is_refusal("There is no information about it.")
    assert not is_refusal("Echo Town")


@pytest.mark.parametrize(
    ("text", "truths"),
    [
        ("It lies in Bravo City.", ["bravo city"]),
        ("The Bravo Cityscape", ["Bravo City"]),
        ("THE FOXTROT HILLS!", ["Foxtrot Hills"]),
        ("an oak forest", ["oak forest"]),
        ("Dana Reed's company", ["Dana Reed"]),  # "reeds": SQuAD drops the apostrophe
        ("661–80 (en dash)", ["661"]),  # non-ASCII punctuation stays, as in SQuAD
        ("rock-and-roll", ["rock and roll"]),
    ],
)
def test_gold_in_answer_and_answer_in_context_are_one_test(text: str, truths: list[str]) -> None:
    """Both measures are the same function of (text, truths): one normalisation for both."""
    assert gold_in_answer(text, truths) == answer_in_context(text, truths)
    assert gold_in_answer(text, truths) == answer_in_text(text, truths)
    needle = f" {normalize_answer(truths[0])} "
    assert answer_in_context(text, truths) == (needle in f" {normalize_answer(text)} ")


def test_both_measures_call_the_one_normalisation(monkeypatch: pytest.MonkeyPatch) -> None:
    from grapher_bench.qa_eval import scoring

    seen: list[str] = []
    original = scoring.normalize_answer

    def spy(text: str) -> str:
        seen.append(text)
        return original(text)

    monkeypatch.setattr(scoring, "normalize_answer", spy)
    scoring.gold_in_answer("answer text", ["gold"])
    scoring.answer_in_context("context text", ["gold"])
    assert seen == ["answer text", "gold", "context text", "gold"]


#: sha256 (first 16 hex digits) of every prompt text, by version: change a text, bump its
#: version (prompts.py) and update this table.
PINNED = {
    "a12-v1": "15af2a8915c1dc3a",
    "a13-v1": "9cd60d579ea4bcbd",
    "choice-select-v1": "279c9dd758d22e7d",
    "sfx-decision-line-v1": "95014243b9522bd7",
    "sfx-json-v1": "c735c8fd06af31c3",
}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_every_prompt_text_is_pinned_to_its_version() -> None:
    texts = {
        prompts.ANSWER_VERSION: prompts.A12_TEMPLATE,
        prompts.JUDGE_VERSION: prompts.A13_TEMPLATE,
        prompts.CHOICE_SELECT_VERSION: prompts.CHOICE_SELECT_TEMPLATE,
        **{v: t for v, t in prompts.JUDGE_SUFFIXES.values() if v},
    }
    assert {v: _digest(t) for v, t in texts.items()} == PINNED, "text changed: bump its version"
    assert set(prompts.PROMPT_VERSIONS.values()) == set(PINNED)
    # the flat layout is part of the answer prompt's version too
    assert prompts.flat_context(["Alpha\nx", " Bravo "]) == "[1] Alpha\nx\n\n[2] Bravo"


def test_judge_suffixes_follow_a13_verbatim_and_are_versioned() -> None:
    plain = prompts.judge_prompt("Q?", "It is Paris.", "Paris")
    assert plain == prompts.judge_prompt("Q?", "It is Paris.", "Paris", "paper")
    assert prompts.judge_version("paper") == "a13-v1"
    for name in ("decision-line", "json"):
        filled = prompts.judge_prompt("Q?", "It is Paris.", "Paris", name)
        assert filled.startswith(plain)  # A.1.3 untouched, the suffix after it
        assert filled[len(plain) :].startswith("\n\n=== Answer Format Reminder ===")
        assert prompts.judge_version(name) == f"a13-v1+{prompts.JUDGE_SUFFIXES[name][0]}"
    with pytest.raises(ValueError, match="unknown judge format"):
        prompts.judge_prompt("Q?", "a", "b", "yaml")


def _judge_in_formats(messages: list[dict[str, Any]], style_of: dict[str, int]) -> str:
    """qa_reply's answers behind a reasoning block and a label; its verdicts rewritten into
    four of the formats above (the question's ``style_of``)."""
    reply = qa_reply(messages)
    prompt = str(messages[-1]["content"])
    if "Ground Truth Answer:" not in prompt:
        return f"<think>The context names several places.</think>\nAnswer: {reply}"
    verdict = "yes" if "Decision: yes" in reply or '"yes"' in reply else "no"
    if "I cannot tell" in reply:
        verdict = "no"
    question = prompt.split("- Question: ", 1)[1].split("\n", 1)[0]
    return [
        f"**{verdict.capitalize()}**",
        f'{{"decision": "{verdict}"}}',
        f"<think>Decision: {'no' if verdict == 'yes' else 'yes'}?</think>Decision: {verdict}",
        "I'm sorry, I cannot evaluate this.",
    ][style_of[question]]


def test_pipeline_reads_every_format_and_scores_the_final_answer(
    qa_set: Path, tmp_path: Path
) -> None:
    pytest.importorskip("bm25s")
    from grapher_bench.data import load_dataset
    from grapher_bench.qa_eval.pipeline import run_qa
    from grapher_bench.qa_eval.report import summary
    from grapher_bench.qa_eval.systems import parse_system, retrieve
    from grapher_core.enrich.cache import EntityCache
    from grapher_core.enrich.completion import OpenAITextCompleter

    seen: list[str] = []
    dataset = load_dataset(qa_set)
    style_of = {q.text: i % 4 for i, q in enumerate(dataset.queries)}  # every format once

    def respond(messages: list[dict[str, Any]]) -> str:
        seen.append(str(messages[-1]["content"]))
        return _judge_in_formats(messages, style_of)

    systems = [parse_system("baseline")]
    retrieved = retrieve(dataset, systems, k=3, retriever="bm25")
    options: dict[str, Any] = {"concurrency": 2, "max_retries": 0, "timeout": 10.0}
    with FaultServer(FaultConfig(responder=respond), lifetime=60) as server:
        answerer = OpenAITextCompleter("f", version="a", base_url=server.base_url, **options)
        judge = OpenAITextCompleter("f", version="j", base_url=server.base_url, **options)
        with EntityCache(tmp_path / "c.sqlite") as cache:
            run = run_qa(dataset, systems, retrieved, answerer, judge, cache, judge_suffix="json")
    rows = run.records["baseline"]
    for row, query in zip(rows, dataset.queries, strict=True):
        assert row.answer is not None and row.answer.startswith("<think>")
        final = row.final_answer
        assert final is not None and "<think>" not in final and not final.startswith("Answer:")
        assert row.gold_in_answer == answer_in_text(
            final, [query.extra["answer"], *query.extra["answer_aliases"]]
        )
        judged = next(p for p in seen if f"- Question: {query.text}\n" in p)
        assert f"- Generated Answer: {final}\n" in judged  # the judge reads the final answer
        assert judged.endswith(prompts.JUDGE_SUFFIXES["json"][1])
        if style_of[query.text] == 3:
            assert row.judged_correct is None  # a refusal to judge is not a "no"
        else:
            assert row.judged_correct is (query.extra["answer"].lower() in final.lower())
    s = summary(rows)
    assert s["judged_yes"] + s["judged_no"] + s["judge_unparsed"] == len(rows)
    assert s["judge_unparsed"] == 1 and s["judged_yes"] + s["judged_no"] == 3
    assert json.loads(json.dumps(rows[0].to_json()))["final_answer"] == rows[0].final_answer
