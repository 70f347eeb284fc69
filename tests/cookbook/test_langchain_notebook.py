"""The cookbook notebook runs top to bottom (offline) on the venv's own Python."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.mark.slow
def test_cookbook_notebook_runs(benchmarks_dir: Path, run_notebook: Callable) -> None:
    result = run_notebook(
        "langchain_text_to_sql_tables.ipynb", GRAPHER_BENCHMARKS=str(benchmarks_dir)
    )
    assert (
        "semantic only: ['shop.products', 'shop.suppliers', 'shop.order_items', 'shop.shipments']"
        in result.text
    )
    assert (
        "with GraphER:  ['shop.products', 'shop.suppliers', 'shop.order_items', 'shop.orders']"
        in result.text
    )
    assert "200 questions" in result.text and "GraphER" in result.text
    assert result.images == 1
