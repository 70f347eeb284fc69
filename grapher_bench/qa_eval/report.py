"""Tables of a qa-eval run: one row per system, paired tests against the first system and
between the flat and graph layouts of the same ranker."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

from grapher_bench import sections
from grapher_bench.qa_eval.pipeline import QARecord, QARun
from grapher_bench.qa_eval.prompts import judge_version
from grapher_bench.qa_eval.scoring import normalize_answer
from grapher_bench.qa_eval.stats import PairedResult, paired_compare
from grapher_bench.sections import pct

__all__ = [
    "END",
    "START",
    "answers_differ",
    "comparisons",
    "markdown",
    "pooled",
    "summary",
    "write_doc_section",
    "write_outputs",
]

START = "<!-- qa-eval:start -->"
END = "<!-- qa-eval:end -->"


def _mean(values: Sequence[float | bool | None]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return fmean(kept) if kept else None


def summary(records: Sequence[QARecord]) -> dict[str, Any]:
    """Counts and rates of one system (rates in 0-1; None when nothing to average)."""
    yes = sum(1 for r in records if r.judged_correct is True)
    no = sum(1 for r in records if r.judged_correct is False)
    failed = sum(1 for r in records if r.answer is None)
    return {
        "n": len(records),
        "judged_yes": yes,
        "judged_no": no,
        "judge_unparsed": sum(
            1 for r in records if r.answer is not None and r.judged_correct is None
        ),
        "answer_failed": failed,
        "judge_accuracy": yes / (yes + no) if yes + no else None,
        "exact_match": _mean([r.exact_match for r in records]),
        "f1": _mean([r.f1 for r in records]),
        "gold_in_answer": _mean([r.gold_in_answer for r in records]),
        "answer_in_context": _mean([r.answer_in_context for r in records]),
        "refused": _mean([r.refused for r in records]),
        "perfect_recall": _mean([r.perfect_recall for r in records]),
    }


def comparisons(run: QARun) -> list[tuple[str, str]]:
    """Pairs to test: every system against the first; each graph or relation layout against
    the flat one of the same ranker."""
    labels = [s.label for s in run.systems]
    pairs = [(labels[0], label) for label in labels[1:]]
    flat = {s.ranker: s.label for s in run.systems if s.style == "flat"}
    for system in run.systems:
        if system.style != "flat" and system.ranker in flat:
            pair = (flat[system.ranker], system.label)
            if pair not in pairs:
                pairs.append(pair)
    return pairs


def paired(run: QARun, a: str, b: str, measure: str) -> PairedResult:
    """McNemar over one per-question yes/no measure (``judged_correct``, ``gold_in_answer``,
    ``answer_in_context``)."""
    return paired_compare(
        [getattr(r, measure) for r in run.records[a]], [getattr(r, measure) for r in run.records[b]]
    )


def answers_differ(run: QARun, a: str, b: str) -> tuple[int, int]:
    """Questions both systems answered whose SQuAD-normalised answers differ, and how many both
    answered: did the change of context change the answer at all, right or wrong?"""
    both = [
        (x.answer, y.answer)
        for x, y in zip(run.records[a], run.records[b], strict=True)
        if x.answer is not None and y.answer is not None
    ]
    return sum(normalize_answer(x) != normalize_answer(y) for x, y in both), len(both)


def pooled(runs: Sequence[QARun]) -> QARun | None:
    """Every set's questions as one run, when two or more sets ran the same systems: one
    set's answer-level differences are often too few for a test, the sets together may not be.
    ``None`` for a single set or when the sets' systems differ."""
    if len(runs) < 2:
        return None
    labels = [s.label for s in runs[0].systems]
    if any([s.label for s in run.systems] != labels for run in runs[1:]):
        return None
    return QARun(
        f"all {len(runs)} sets pooled",
        list(runs[0].systems),
        [q for run in runs for q in run.queries],
        {label: [r for run in runs for r in run.records[label]] for label in labels},
        sum(run.n_answer_calls for run in runs),
        sum(run.n_answer_cached for run in runs),
        sum(run.n_judge_calls for run in runs),
        sum(run.n_judge_cached for run in runs),
    )


def _p(value: float) -> str:
    return f"{value:.3f}" if value >= 0.001 else "<0.001"


def markdown(
    runs: Sequence[QARun],
    model: str,
    judge_model: str | None,
    k: int,
    *,
    judge_format: str = "paper",
) -> str:
    """Per-set system rows and paired-test rows as markdown, then the same for every set
    pooled (:func:`pooled`) when there are several."""
    out: list[str] = []
    together = pooled(runs)
    for run in [*runs, *([together] if together is not None else [])]:
        out.append(f"#### {run.dataset} ({len(run.queries)} questions, top {k})\n")
        out.append(
            "| system | PR@K | answer in context | judge: correct | unparsed | failed "
            "| EM | F1 | gold in answer | refused |"
        )
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for system in run.systems:
            s = summary(run.records[system.label])
            out.append(
                f"| {system.label} | {pct(s['perfect_recall'])} | {pct(s['answer_in_context'])} "
                f"| {pct(s['judge_accuracy'])} | {s['judge_unparsed']} | {s['answer_failed']} "
                f"| {pct(s['exact_match'])} | {pct(s['f1'])} | {pct(s['gold_in_answer'])} "
                f"| {pct(s['refused'])} |"
            )
        out.append("")
        for note in run.notes:
            if note.startswith("llm-rerank"):  # its fallbacks belong beside its rows
                out.append(f"*{note}.*\n")
        out.append(
            "| A → B | answers differ | answer in context: Δ | A only / B only | p "
            "| gold in answer: Δ | A only / B only | p (McNemar) "
            "| judge: n | Δ | A only / B only | p |"
        )
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for a, b in comparisons(run):
            differ, both = answers_differ(run, a, b)
            c = paired(run, a, b, "answer_in_context")
            g = paired(run, a, b, "gold_in_answer")
            j = paired(run, a, b, "judged_correct")
            out.append(
                f"| {a} → {b} | {differ} / {both} | {c.delta:+.1f} "
                f"| {c.a_only} / {c.b_only} | {_p(c.p_value)} | {g.delta:+.1f} "
                f"| {g.a_only} / {g.b_only} | {_p(g.p_value)} | {j.n} | {j.delta:+.1f} "
                f"| {j.a_only} / {j.b_only} | {_p(j.p_value)} |"
            )
        out.append("")
    judge = judge_model or "none (LLM-free measures only)"
    prompt = (
        ""
        if judge_format == "paper" or judge_model is None
        else (f" (A.1.3 + the `{judge_format}` format suffix, {judge_version(judge_format)})")
    )
    out.append(
        f"Answer model: `{model}`; judge model: `{judge}`{prompt}. Percentages over answered "
        "questions; the judge's accuracy over parsed verdicts (unparsed are not 'no')."
    )
    return "\n".join(out) + "\n"


def write_outputs(run: QARun, folder: Path, notes: Sequence[str] = ()) -> None:
    """``per_query.jsonl`` and ``summary.json`` of one dataset under ``folder`` (``notes``: the
    retrieval run's, e.g. the LLM reranker's counts)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "per_query.jsonl").open("w", encoding="utf-8") as handle:
        for label, rows in run.records.items():
            for row in rows:
                handle.write(json.dumps({**row.to_json(), "system": label}) + "\n")
    payload = {
        "dataset": run.dataset,
        "n_queries": len(run.queries),
        "systems": {
            s.label: {"spec": s.spec_text, **summary(run.records[s.label])} for s in run.systems
        },
        "paired": [
            {
                "a": a,
                "b": b,
                "answers_differ": answers_differ(run, a, b)[0],
                **{
                    f"context_{k}": v
                    for k, v in vars(paired(run, a, b, "answer_in_context")).items()
                },
                **{f"judge_{k}": v for k, v in vars(paired(run, a, b, "judged_correct")).items()},
                **{f"gold_{k}": v for k, v in vars(paired(run, a, b, "gold_in_answer")).items()},
            }
            for a, b in comparisons(run)
        ],
        "llm_calls": {
            "answers_computed": run.n_answer_calls,
            "answers_cached": run.n_answer_cached,
            "judge_computed": run.n_judge_calls,
            "judge_cached": run.n_judge_cached,
        },
        "retrieval_notes": list(notes),
    }
    (folder / "summary.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def write_doc_section(doc: Path, body: str) -> None:
    """Replace the text between the qa-eval markers of ``doc`` (and nothing else)."""
    sections.write_section(doc, START, END, body)
