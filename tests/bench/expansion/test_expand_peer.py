"""The graph-retriever peer on the same vectors and edges, and the side-by-side runner on real
benchmark data."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

pytest.importorskip("langchain_graph_retriever")

from grapher_bench.peers.langchain import (
    GraphRetrieverPeer,
    LookupEmbeddings,
    adjacent_ids,
)
from grapher_core import CorpusObject


def test_peer_follows_mentions_from_the_nearest_passage() -> None:
    corpus = [
        CorpusObject("Film", "Film text", {"title": "Film", "mentions": ["Director"]}),
        CorpusObject("Director", "Director text", {"title": "Director", "mentions": []}),
        CorpusObject("Far", "Far text", {"title": "Far", "mentions": []}),
    ]
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])  # Far is nearer than Director
    peer = GraphRetrieverPeer(
        corpus,
        [dict(o.metadata) for o in corpus],
        vectors,
        [("mentions", "title")],
        select_k=2,
        start_k=1,
        adjacent_k=5,
    )
    assert peer.retrieve("q", np.array([1.0, -0.2])) == ["Film", "Director"]
    # without edges the peer is plain vector search: Director is not the second nearest
    flat = GraphRetrieverPeer(
        corpus, [dict(o.metadata) for o in corpus], vectors, [], select_k=2, start_k=2
    )
    assert flat.retrieve("q", np.array([1.0, -0.2])) == ["Film", "Far"]
    assert "q" not in peer.lookup.vectors  # the query vector is not left behind


def test_lookup_embeddings_and_adjacent_ids() -> None:
    with pytest.raises(KeyError, match="no precomputed vector"):
        LookupEmbeddings({}).embed_query("missing")
    corpus = [CorpusObject(f"d#{k}", "", {"doc_id": "d", "chunk_index": k}) for k in range(3)]
    assert adjacent_ids(corpus, [o.metadata for o in corpus]) == [["d#1"], ["d#0", "d#2"], ["d#1"]]


@pytest.mark.slow
def test_side_by_side_runner_on_bird(benchmarks_dir: Path, tmp_path: Path) -> None:
    from grapher_bench.expansion.study import main

    assert (
        main(
            [
                "--data",
                str(benchmarks_dir),
                "--datasets",
                "bird_dev",
                "--limit",
                "20",
                "--out",
                str(tmp_path),
                "--chroma",
                "5",
            ]
        )
        == 0
    )
    result = json.loads((tmp_path / "bird_dev.json").read_text())
    assert set(result["results"]) == {"baseline", "gcs", "expand-gcs", "graph-retriever"}
    assert result["chroma"]["store_calls_per_query"] <= 1.0  # one batched call per hop
    for metrics in result["results"].values():
        assert 0.0 <= metrics["PR@10"] <= 1.0
    assert result["results"]["expand-gcs"]["PR@10"] >= result["results"]["baseline"]["PR@10"]


def test_prev_next_peer_adds_the_next_chunk() -> None:
    pytest.importorskip("llama_index.core")
    from grapher_bench.peers.llamaindex import PrevNextPeer

    corpus = [
        CorpusObject(f"d#{k}", f"chunk {k}", {"doc_id": "d", "chunk_index": k}) for k in range(4)
    ]
    peer = PrevNextPeer(corpus, [o.metadata for o in corpus], top_k=1)
    assert peer.rerank(["d#1", "d#3"], [0.9, 0.5]) == ["d#1", "d#2"]
    both = PrevNextPeer(corpus, [o.metadata for o in corpus], top_k=1, mode="both")
    assert set(both.rerank(["d#1"])) == {"d#0", "d#1", "d#2"}
