"""Item 7: the smaller cases -- shared output names, float overflow, None metadata, NaN vectors,
an unwritable ``--output``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from enrich_fault_server import FaultServer

from grapher_core import (
    AdjacentChunks,
    Candidate,
    CorpusObject,
    ForeignKeys,
    GraphReranker,
    SemanticKNN,
    SharedEntities,
    ppr_scores,
)
from grapher_core.cli import main
from grapher_core.cli.enrich import write_jsonl
from grapher_core.errors import InputError, InputTypeError


def test_concurrent_writes_of_one_output_never_collide(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for _ in range(15):
                write_jsonl(out, [{"id": f"w{n}", "text": "x" * 2000}] * 50)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 50 and len({r["id"] for r in records}) == 1  # one whole run's output
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]  # no temporary left behind
    assert out.stat().st_mode & 0o777 == 0o644


def test_two_enrich_processes_same_output(
    fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    source = tmp_path / "corpus.jsonl"
    source.write_text("".join(json.dumps({"id": f"d{i}", "text": f"Ada Lovelace {i}"}) + "\n"
                              for i in range(40)))  # fmt: skip
    server = fault_server()
    out = tmp_path / "out.jsonl"
    runs = [subprocess.Popen([sys.executable, "-m", "grapher_core.cli", "enrich", "--input",
                              str(source), "--output", str(out), "--extractor", "openai",
                              "--model", "fake", "--base-url", server.base_url, "--api-key", "x",
                              "--cache", str(tmp_path / f"c{n}.sqlite"), "--no-progress"],
                             stderr=subprocess.PIPE, env={**os.environ, "HF_HUB_OFFLINE": "1"})
            for n in range(2)]  # fmt: skip
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0, err.decode()
    assert len(out.read_text().splitlines()) == 40
    assert sorted(p.name for p in tmp_path.iterdir() if ".tmp" in p.name) == []


def test_ppr_with_scores_summing_past_float_max() -> None:
    adjacency = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    huge = ppr_scores(adjacency, [1e308, 1e308, 1e307])
    assert np.isfinite(huge).all() and huge.sum() == pytest.approx(1.0)
    assert huge == pytest.approx(ppr_scores(adjacency, [1.0, 1.0, 0.1]))


def test_ppr_ranker_keeps_order_for_huge_scores() -> None:
    candidates = [Candidate(f"c{i}", score=1e308 / (i + 1), metadata={"entities": ["x"]})
                  for i in range(4)]  # fmt: skip
    ranked = GraphReranker([SharedEntities()], ranker="ppr", seed_transform="raw").rerank(
        candidates
    )
    assert all(np.isfinite(r.score) and r.score > 0 for r in ranked)


PROXIMITIES = {"foreign keys": ForeignKeys(), "entities": SharedEntities(),
               "chunks": AdjacentChunks(), "semantic": SemanticKNN()}  # fmt: skip


@pytest.mark.filterwarnings("ignore::grapher_core.diagnostics.GraphERWarning")  # no edges: said
@pytest.mark.parametrize("proximity", list(PROXIMITIES.values()), ids=list(PROXIMITIES))
def test_metadata_none_is_no_metadata(proximity: object) -> None:
    candidates = [
        Candidate("a", score=0.9, metadata=None),  # type: ignore[arg-type]
        Candidate("b", score=0.5, metadata={"entities": ["x"], "foreign_keys": ["a"]}),
    ]
    ranked = GraphReranker([proximity], strict=False).rerank(candidates)  # type: ignore[list-item]
    assert [r.id for r in ranked] == ["a", "b"]
    assert candidates[0].metadata == {}
    assert CorpusObject("o", "t", None).metadata == {}  # type: ignore[arg-type]


@pytest.mark.parametrize("metadata", [[("k", "v")], "k=v", 3])
def test_metadata_not_a_mapping_named(metadata: object) -> None:
    with pytest.raises(InputTypeError, match="candidate 'a' has metadata of type"):
        Candidate("a", metadata=metadata)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_semantic_knn_refuses_non_finite_vectors(bad: float) -> None:
    vectors = np.eye(3)
    vectors[1, 2] = bad
    candidates = [Candidate(f"c{i}", score=1.0 - i / 10, embedding=vectors[i]) for i in range(3)]
    with pytest.raises(InputError, match=r"candidate 'c1' holds NaN or inf"):  # at the door
        GraphReranker([SemanticKNN(threshold=0.0)]).rerank(candidates)


@pytest.mark.parametrize("option", ["--output", "--failed"])
def test_unwritable_output_refused_before_extraction(
    fault_server: Callable[..., FaultServer], tmp_path: Path,
    capsys: pytest.CaptureFixture[str], option: str,
) -> None:  # fmt: skip
    source = tmp_path / "corpus.jsonl"
    source.write_text('{"id": "a", "text": "Ada Lovelace"}\n')
    blocker = tmp_path / "file.txt"
    blocker.write_text("a regular file")
    target = blocker / "sub" / "out.jsonl"
    paths = {"--output": tmp_path / "out.jsonl", "--failed": tmp_path / "failed.txt"}
    paths[option] = target
    server = fault_server()
    code = main(["enrich", "--input", str(source), "--output", str(paths["--output"]),
                 "--failed", str(paths["--failed"]), "--extractor", "openai", "--model", "fake",
                 "--base-url", server.base_url, "--api-key", "x", "--no-cache"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert f"{option} {target} cannot be created: {blocker} is a file" in err
    assert server.stats.requests == 0
