"""An oversize reply stops nothing: refused by its size before the reply cache, named in the
answer's error, retried on the next run (it used to make the cache "not usable")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from enrich_fault_server import FaultConfig, FaultServer, qa_reply

from grapher_bench.cli import main as bench_main
from grapher_core.enrich.completion import MAX_REPLY_BYTES

pytest.importorskip("bm25s")  # the CLI retrieves with BM25 (the 'bench' extra)

HUGE = "Bravo City " * (18 * (1 << 20) // 11)  # about 18 MB


def test_an_18_mb_answer_is_refused_by_size_and_the_run_goes_on(
    qa_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replies = {"huge": True}

    def respond(messages: list[dict[str, Any]]) -> str:
        prompt = str(messages[-1]["content"])
        if replies["huge"] and "<context>" in prompt and "Where was the founder" in prompt:
            return HUGE
        return qa_reply(messages)

    server = FaultServer(FaultConfig(responder=respond), lifetime=120).start()
    out = tmp_path / "out"
    argv = ["qa-eval", "--data", str(qa_set), "--retriever", "bm25", "--k", "3",
            "--systems", "baseline", "--base-url", server.base_url, "--model", "fake",
            "--cache", str(tmp_path / "c.sqlite"), "--out", str(out), "--no-progress",
            "--max-retries", "0"]  # fmt: skip
    try:
        with pytest.warns(UserWarning, match="1 of 4 answers failed"):
            assert bench_main(argv) == 0, capsys.readouterr().err
        rows = [
            json.loads(r) for r in (out / "tinyqa" / "per_query.jsonl").read_text().splitlines()
        ]
        failed = [r for r in rows if r["answer"] is None]
        assert [r["query_id"] for r in failed] == ["q2"]
        assert f"{len(HUGE.encode()):,} bytes" in failed[0]["answer_error"]
        assert f"{MAX_REPLY_BYTES:,} bytes" in failed[0]["answer_error"]
        replies["huge"] = False
        assert bench_main(argv) == 0  # the same cache, usable: the failed answer is retried
    finally:
        server.stop()
    rows = [json.loads(r) for r in (out / "tinyqa" / "per_query.jsonl").read_text().splitlines()]
    assert all(r["answer"] for r in rows)
