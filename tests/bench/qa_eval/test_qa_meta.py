"""What a qa-eval run records about itself: model file hash, server, prompt versions, command
line, start and end times -- in ``qa_meta.json`` at the top and next to each per-query file."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path

import pytest
from enrich_fault_server import FaultServer

from grapher_bench.cli import main as bench_main
from grapher_bench.qa_eval.meta import probe_server
from grapher_bench.qa_eval.prompts import PROMPT_VERSIONS

pytest.importorskip("bm25s")


def _argv(qa_set: Path, server: FaultServer, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "qa-eval", "--data", str(qa_set), "--retriever", "bm25", "--k", "2",
        "--systems", "baseline", "--base-url", server.base_url, "--model", "fake",
        "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "out"), "--no-progress",
        *extra,
    ]  # fmt: skip


def test_a_run_records_model_file_server_prompts_command_and_times(
    qa_set: Path, qa_server: tuple[FaultServer, list[str]], tmp_path: Path
) -> None:
    server, _ = qa_server
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF" + bytes(range(256)) * 40)
    argv = _argv(
        qa_set, server, tmp_path, "--model-file", str(gguf), "--judge-format", "json",
        "--api-key", "sk-secret",
    )  # fmt: skip
    assert bench_main(argv) == 0
    top = (tmp_path / "out" / "qa_meta.json").read_text()
    assert "sk-secret" not in top and "--api-key '***'" in top
    assert (tmp_path / "out" / "tinyqa" / "qa_meta.json").read_text() == top
    meta = json.loads(top)
    assert meta["model_file"] == {
        "path": str(gguf.resolve()),
        "bytes": gguf.stat().st_size,
        "sha256": hashlib.sha256(gguf.read_bytes()).hexdigest(),
    }
    answer = meta["servers"]["answer"]
    assert answer["server_header"].startswith("fake-llm/1.0")
    assert answer["models"] == ["fake"] and answer["models_status"] == 200
    assert meta["prompts"]["answer"] == "a12-v1"
    assert meta["prompts"]["judge"] == "a13-v1+sfx-json-v1"
    assert meta["prompts"]["judge_format"] == "json" and meta["prompts"]["judge_suffix_text"]
    assert meta["prompts"]["versions"] == PROMPT_VERSIONS
    assert meta["command"].startswith("grapher-bench qa-eval --data ")
    assert f"--model-file {gguf}" in meta["command"]
    assert meta["options"]["judge_format"] == "json" and "api_key" not in meta["options"]
    started = datetime.fromisoformat(meta["started"])
    assert started <= datetime.fromisoformat(meta["finished"]) and started.tzinfo is not None
    assert meta["sets"]["tinyqa"]["n_queries"] == 4 and meta["llm_rerank"] is None
    assert "(A.1.3 + the `json` format suffix" in (tmp_path / "out" / "table.md").read_text()


def test_no_model_file_is_null_and_a_missing_one_is_refused(
    qa_set: Path,
    qa_server: tuple[FaultServer, list[str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, _ = qa_server
    assert bench_main(_argv(qa_set, server, tmp_path)) == 0
    meta = json.loads((tmp_path / "out" / "qa_meta.json").read_text())
    assert meta["model_file"] is None and meta["prompts"]["judge"] == "a13-v1"
    requests = server.stats.requests
    missing = _argv(qa_set, server, tmp_path, "--model-file", str(tmp_path / "none.gguf"))
    missing[missing.index("--out") + 1] = str(tmp_path / "out2")
    assert bench_main(missing) == 2
    assert "--model-file" in capsys.readouterr().err
    assert not (tmp_path / "out2").exists() and server.stats.requests == requests


def test_a_server_that_does_not_answer_is_recorded_not_fatal() -> None:
    record = probe_server("http://127.0.0.1:9/v1", timeout=1.0)
    assert record["base_url"] == "http://127.0.0.1:9/v1"
    assert "error" in record and record.get("models") is None
