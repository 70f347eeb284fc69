"""Held before, kept: SIGKILL in the middle of ``grapher enrich`` loses nothing written; a
re-run finishes the job and its output is byte-identical to an uninterrupted run's."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from enrich_fault_server import FaultServer

N = 160


def rows(cache: Path) -> int:
    if not cache.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM entity_results").fetchone()[0])
    except sqlite3.OperationalError:  # table not created yet
        return 0


def command(source: Path, out: Path, cache: Path, base_url: str) -> list[str]:
    return [
        sys.executable, "-m", "grapher_core.cli", "enrich", "--input", str(source),
        "--output", str(out), "--extractor", "openai", "--model", "fake", "--base-url", base_url,
        "--cache", str(cache), "--concurrency", "4", "--no-progress",
    ]  # fmt: skip


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_sigkill_then_resume_equals_uninterrupted(
    fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    source = tmp_path / "corpus.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": f"p{i}", "text": f"Story {i} of Ada Lovelace in London {i % 7}",
                        "metadata": {"k": i}}) + "\n"
            for i in range(N)
        )
    )  # fmt: skip
    server = fault_server(delay=0.03)
    cache, out = tmp_path / "killed.sqlite", tmp_path / "killed.jsonl"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(command(source, out, cache, server.base_url), env=env,
                               stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 60
    while rows(cache) < 20 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.02)
    assert process.poll() is None, "the run finished before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    assert process.returncode == -signal.SIGKILL
    written = rows(cache)
    assert 20 <= written < N
    assert not out.exists()  # the output is written atomically at the end, never half
    with sqlite3.connect(cache) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for (entities,) in conn.execute("SELECT entities FROM entity_results"):
            assert isinstance(json.loads(entities), list)  # no corrupt rows

    server.reset_stats()
    resumed = subprocess.run(command(source, out, cache, server.base_url), env=env,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert server.stats.requests == N - written  # nothing already written was redone
    assert f"{written} unique texts from cache" in resumed.stderr

    clean_out = tmp_path / "clean.jsonl"
    clean = subprocess.run(command(source, clean_out, tmp_path / "clean.sqlite", server.base_url),
                           env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert clean.returncode == 0, clean.stderr
    assert out.read_bytes() == clean_out.read_bytes()
