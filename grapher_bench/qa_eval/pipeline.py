"""Generate, judge and score answers for every (question, system) pair.

Two passes through the enrichment runner and its SQLite cache: all answer prompts (A.1.2),
then all judge prompts (A.1.3) for the answers that exist. Identical prompts are sent once --
a system whose top K equals another's in the same order and layout costs nothing -- and every
reply is committed as it arrives, so a killed run resumes where it stopped.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from grapher_bench.data import Dataset, Query
from grapher_bench.qa_eval.prompts import answer_prompt, judge_prompt
from grapher_bench.qa_eval.scoring import (
    answer_in_text,
    best_exact_match,
    best_f1,
    normalize_answer,
    parse_judgement,
)
from grapher_bench.qa_eval.systems import Retrieved, System, context_graph, render_context
from grapher_core.enrich.cache import EntityCache
from grapher_core.enrich.completion import OpenAITextCompleter, completion_text
from grapher_core.enrich.runner import run_extraction

__all__ = ["QARecord", "QARun", "ground_truths", "run_qa"]

logger = logging.getLogger(__name__)


@dataclass
class QARecord:
    """One system's answer to one question and every measure of it."""

    query_id: str
    system: str
    top_ids: list[str]
    perfect_recall: float
    answer: str | None
    answer_error: str | None
    judge_reply: str | None
    judged_correct: bool | None
    exact_match: float | None
    f1: float | None
    gold_in_answer: bool | None
    answer_in_context: bool
    refused: bool | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class QARun:
    """Per-question records of one dataset, grouped by system label, in question order."""

    dataset: str
    systems: list[System]
    queries: list[Query]
    records: dict[str, list[QARecord]]
    n_answer_calls: int
    n_answer_cached: int
    n_judge_calls: int
    n_judge_cached: int


def ground_truths(query: Query) -> list[str]:
    """The answer and its aliases (``answer_aliases`` of the multi-hop sets, SQuAD ``answers``)."""
    extra = query.extra
    values = [extra.get("answer")]
    for key in ("answer_aliases", "answers"):
        more = extra.get(key)
        if isinstance(more, list):
            values += more
    out = [v for v in dict.fromkeys(values) if isinstance(v, str) and v.strip()]
    if not out:
        raise ValueError(f"query {query.id!r} has no 'answer' (qa-eval needs a QA set)")
    return out


def _is_refusal(answer: str) -> bool:
    """A.1.2's refusal sentence, or a close paraphrase of it ("not enough information")."""
    return "enough information" in normalize_answer(answer)


def run_qa(dataset: Dataset, systems: Sequence[System], retrieved: Retrieved,
           answerer: OpenAITextCompleter, judge: OpenAITextCompleter | None,
           cache: EntityCache | None, *, progress: bool = False) -> QARun:
    """Answer every question with every system, judge the answers, score them."""
    if not systems:
        raise ValueError("no systems to evaluate")
    truths = [ground_truths(q) for q in dataset.queries]
    contexts: list[str] = []
    prompts: list[str] = []
    for system in systems:
        spec = retrieved.specs[system.ranker]
        graph = context_graph(spec, dataset.task_type)
        for query, ids in zip(dataset.queries, retrieved.top[system.ranker], strict=True):
            context = render_context(ids, retrieved.objects, system.style, graph)
            contexts.append(context)
            prompts.append(answer_prompt(query.text, context))
    answered = run_extraction(prompts, answerer, cache=cache, progress=progress)
    answers = [completion_text(r) for r in answered.results]
    n = len(dataset.queries)
    judge_slots = [i for i, a in enumerate(answers) if a is not None]
    replies: dict[int, str | None] = {}
    judged_calls = judged_cached = 0
    if judge is not None and judge_slots:
        judge_prompts = [judge_prompt(dataset.queries[i % n].text, str(answers[i]),
                                      truths[i % n][0]) for i in judge_slots]
        judged = run_extraction(judge_prompts, judge, cache=cache, progress=progress)
        judged_calls, judged_cached = judged.n_computed, judged.n_cached
        for slot, result in zip(judge_slots, judged.results, strict=True):
            replies[slot] = completion_text(result) if result.ok else None
    records: dict[str, list[QARecord]] = {}
    for s_index, system in enumerate(systems):
        rows = []
        for q_index, query in enumerate(dataset.queries):
            i = s_index * n + q_index
            answer, truth = answers[i], truths[q_index]
            reply = replies.get(i)
            rows.append(QARecord(
                query_id=query.id,
                system=system.label,
                top_ids=retrieved.top[system.ranker][q_index],
                perfect_recall=retrieved.perfect_recall[system.ranker][q_index],
                answer=answer,
                answer_error=None if answer is not None else answered.results[i].error,
                judge_reply=reply,
                judged_correct=parse_judgement(reply),
                exact_match=None if answer is None else best_exact_match(answer, truth),
                f1=None if answer is None else best_f1(answer, truth),
                gold_in_answer=None if answer is None else answer_in_text(answer, truth),
                answer_in_context=answer_in_text(contexts[i], truth),
                refused=None if answer is None else _is_refusal(answer),
            ))
        records[system.label] = rows
    failed = sum(1 for a in answers if a is None)
    if failed:
        message = (f"{dataset.name}: {failed} of {len(answers)} answers failed (counted apart; "
                   "a re-run retries them)")
        logger.warning(message)
        warnings.warn(message, stacklevel=2)
    return QARun(dataset.name, list(systems), list(dataset.queries), records,
                 answered.n_computed, answered.n_cached, judged_calls, judged_cached)
