"""The expansion report: best candidate-only graph as reference, fixes/breaks, marked section."""

from __future__ import annotations

import json
from pathlib import Path

from grapher_bench.expansion.report import END, START, load_runs, markdown, section
from grapher_bench.sections import write_section


def _run(folder: Path, name: str, rows: dict[str, list[float]]) -> None:
    folder.mkdir(parents=True)
    results = {
        label: {"PR@10": sum(v) / len(v), "PR@5": 0.0, "rerank_ms_median": 1.0}
        for label, v in rows.items()
    }
    (folder / "results.json").write_text(json.dumps({"dataset": name, "results": results}))
    per_query = {
        label: {f"q{i}": {"PR@10": x} for i, x in enumerate(v)} for label, v in rows.items()
    }
    (folder / "per_query.json").write_text(json.dumps(per_query))


def test_report_compares_with_best_gcs_graph(tmp_path: Path) -> None:
    _run(
        tmp_path / "musique",
        "musique",
        {
            "baseline": [0, 0, 1, 0],
            "gcs[mentions]": [1, 0, 1, 0],
            "gcs[entities-capped]": [1, 1, 1, 0],
            "expand-gcs": [1, 0, 1, 1],
            "gat[mentions]": [0, 1, 1, 1],
            "gat[entities-capped]": [0, 0, 1, 0],
            "graph-retriever-tuned": [0, 0, 1, 1],
            "ego-gcs[k=2,n=10]": [0, 0, 0, 0],
            "ego-gcs[k=1,n=5]": [1, 1, 1, 1],
        },
    )
    runs = load_runs(tmp_path)
    text = markdown(runs)
    assert "| best candidate-only graph | `gcs[entities-capped]` |" in text
    assert "| gcs* | 75.0 (0.0) |" in text
    assert "| expand-gcs | 75.0 (0.0) +1/−1 |" in text  # fixes q3, breaks q1
    assert "| best GAT graph (`gat*`) | `gat[mentions]` |" in text
    assert "| gat* | 75.0 (0.0) +1/−1 |" in text
    assert "| graph-retriever-tuned | 50.0 (0.0) +1/−2 |" in text
    ego = [line for line in text.splitlines() if line.startswith("| K=")]
    assert ego == ["| K=1, N=5 | 100.0 (0.0) +1/−0 |", "| K=2, N=10 | 0.0 (0.0) +0/−3 |"]
    doc = tmp_path / "bench.md"
    doc.write_text("# B\n\nkept\n")
    write_section(doc, START, END, section(text))
    write_section(doc, START, END, section(text))  # idempotent: replaced, not appended twice
    written = doc.read_text()
    assert written.count("<!-- expand:start -->") == 1 and "kept" in written
