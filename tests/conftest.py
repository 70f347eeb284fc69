"""Shared fixtures. Benchmark data is read from $GRAPHER_BENCHMARKS (../shared/benchmarks)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def benchmarks_root() -> Path:
    return Path(os.environ.get("GRAPHER_BENCHMARKS", REPO_ROOT.parent / "shared" / "benchmarks"))


@pytest.fixture(scope="session")
def benchmarks_dir() -> Path:
    """The shared benchmark root; tests that need it skip, saying why, when it is absent."""
    root = benchmarks_root()
    if not (root / "manifest.json").exists():
        pytest.skip(f"benchmark data not found at {root} (set GRAPHER_BENCHMARKS)")
    return root
