"""`grapher-bench bench` end to end on real data: a table set and a multi-hop set (subsets)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grapher_bench.cli import main

REQUIRED = {
    "PR@5",
    "PR@10",
    "PR@5>1",
    "PR@10>1",
    "recall@10",
    "FirstRR",
    "MRR",
    "MHits@10",
    "MTRR",
    "TMHits@10",
    "rerank_ms_median",
}


def _results(folder: Path) -> dict:
    data = json.loads((folder / "results.json").read_text())
    assert {"dataset", "n_queries", "n_multi", "retriever", "n_candidates", "results"} <= set(data)
    for metrics in data["results"].values():
        assert set(metrics) >= REQUIRED
        for key in REQUIRED - {"rerank_ms_median"}:
            assert 0.0 <= metrics[key] <= 1.0, (key, metrics[key])
    assert (folder / "pr_at_k.png").stat().st_size > 5000
    assert "| ranker |" in (folder / "table.md").read_text()
    return data


@pytest.mark.slow
def test_bench_on_spider_dev_subset(benchmarks_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "spider"
    code = main(
        [
            "bench",
            "--data",
            str(benchmarks_dir / "spider_dev"),
            "--limit",
            "150",
            "--retriever",
            "hybrid",
            "--rankers",
            "baseline,db-first,ppr,gcs",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    data = _results(out)
    assert data["n_queries"] == 150 and data["n_candidates"] == 200
    results = data["results"]
    assert set(results) == {"baseline", "db-first", "ppr", "gcs"}
    assert 0.5 <= results["baseline"]["PR@10"] <= 0.98  # calibration: ~0.75-0.85 on all of dev
    assert results["gcs"]["PR@10>1"] >= results["baseline"]["PR@10>1"] - 0.03
    per_query = json.loads((out / "per_query.json").read_text())
    assert len(per_query["gcs"]) == 150 and len(per_query["gcs"]["spider_dev_0000"]["top"]) == 20
    assert "spider_dev" in (out / "combined.md").read_text()


@pytest.mark.slow
def test_bench_on_hotpotqa_with_title_mentions(benchmarks_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "hotpot"
    doc = tmp_path / "benchmarks.md"
    doc.write_text(
        "# B\n\nkeep me\n<!-- bench:start -->\nSTALE-CONTENT\n<!-- bench:end -->\ntail\n"
    )
    code = main(
        [
            "bench",
            "--data",
            str(benchmarks_dir / "hotpotqa"),
            "--limit",
            "120",
            "--retriever",
            "bm25",
            "--graphs",
            "mentions",
            "--out",
            str(out),
            "--write-doc",
            str(doc),
            "--no-progress",
        ]
    )
    assert code == 0
    data = _results(out)
    assert data["n_multi"] == 120
    results = data["results"]
    assert 0.6 <= results["baseline"]["PR@10"] <= 0.95  # README: plain BM25 0.80 on all 500
    assert results["gcs"]["PR@10"] >= results["baseline"]["PR@10"]  # mentions help on hotpotqa
    text = doc.read_text()
    assert text.startswith("# B\n\nkeep me\n") and text.endswith("<!-- bench:end -->\ntail\n")
    assert "STALE-CONTENT" not in text and "hotpotqa" in text


def test_bench_reports_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--data", str(tmp_path / "absent"), "--no-progress"]) == 2
    assert "not found" in capsys.readouterr().err
