"""The graph-context cookbook notebook runs top to bottom (offline) on the venv's Python."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest


@pytest.mark.slow
def test_graph_context_notebook_runs(run_notebook: Callable) -> None:
    result = run_notebook("graph_context.ipynb", timeout=300)
    text = result.text
    # the picture of one reranking: a PNG shown, the newcomer named with its neighbour
    assert result.images >= 1, "the graph picture is missing"
    assert "new in the top 4: [('Christina Jensen', 'was 8', 'via Christopher Nolan')]" in text
    assert "fetched from the store:" in text
    assert "store calls: 1 (one per hop with links to follow)" in text
    assert "Christina Jensen" in text.split("with expansion:")[1].splitlines()[0]
    # the director hangs under the film, his mother under him: the two hops, as a tree
    assert re.search(r"\n  \[1\.(\d)\] Christopher Nolan  <- structural\n", text)
    assert re.search(r"\n    \[1\.\d\.1\] Christina Jensen  <- structural\n", text)
    # the relation-labelled view: GRAG's template, relation text on the edges
    assert "[ROOT] Inception." in text and "Inception is connected to:" in text
    assert re.search(r"\n  1\.\d Christopher Nolan via mentions\.\n", text)
    assert re.search(r"\n    1\.\d\.1 Christina Jensen via mentions\.\n", text)
    # the Spider question: join columns visible on the foreign-key edges
    spider = text.split("List all singer names in concerts in year 2014.")[1]
    assert "[ROOT] singer_in_concert." in spider
    assert "1.1 singer via singer_in_concert.Singer_ID = singer.Singer_ID." in spider
    assert "1.2 concert via singer_in_concert.concert_ID = concert.concert_ID." in spider
    assert "1.2.1 stadium via concert.Stadium_ID = stadium.Stadium_ID." in spider
