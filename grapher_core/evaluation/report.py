"""What an evaluation shows: the table a person reads at a glance, the one-line gain of a
choice, and the machine report (every row's metrics, latency, paired tests and gold ranks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from grapher_core.evaluation.measure import EvaluationScope, Measurement, ReembedCost
from grapher_core.evaluation.metrics import pct
from grapher_core.evaluation.paired import PairedComparison, compare_paired

if TYPE_CHECKING:
    from grapher_core.evaluation.choice import Choice

__all__ = ["gain_text", "pct", "render_table", "report_json"]

TEXT_COLUMNS = 4
"""The table's leading columns that describe a configuration (left-aligned)."""


def render_table(
    rows: Sequence[Measurement],
    ks: Sequence[int],
    choice: Choice,
    cost: ReembedCost | None = None,
) -> str:
    """The retriever first, one row per configuration, metrics in percent (MRR as a fraction),
    the median rerank call with the store's vectors and what a wrapper pays re-embedding
    (``cost``), and the paired tests on PR@K and gold@K against the retriever and on PR@K
    against the default (``+wins/-losses p``), K being the one the choice reads."""
    k = choice.k
    header = ["ranker", "alpha", "seeds", "graph"]
    header += [f"gold@{q}" for q in ks] + [f"PR@{q}" for q in ks] + ["MRR", "ms p50"]
    header += ["ms re-embed", f"PR@{k} vs retr.", f"gold@{k} vs retr.", f"PR@{k} vs default", ""]
    lines = [_cells(row, rows[0], ks, choice, cost) for row in rows]
    widths = [max(len(header[i]), *(len(line[i]) for line in lines)) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(width) if i < TEXT_COLUMNS or i == len(cells) - 1 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths[:-1])
    return "\n".join([fmt(header), rule, *(fmt(line) for line in lines)])


def _cells(
    row: Measurement,
    base: Measurement,
    ks: Sequence[int],
    choice: Choice,
    cost: ReembedCost | None,
) -> list[str]:
    """One line of the table, cell by cell."""
    setting, k = row.setting, choice.k
    if setting is None:
        cells = ["retriever", "-", "-", "-"]
    else:
        cells = [setting.ranker, setting.alpha_text, setting.seeds, setting.graph]
    metrics = row.metrics(ks)
    cells += [pct(metrics[f"gold@{q}"]) for q in ks] + [pct(metrics[f"PR@{q}"]) for q in ks]
    cells.append(f"{metrics['MRR']:.3f}")
    latency = row.latency()
    cells.append("-" if latency is None else f"{latency['median']:.2f}")
    paid = None if cost is None else cost.wrapper_ms(row)
    cells.append("-" if paid is None else f"{paid:.2f}" if paid < 100 else f"{paid:,.0f}")
    if setting is None:
        return [*cells, "-", "-", "-", ""]
    cells += [_test(compare_paired(row.perfect(k), base.perfect(k)))]
    cells += [_test(compare_paired(row.hits(k), base.hits(k)))]
    default = choice.default
    if default is None or row is default:
        cells.append("default" if row is default else "-")
    else:
        cells.append(_test(compare_paired(row.perfect(k), default.perfect(k))))
    mark = "<- best" if row is choice.row else ""
    if row.name in choice.over_budget:
        mark = "over budget"
    if row.name in choice.excluded:
        mark = "warned: not chosen"
    return [*cells, mark]


def _test(result: PairedComparison) -> str:
    mark = "*" if result.p < 0.05 else " "
    return f"+{result.wins}/-{result.losses} p={result.p:.2g}{mark}"


def gain_text(row: Measurement, base: Measurement, ks: Sequence[int], k: int) -> str:
    """``row`` against ``base`` in one line: PR@``k`` with its McNemar p, gold@``k`` and MRR,
    each before -> after."""
    mine, theirs = row.metrics(ks), base.metrics(ks)
    p = compare_paired(row.perfect(k), base.perfect(k)).p
    return (
        f"PR@{k} {pct(theirs[f'PR@{k}'])} -> {pct(mine[f'PR@{k}'])} "
        f"(McNemar p={p:.2g}), gold@{k} {pct(theirs[f'gold@{k}'])} -> "
        f"{pct(mine[f'gold@{k}'])}, MRR {theirs['MRR']:.3f} -> {mine['MRR']:.3f}"
    )


def report_json(
    rows: Sequence[Measurement],
    scope: EvaluationScope,
    *,
    config: dict[str, Any],
    choice: Choice,
    model: str,
    graph: str,
    skipped: Mapping[str, str],
    cost: ReembedCost | None = None,
    sources: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The machine report: what ran (questions, the embedding ``model``, the ``graph``
    detected, the rankers and configurations ``skipped`` with why), every row, the decision
    (the cut-off, the default, why, what was set aside), PR@K by source and the config."""
    base = rows[0]
    default = choice.default
    return {
        "questions_file": scope.questions_file,
        "question_ids": list(scope.question_ids),
        "questions": len(scope.question_ids),
        "gold_ids": base.total_gold,
        "top_n": scope.top_n,
        "k": list(scope.ks),
        "for_k": choice.k,
        "embedding_model": model,
        "graph_detected": graph,
        "skipped": dict(skipped),
        "gold_among_candidates": base.gold_at(scope.top_n),
        "reembedding_ms_per_query": None if cost is None else cost.ms,
        "rows": [_row_json(row, base, scope.ks, choice, cost) for row in rows],
        "default": None if default is None else default.name,
        "reason": choice.reason,
        "hint": choice.hint,
        "not_chosen_warned": dict(choice.excluded),
        "by_source": None if sources is None else list(sources),
        "choice": config,
        "chosen": None if choice.row is None else choice.row.name,
    }


def _row_json(
    row: Measurement,
    base: Measurement,
    ks: Sequence[int],
    choice: Choice,
    cost: ReembedCost | None,
) -> dict[str, Any]:
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
    default = choice.default
    versus_default = None
    if setting is not None and default is not None and row is not default:
        versus_default = compare_paired(row.perfect(choice.k), default.perfect(choice.k))
    return {
        "name": row.name,
        "config": config,
        **row.summary(ks),
        "needs_vectors": None if cost is None else row.name in cost.labels,
        "wrapper_ms_reembedding": None if cost is None else cost.wrapper_ms(row),
        "vs_retriever": None if tests is None else {k: t.to_dict() for k, t in tests.items()},
        f"PR@{choice.k}_vs_default": None if versus_default is None else versus_default.to_dict(),
        "gold_ranks": row.gold_ranks,
    }
