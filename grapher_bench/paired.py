"""Paired tests between the rows of one bench run: a row's gain is only worth reporting with
how many questions it won and lost on, and whether that split could be chance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from grapher_bench.peers.llm_rerank import LLM_RERANK, stack_prefix
from grapher_bench.runner import DatasetRun
from grapher_core.evaluation.paired import compare_paired

__all__ = ["PairedTest", "paired_json", "paired_pairs", "paired_table", "paired_tests"]


@dataclass(frozen=True)
class PairedTest:
    """``row`` against ``against`` on PR@k, question by question."""

    row: str
    against: str
    k: int
    n: int
    delta_points: float
    wins: int
    losses: int
    p_value: float


def paired_pairs(labels: Sequence[str]) -> list[tuple[str, str]]:
    """Every row against the first; a stacked ``llm-rerank+X`` / ``llm-scores+X`` row also
    against ``llm-rerank`` and against ``X`` -- the two things the stack could be merely
    repeating."""
    if not labels:
        return []
    first = labels[0]
    pairs = [(label, first) for label in labels[1:]]
    for label in labels:
        prefix = stack_prefix(label)
        if prefix is None:
            continue
        for part in (LLM_RERANK, label[len(prefix) :]):
            if part in labels and part != first and (label, part) not in pairs:
                pairs.append((label, part))
    return pairs


def paired_tests(run: DatasetRun, ks: Sequence[int] = (5, 10)) -> list[PairedTest]:
    """Exact McNemar (sign) tests on per-question PR@k for :func:`paired_pairs` of ``run`` (the
    core's paired comparison, the one ``grapher eval`` reports); questions missing from either
    row are left out, ties are not counted."""
    tests: list[PairedTest] = []
    for row, against in paired_pairs(list(run.results)):
        mine, theirs = run.results[row].per_query, run.results[against].per_query
        shared = [q for q in mine if q in theirs]
        for k in ks:
            key = f"PR@{k}"
            ours = [float(mine[q][key]) for q in shared]
            others = [float(theirs[q][key]) for q in shared]
            diffs = [a - b for a, b in zip(ours, others, strict=True)]
            delta = 100.0 * sum(diffs) / len(diffs) if diffs else 0.0
            result = compare_paired(ours, others)
            tests.append(
                PairedTest(row, against, k, len(diffs), delta, result.wins, result.losses, result.p)
            )
    return tests


def paired_table(tests: Sequence[PairedTest]) -> str:
    """A markdown table of :func:`paired_tests` (empty string when there is nothing to pair)."""
    if not tests:
        return ""
    lines = [
        "| row | against | PR@k | Δ points | won / lost | p (exact McNemar) |",
        "|---|---|---|---|---|---|",
    ]
    for t in tests:
        lines.append(
            f"| {t.row} | {t.against} | {t.k} | {t.delta_points:+.1f} | "
            f"{t.wins} / {t.losses} | {t.p_value:.3g} |"
        )
    return "\n".join(lines) + "\n"


def paired_json(tests: Sequence[PairedTest]) -> list[dict[str, Any]]:
    """:func:`paired_tests` as results.json rows."""
    return [asdict(t) for t in tests]
