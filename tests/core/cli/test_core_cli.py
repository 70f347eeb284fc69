"""The `grapher demo` and `grapher-bench bench-latency` commands, run in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from grapher_bench.cli import main as bench_main
from grapher_bench.latency.rerank import measure, render, synthetic_candidates, write_section
from grapher_core import SharedEntities, build_graph
from grapher_core.cli import main


def test_demo_end_to_end_finds_the_table_plain_retrieval_misses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("sentence_transformers")
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "5 SQLite databases" in out
    assert "Perfect recall@5: dense retrieval no (2/3 tables), GraphER yes (3/3 tables)" in out
    assert "Why retail.categories entered the top" in out
    assert "lifted by retail.products (structural edge)" in out


def test_cli_reports_bad_arguments_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert bench_main([]) == 2
    assert bench_main(["bench-latency", "--sizes", "ten"]) == 2
    assert "error" in capsys.readouterr().err


def test_synthetic_entities_match_measured_density() -> None:
    graph = build_graph(synthetic_candidates(200), [SharedEntities()])
    assert 16 <= graph.n_edges / 200 <= 25  # spaCy entity graphs measured on the multi-hop sets
    hubs_removed = build_graph(synthetic_candidates(2000), [SharedEntities(max_holders=50)])
    assert (
        hubs_removed.n_edges
        < build_graph(synthetic_candidates(2000), [SharedEntities()]).n_edges / 5
    )


def test_latency_rows_and_section_writing(tmp_path: Path) -> None:
    row = measure(50, "gcs", [SharedEntities()], repeats=3)
    assert row.n == 50 and row.edges > 0
    assert 0 < row.graph_ms[0] <= row.graph_ms[1]
    doc = tmp_path / "benchmarks.md"
    doc.write_text(
        "# B\n\n<!-- latency:start -->\nSTALE ROW\n<!-- latency:end -->\n\n"
        "<!-- bench:start -->\nkeep me\n<!-- bench:end -->\n"
    )
    write_section(doc, render([row], "grapher-bench bench-latency --sizes 50"))
    text = doc.read_text()
    assert "STALE ROW" not in text and "keep me" in text
    assert "| 50 | entities | gcs |" in text
    assert "`grapher-bench bench-latency --sizes 50`" in text
    assert "clock: wall (elapsed)" in text


def test_latency_cpu_clock_is_used_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("<!-- latency:start -->\n<!-- latency:end -->\n")
    assert (
        bench_main(
            [
                "bench-latency",
                "--sizes",
                "30",
                "--workloads",
                "zipf",
                "--repeats",
                "3",
                "--no-reference",
                "--clock",
                "cpu",
                "--write",
                str(doc),
            ]
        )
        == 0
    )
    text = doc.read_text()
    assert "clock: CPU time of the process per call" in text
    assert "--clock cpu --write" in text
    assert "| 30 | zipf | gcs |" in text
    assert "n=    30 zipf" in capsys.readouterr().out


def test_alpha_argument_names_bad_values() -> None:
    import argparse

    from grapher_core.cli.arguments import alpha_argument

    assert alpha_argument("0.3") == 0.3
    for bad in ("0", "1", "1.5", "x"):
        with pytest.raises(argparse.ArgumentTypeError, match="alpha"):
            alpha_argument(bad)


@pytest.mark.parametrize("workload", ["calibrated", "zipf"])
def test_reference_pipeline_gives_the_same_top_10(workload: str) -> None:
    from grapher_bench.latency.rerank import WORKLOADS, reference_rerank
    from grapher_core import GraphReranker

    candidates = WORKLOADS[workload](300)
    ours = [r.id for r in GraphReranker([SharedEntities()]).rerank(candidates, top_n=10)]
    assert [candidates[i].id for i in reference_rerank(candidates)] == ours
    row = measure(60, "gcs", [SharedEntities()], repeats=2, workload=workload, reference=True)
    assert row.ratio is not None and row.ratio > 0
    assert "| 60 | entities | gcs |" in render([row], "cmd")


def test_hub_memory_reports_a_bounded_graph() -> None:
    import warnings

    from grapher_bench.latency.rerank import hub_memory

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = hub_memory(1200)  # 1.4 M pairs > max(100 000, 8 n): the hub is ignored
    assert result["edges"] == 0 and result["results"] == 10
    assert 0 < result["traced_peak_mb"] < 50
