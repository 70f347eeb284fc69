"""Generate, judge and score answers for every (question, system) pair.

Questions go in blocks through the enrichment runner and its SQLite cache: every system's
answer prompt (A.1.2) for the block, then the judge prompt (A.1.3) of every answer that
exists. Identical prompts are sent once -- a system whose top K equals another's in the same
order and layout costs nothing -- and every reply is committed as it arrives, so a killed run
resumes where it stopped.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from grapher_bench.data import Dataset, Query
from grapher_bench.qa_eval.prompts import answer_prompt, judge_prompt
from grapher_bench.qa_eval.scoring import (
    answer_in_context,
    best_exact_match,
    best_f1,
    final_answer,
    gold_in_answer,
    is_refusal,
    parse_judgement,
)
from grapher_bench.qa_eval.systems import Retrieved, System, context_graph, render_context
from grapher_core.enrich.cache import EntityCache
from grapher_core.enrich.completion import OpenAITextCompleter, completion_text
from grapher_core.enrich.runner import run_extraction
from grapher_core.errors import ConfigError, InputError

__all__ = ["MAX_STORED_CHARS", "QARecord", "QARun", "ground_truths", "run_qa", "stored_text"]

logger = logging.getLogger(__name__)

MAX_STORED_CHARS = 20_000
"""Most characters of an answer, final answer or judge reply written to ``per_query.jsonl``.

A model that never stops (or a server that echoes its input) can answer with megabytes; the
row would hold them twice (``answer`` and ``final_answer``). The measures are computed on the
whole text before it is cut; the row says ``answer_truncated`` / ``judge_reply_truncated``."""

_said_cut = False  # the cut is said once per process, not once per row


def stored_text(text: str | None, limit: int = MAX_STORED_CHARS) -> tuple[str | None, bool]:
    """``text`` as a row stores it: its first ``limit`` characters, and whether it was cut."""
    if text is None or len(text) <= limit:
        return text, False
    return text[:limit], True


def _say_cut(query_id: str, system: str) -> None:
    """Warn, the first time only, that rows hold cut texts (so a reader knows the flags)."""
    global _said_cut
    if _said_cut:
        return
    _said_cut = True
    message = (
        f"qa-eval: the answer or judge reply of question {query_id!r} ({system}) is longer "
        f"than {MAX_STORED_CHARS:,} characters; per_query.jsonl keeps the first "
        f"{MAX_STORED_CHARS:,} and marks such rows answer_truncated / judge_reply_truncated "
        "(the measures read the whole text); said once"
    )
    logger.warning(message)
    warnings.warn(message, stacklevel=3)


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
    #: The text scored and judged when it differs from ``answer`` (a ``<think>`` block or a
    #: leading "Answer:" label removed, see :func:`~grapher_bench.qa_eval.scoring.final_answer`).
    final_answer: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The row written to ``per_query.jsonl``: texts cut to :data:`MAX_STORED_CHARS`, with
        ``answer_truncated`` and ``judge_reply_truncated`` saying whether they were."""
        row = asdict(self)
        row["answer"], answer_cut = stored_text(self.answer)
        row["final_answer"], final_cut = stored_text(self.final_answer)
        row["judge_reply"], judge_cut = stored_text(self.judge_reply)
        row["answer_error"], error_cut = stored_text(self.answer_error)
        row["answer_truncated"] = answer_cut or final_cut or error_cut
        row["judge_reply_truncated"] = judge_cut
        if answer_cut or final_cut or judge_cut or error_cut:
            _say_cut(self.query_id, self.system)
        return row


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
    #: What the retrieval said worth reading beside the table (the LLM reranker's counts).
    notes: list[str] = field(default_factory=list)


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
        raise InputError(f"query {query.id!r} has no 'answer' (qa-eval needs a QA set)")
    return out


def run_qa(
    dataset: Dataset,
    systems: Sequence[System],
    retrieved: Retrieved,
    answerer: OpenAITextCompleter,
    judge: OpenAITextCompleter | None,
    cache: EntityCache | None,
    *,
    progress: bool = False,
    block: int = 25,
    judge_suffix: str = "paper",
) -> QARun:
    """Answer every question with every system, judge the answers, score them.

    Questions go in blocks of ``block``: every system answers a block, then the judge reads
    it, so a run stopped at any moment has whole questions cached, and ``--limit`` to the
    blocks done reproduces them with no request. The judge reads (and the measures score)
    the final answer of each reply; ``judge_suffix`` names a judge format suffix
    (:data:`~grapher_bench.qa_eval.prompts.JUDGE_SUFFIXES`).
    """
    if not systems:
        raise ConfigError("no systems to evaluate")
    if block < 1:
        raise ConfigError(f"block must be >= 1, got {block}")
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
    n = len(dataset.queries)
    answers: list[str | None] = [None] * len(prompts)
    finals: list[str | None] = [None] * len(prompts)
    errors: list[str | None] = [None] * len(prompts)
    replies: dict[int, str | None] = {}
    counts = [0, 0, 0, 0]  # answers computed, cached; verdicts computed, cached
    for start in range(0, n, block):  # questions in blocks: a killed run leaves whole blocks
        slots = [
            s * n + q for q in range(start, min(start + block, n)) for s in range(len(systems))
        ]
        answered = run_extraction(
            [prompts[i] for i in slots],
            answerer,
            cache=cache,
            progress=progress,
            label=f"answers [{answerer.name}]",
        )
        counts[0] += answered.n_computed
        counts[1] += answered.n_cached
        for i, result in zip(slots, answered.results, strict=True):
            answers[i], errors[i] = completion_text(result), result.error
            if answers[i] is not None:
                finals[i] = final_answer(str(answers[i]))
        judge_slots = [i for i in slots if finals[i] is not None]
        if judge is None or not judge_slots:
            continue
        judged = run_extraction(
            [
                judge_prompt(
                    dataset.queries[i % n].text, str(finals[i]), truths[i % n][0], judge_suffix
                )
                for i in judge_slots
            ],
            judge,
            cache=cache,
            progress=progress,
            label=f"verdicts [{judge.name}]",
        )
        counts[2] += judged.n_computed
        counts[3] += judged.n_cached
        for i, result in zip(judge_slots, judged.results, strict=True):
            replies[i] = completion_text(result) if result.ok else None
    records: dict[str, list[QARecord]] = {}
    for s_index, system in enumerate(systems):
        rows = []
        for q_index, query in enumerate(dataset.queries):
            i = s_index * n + q_index
            answer, final, truth = answers[i], finals[i], truths[q_index]
            reply = replies.get(i)
            rows.append(
                QARecord(
                    query_id=query.id,
                    system=system.label,
                    top_ids=retrieved.top[system.ranker][q_index],
                    perfect_recall=retrieved.perfect_recall[system.ranker][q_index],
                    answer=answer,
                    answer_error=None if answer is not None else errors[i],
                    judge_reply=reply,
                    judged_correct=parse_judgement(reply),
                    exact_match=None if final is None else best_exact_match(final, truth),
                    f1=None if final is None else best_f1(final, truth),
                    gold_in_answer=None if final is None else gold_in_answer(final, truth),
                    answer_in_context=answer_in_context(contexts[i], truth),
                    refused=None if final is None else is_refusal(final),
                    final_answer=final if final != answer else None,
                )
            )
        records[system.label] = rows
    failed = sum(1 for a in answers if a is None)
    if failed:
        message = (
            f"{dataset.name}: {failed} of {len(answers)} answers failed (counted apart; "
            "a re-run retries them)"
        )
        logger.warning(message)
        warnings.warn(message, stacklevel=2)
    computed, cached, verdicts, verdicts_cached = counts
    return QARun(
        dataset.name,
        list(systems),
        list(dataset.queries),
        records,
        computed,
        cached,
        verdicts,
        verdicts_cached,
        list(retrieved.notes),
    )
