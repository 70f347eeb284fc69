"""The evaluation helpers of ``grapher-bench qagnn-eval``: metrics, alpha tuning, paired test."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from grapher_bench.qa_gnn.cli import paired_test, per_query, tune_alpha
from grapher_bench.qa_gnn.report import render, write_section


def example(
    labels: list[float], n_gold: int, seeds: list[float], support: list[float]
) -> SimpleNamespace:
    return SimpleNamespace(
        labels=np.array(labels), n_gold=n_gold, seeds=np.array(seeds), support=np.array(support)
    )


def test_recall_counts_gold_outside_the_candidates_as_missed() -> None:
    e = example([1, 0, 0, 0, 0, 0, 1], 3, [0] * 7, [0] * 7)
    rows = per_query([e], [np.array([7.0, 6, 5, 4, 3, 2, 1])])
    assert rows["R@5"] == [1 / 3] and rows["PR@5"] == [0.0] and rows["PR@10"] == [0.0]


def test_alpha_tuning_picks_the_mix_that_lifts_the_gold() -> None:
    # gold (position 5) has a low seed but strong semantic support: a small alpha finds it
    e = example(
        [0, 0, 0, 0, 0, 1], 1, [0.9, 0.85, 0.8, 0.75, 0.7, 0.4], [0.0, 0.0, 0.0, 0.0, 0.0, 0.9]
    )
    assert tune_alpha([e]) == 0.7  # the largest alpha with 0.9 - 0.5 a > 0.7 a (a < 0.75)
    plain = example([1, 0, 0, 0, 0, 0], 1, [0.9, 0.8, 0.7, 0.6, 0.5, 0.4], [0.0] * 6)
    assert tune_alpha([plain]) == 0.9  # ties go to the largest alpha


def test_paired_test_sees_a_consistent_gain_and_not_noise() -> None:
    rng = np.random.default_rng(0)
    base = rng.random(200)
    assert paired_test(base, base + 0.05)["p_permutation"] < 0.001
    noise = paired_test(base, base + rng.normal(0, 0.05, 200))
    assert noise["p_permutation"] > 0.01
    assert paired_test(base, base)["p_permutation"] == 1.0


def test_report_section_is_replaced_in_place(tmp_path) -> None:  # type: ignore[no-untyped-def]
    doc = tmp_path / "doc.md"
    doc.write_text("# title\n\n<!-- qagnn:start -->\nold\n<!-- qagnn:end -->\n\nafter\n")
    (tmp_path / "latency.json").write_text(
        '{"qa-gnn n=100": {"median_ms": 12.5, "p90_ms": 20.0, "queries": 3}}'
    )
    write_section(tmp_path, doc)
    text = doc.read_text()
    assert "old" not in text and "| qa-gnn | 100 | 12.5 | 20.0 |" in text
    assert text.startswith("# title") and text.rstrip().endswith("after")
    assert render(tmp_path).count("<!-- qagnn:start -->") == 1
