"""What an evaluation shows: the table a person reads at a glance, the one-line gain of a
choice, and the machine report (every row's metrics, latency, paired tests and gold ranks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from grapher_core.evaluation.measure import EvaluationScope, Measurement
from grapher_core.evaluation.paired import PairedComparison

__all__ = ["gain_text", "pct", "render_table", "report_json"]

TEXT_COLUMNS = 4
"""The table's leading columns that describe a configuration (left-aligned)."""


def pct(value: float) -> str:
    """A fraction as the table prints it: percent, one decimal."""
    return f"{100 * value:.1f}"


def render_table(rows: Sequence[Measurement], ks: Sequence[int], choice: Measurement | None) -> str:
    """The retriever first, one row per configuration, metrics in percent (MRR as a fraction),
    latency in ms, and the paired tests of PR@<largest K> and gold@<smallest K> against the
    retriever (``+wins/-losses p``)."""
    small, large = min(ks), max(ks)
    header = ["ranker", "alpha", "seeds", "graph"]
    header += [f"gold@{k}" for k in ks] + [f"PR@{k}" for k in ks] + ["MRR", "ms p50", "ms p95"]
    header += [f"PR@{large} vs retr.", f"gold@{small} vs retr.", ""]
    lines = [_cells(row, rows[0], ks, row is choice) for row in rows]
    widths = [max(len(header[i]), *(len(line[i]) for line in lines)) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(width) if i < TEXT_COLUMNS or i == len(cells) - 1 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths[:-1])
    return "\n".join([fmt(header), rule, *(fmt(line) for line in lines)])


def _cells(row: Measurement, base: Measurement, ks: Sequence[int], chosen: bool) -> list[str]:
    """One line of the table, cell by cell."""
    setting = row.setting
    if setting is None:
        cells = ["retriever", "-", "-", "-"]
    else:
        cells = [setting.ranker, setting.alpha_text, setting.seeds, setting.graph]
    metrics = row.metrics(ks)
    cells += [pct(metrics[f"gold@{k}"]) for k in ks] + [pct(metrics[f"PR@{k}"]) for k in ks]
    cells.append(f"{metrics['MRR']:.3f}")
    latency = row.latency()
    cells += ["-", "-"] if latency is None else [f"{latency[q]:.2f}" for q in ("median", "p95")]
    if setting is None:
        return [*cells, "-", "-", ""]
    tests = row.versus(base, ks)
    cells += [_test(tests[f"PR@{max(ks)}"]), _test(tests[f"gold@{min(ks)}"])]
    return [*cells, "<- best" if chosen else ""]


def _test(result: PairedComparison) -> str:
    mark = "*" if result.p < 0.05 else " "
    return f"+{result.wins}/-{result.losses} p={result.p:.2g}{mark}"


def gain_text(row: Measurement, base: Measurement, ks: Sequence[int]) -> str:
    """``row`` against ``base`` in one line: PR@<largest K> with its McNemar p, gold@<smallest
    K> and MRR, each before -> after."""
    small, large = min(ks), max(ks)
    mine, theirs = row.metrics(ks), base.metrics(ks)
    p = row.versus(base, ks)[f"PR@{large}"].p
    return (
        f"PR@{large} {pct(theirs[f'PR@{large}'])} -> {pct(mine[f'PR@{large}'])} "
        f"(McNemar p={p:.2g}), gold@{small} {pct(theirs[f'gold@{small}'])} -> "
        f"{pct(mine[f'gold@{small}'])}, MRR {theirs['MRR']:.3f} -> {mine['MRR']:.3f}"
    )


def report_json(
    rows: Sequence[Measurement],
    scope: EvaluationScope,
    *,
    config: dict[str, Any],
    chosen: Measurement | None,
    model: str,
    graph: str,
    skipped: Mapping[str, str],
) -> dict[str, Any]:
    """The machine report: what ran (questions, the embedding ``model``, the ``graph``
    detected, the rankers and configurations ``skipped`` with why), every row, and the
    config chosen."""
    base = rows[0]
    return {
        "questions_file": scope.questions_file,
        "question_ids": list(scope.question_ids),
        "questions": len(scope.question_ids),
        "gold_ids": base.total_gold,
        "top_n": scope.top_n,
        "k": list(scope.ks),
        "embedding_model": model,
        "graph_detected": graph,
        "skipped": dict(skipped),
        "gold_among_candidates": base.gold_at(scope.top_n),
        "rows": [_row_json(row, base, scope.ks) for row in rows],
        "choice": config,
        "chosen": None if chosen is None else chosen.name,
    }


def _row_json(row: Measurement, base: Measurement, ks: Sequence[int]) -> dict[str, Any]:
    setting = row.setting
    config = None
    if setting is not None:
        config = {
            "ranker": setting.ranker,
            "alpha": setting.alpha,
            "seed_transform": setting.seed_transform,
            "graph": setting.graph,
            "ranker_options": dict(setting.options),
        }
    tests = None if setting is None else row.versus(base, ks)
    return {
        "name": row.name,
        "config": config,
        **row.summary(ks),
        "vs_retriever": None if tests is None else {k: t.to_dict() for k, t in tests.items()},
        "gold_ranks": row.gold_ranks,
    }
