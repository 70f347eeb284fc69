"""``grapher-bench bench`` runs expand-gcs and the peers beside the other rankers (real data)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grapher_bench.peers.rankers import PEER_RANKERS, is_peer, peer_graph, split_name
from grapher_bench.runner import expand_rankers

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def test_peer_specs_follow_the_task_link_graph() -> None:
    specs = {
        s.label: s.graph
        for s in expand_rankers(
            [
                "gcs",
                "expand-gcs",
                "expand-gcs-v1",
                "graph-retriever",
                "prev-next",
                "ego-gcs[k=2,n=5]",
                "expand-gcs[links=all]",
            ],
            "passages",
        )
    }
    # the first rule and the peer follow mentions; the default rule the task's best graph,
    # links=all every link kind (capped entities too)
    assert specs["expand-gcs-v1"] == specs["graph-retriever"] == "mentions"
    assert specs["expand-gcs"] == specs["ego-gcs[k=2,n=5]"] == "mentions"
    assert specs["expand-gcs[links=all]"] == "mentions+entities-capped"
    assert "prev-next" not in specs  # chunk sets only
    chunks = {s.label: s.graph for s in expand_rankers(["expand-gcs", "prev-next"], "chunks")}
    assert chunks == {"expand-gcs": "adjacent+mentions", "prev-next": "adjacent"}
    assert split_name("expand-gcs[prune=cosine,seed=floor]") == (
        "expand-gcs",
        {"prune": "cosine", "seed": "floor"},
    )
    assert is_peer("ego-gcs[k=1,n=10]") and not is_peer("gcs")
    with pytest.raises(ValueError, match="bad option"):
        split_name("expand-gcs[colour=red]")
    assert peer_graph("graph-retriever", "tables") == "fk"
    with pytest.raises(ValueError, match="chunk sets only"):
        peer_graph("prev-next", "tables")
    assert "graph-retriever-tuned" in PEER_RANKERS


@pytest.mark.slow
def test_bench_writes_expand_and_peer_results(benchmarks_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("langchain_graph_retriever")
    import json

    from grapher_bench.cli import main

    code = main(
        [
            "bench",
            "--data",
            str(benchmarks_dir / "bird_dev"),
            "--limit",
            "15",
            "--rankers",
            "baseline,gcs,expand-gcs,graph-retriever",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())["results"]
    assert {"baseline", "gcs", "expand-gcs", "graph-retriever"} <= set(results)
    for label in ("expand-gcs", "graph-retriever"):
        assert 0.0 <= results[label]["PR@10"] <= 1.0
        assert results[label]["rerank_ms_median"] >= 0.0
    assert results["expand-gcs"]["PR@10"] >= results["baseline"]["PR@10"]
    table = (tmp_path / "table.md").read_text()
    assert "expand-gcs" in table and "graph-retriever" in table
