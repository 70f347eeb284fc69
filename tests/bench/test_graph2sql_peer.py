"""The graph2sql bench peer: its PPR order first, the rest in the retriever's order, a question
matching no table leaves the order unchanged, and it refuses non-table sets."""

from __future__ import annotations

import pytest

pytest.importorskip("graph2sql")

from grapher_bench.peers.graph2sql import graph2sql_order
from grapher_bench.peers.rankers import peer_graph
from grapher_core import Candidate
from grapher_core.errors import ConfigError


def tables() -> list[Candidate]:
    def table(name: str, columns: str, links: list[str]) -> Candidate:
        return Candidate(
            f"shop.{name}",
            f"Table: {name}\nColumns: {columns}",
            metadata={"table": name, "foreign_keys": links},
        )

    return [
        table("products", "id, title, price", ["shop.orders"]),
        table("orders", "id, customer_id, product_id, total", ["shop.customers", "shop.products"]),
        table("weather", "day, rain", []),
        table("customers", "id, name, country", ["shop.orders"]),
    ]


def test_matched_tables_lead_and_every_candidate_stays() -> None:
    pool = tables()
    order = graph2sql_order("names of customers with an order", pool)
    assert sorted(order) == sorted(c.id for c in pool)
    assert order.index("shop.customers") < order.index("shop.weather")
    assert order.index("shop.orders") < order.index("shop.weather")


def test_a_question_matching_nothing_keeps_the_retrievers_order() -> None:
    pool = tables()
    assert graph2sql_order("zzz qqq", pool) == [c.id for c in pool]


def test_tables_only() -> None:
    assert peer_graph("graph2sql", "tables") == "fk"
    with pytest.raises(ConfigError, match="table sets only"):
        peer_graph("graph2sql", "passages")
