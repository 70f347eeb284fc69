"""The cookbook notebook runs top to bottom (offline) and prints its PR@K table."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.mark.slow
def test_cookbook_notebook_runs(
    benchmarks_dir: Path, pytestconfig: pytest.Config, run_notebook: Callable
) -> None:
    # Entities and the ingestion cache persist between runs in .pytest_cache (git-ignored), so
    # only the first run on a machine pays for spaCy and the embeddings.
    cache = os.environ.get("GRAPHER_CACHE", str(pytestconfig.cache.mkdir("grapher-cookbook")))  # type: ignore[union-attr]
    result = run_notebook(
        "llamaindex_multihop_qa.ipynb", GRAPHER_BENCHMARKS=str(benchmarks_dir), GRAPHER_CACHE=cache
    )
    assert "| vector retriever |" in result.text and "| GraphER GCS (entities) |" in result.text
    assert "contextual edges among them" in result.text
    assert result.images >= 1, "the PR@K plot is missing"
