"""Paired tests between bench rows: the pairs chosen, the counts, and the round trip through
results.json / per_query.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grapher_bench.paired import paired_pairs, paired_table, paired_tests
from grapher_bench.report import write_run
from grapher_bench.runner import DatasetRun, RankerResult, load_run


def _run(rows: dict[str, list[float]]) -> DatasetRun:
    n = len(next(iter(rows.values())))
    run = DatasetRun("toy", "passages", "hybrid", n, n, 20)
    for label, hits in rows.items():
        per_query = {f"q{i}": {"PR@5": h, "PR@10": h, "n_gold": 2} for i, h in enumerate(hits)}
        metrics = {f"PR@{k}": sum(hits) / n for k in range(1, 21)}
        metrics.update(
            {"recall@10": 0.5, "MTRR": 0.5, "TMHits@10": 0.5}
            | {"top5_from_below_20": 0.0, "rerank_ms_median": 0.1}
        )
        run.results[label] = RankerResult(metrics, per_query)
    return run


def test_stacked_rows_are_paired_with_both_of_their_parts() -> None:
    labels = ["baseline", "gcs[mentions]", "llm-rerank", "llm-rerank+gcs[mentions]"]
    assert paired_pairs(labels) == [
        ("gcs[mentions]", "baseline"),
        ("llm-rerank", "baseline"),
        ("llm-rerank+gcs[mentions]", "baseline"),
        ("llm-rerank+gcs[mentions]", "llm-rerank"),
        ("llm-rerank+gcs[mentions]", "gcs[mentions]"),
    ]
    assert paired_pairs([]) == []


def test_counts_delta_and_p_value() -> None:
    base = [0.0] * 10 + [1.0] * 10
    better = [1.0] * 9 + [0.0] + [1.0] * 10  # 9 wins, 0 losses
    tests = paired_tests(_run({"baseline": base, "gcs": better}), ks=(5,))
    assert len(tests) == 1
    (test,) = tests
    assert (test.row, test.against, test.k, test.n) == ("gcs", "baseline", 5, 20)
    assert (test.wins, test.losses) == (9, 0)
    assert test.delta_points == pytest.approx(45.0)
    assert test.p_value == pytest.approx(2 / 2**9)
    assert "| gcs | baseline | 5 | +45.0 | 9 / 0 | 0.00391 |" in paired_table(tests)


def test_no_difference_is_p_one() -> None:
    same = [1.0, 0.0, 1.0]
    (test,) = paired_tests(_run({"baseline": same, "ppr": same}), ks=(10,))
    assert (test.wins, test.losses, test.p_value, test.delta_points) == (0, 0, 1.0, 0.0)


def test_written_run_carries_the_tests_and_reloads_with_its_rows(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run = _run({"baseline": [0.0, 1.0, 0.0], "llm-rerank": [1.0, 1.0, 0.0]})
    write_run(run, tmp_path)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert [(p["row"], p["k"], p["wins"]) for p in saved["paired"]] == [
        ("llm-rerank", 5, 1),
        ("llm-rerank", 10, 1),
    ]
    assert "Paired tests" in (tmp_path / "table.md").read_text()
    again = load_run(tmp_path / "results.json")
    assert paired_tests(again) == paired_tests(run)
