"""Item 2 (fixed by the "speed" work, kept here): a hub entity never makes the graph quadratic by
default, and ``max_share`` has one meaning. Peak memory at 20 000 candidates is printed by
``grapher-bench hub-memory`` (docs), never timed here."""

from __future__ import annotations

import math

import pytest

from grapher_core import Candidate, GraphReranker, SharedEntities
from grapher_core.edges.entities import EDGE_BUDGET_FLOOR


def hub_pool(n: int, field: str = "entities", groups: int = 50) -> list[Candidate]:
    return [Candidate(f"c{i}", score=1 - i / n, metadata={field: ["hub", f"e{i % groups}"]})
            for i in range(n)]  # fmt: skip


def test_default_graph_bounded_with_one_warning() -> None:
    # 4.5 M hub pairs unbounded; 1000 small entities of 3 holders (6 000 pairs) fit the budget.
    # A field of its own: the warning is once per process.
    n = 3000
    with pytest.warns(RuntimeWarning, match="edge_budget") as caught:
        graph = GraphReranker([SharedEntities("rel_hub")]).graph(hub_pool(n, "rel_hub", 1000))
    assert graph.n_edges <= max(EDGE_BUDGET_FLOOR, 32 * n)
    assert graph.n_edges == 1000 * 3 * 2  # the hub is dropped; the small entities still link
    assert len([w for w in caught if "edge_budget" in str(w.message)]) == 1


def test_max_share_one_means_all() -> None:
    pool = hub_pool(60)
    edges = {value: GraphReranker([SharedEntities(max_share=value)]).graph(pool).n_edges
             for value in (1, 1.0)}  # fmt: skip
    assert edges[1] == edges[1.0] == 60 * 59  # everyone linked through the hub


@pytest.mark.parametrize("value", [-0.5, math.nan, 0, 2, math.inf])
def test_bad_max_share_refused(value: float) -> None:
    with pytest.raises(ValueError, match="max_share"):
        SharedEntities(max_share=value)


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_bad_max_holders_refused(value: object) -> None:
    with pytest.raises(ValueError, match="max_holders"):
        SharedEntities(max_holders=value)  # type: ignore[arg-type]
