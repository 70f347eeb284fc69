"""Fixtures of the enrichment tests: a real chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from enrich_fault_server import fault_server

os.environ.setdefault("HF_HUB_OFFLINE", "1")

__all__ = ["fault_server"]  # the shared fixture, defined beside the server


@pytest.fixture
def hotpot_slice(benchmarks_dir: Path, tmp_path: Path) -> Callable[[int], Path]:
    """Factory: the first ``n`` objects of hotpotqa's corpus in a temporary JSONL file."""

    def make(n: int) -> Path:
        path = tmp_path / f"hotpot_{n}.jsonl"
        with (benchmarks_dir / "hotpotqa" / "corpus.jsonl").open(encoding="utf-8") as source:
            lines = [line for _, line in zip(range(n), source, strict=False)]
        path.write_text("".join(lines), encoding="utf-8")
        assert all(json.loads(line)["id"] for line in lines)
        return path

    return make
