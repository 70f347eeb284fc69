from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from helpers_extras import needs

from grapher_core.enrich.schema import read_schema


@pytest.fixture
def shop_db(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    with closing(sqlite3.connect(path)) as db, db:  # commit, then close
        db.executescript(
            """
            CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE stores (store_id INTEGER PRIMARY KEY, city TEXT);
            CREATE TABLE orders (
                order_id INTEGER PRIMARY KEY,
                customer_id INTEGER REFERENCES customers(customer_id),
                store_id INTEGER REFERENCES stores(store_id),
                total REAL
            );
            CREATE TABLE notes (body TEXT);
            """
        )
    return path


def test_reads_tables_columns_and_foreign_keys_both_ways(shop_db: Path) -> None:
    needs("sql")
    objects = {o.id: o for o in read_schema(f"sqlite:///{shop_db}")}
    assert set(objects) == {"shop.customers", "shop.stores", "shop.orders", "shop.notes"}
    orders = objects["shop.orders"]
    assert orders.text.startswith("Table: orders\nColumns: order_id (integer), customer_id")
    assert orders.metadata["foreign_keys"] == ["shop.customers", "shop.stores"]
    assert ["customer_id", "shop.customers", "customer_id"] in orders.metadata["fk_pairs"]
    assert orders.metadata["primary_keys"] == ["order_id"]
    assert objects["shop.customers"].metadata["foreign_keys"] == ["shop.orders"]
    assert objects["shop.notes"].metadata["foreign_keys"] == []
    assert objects["shop.notes"].metadata["db_id"] == "shop"


def test_db_id_override_and_engine(shop_db: Path) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine(f"sqlite:///{shop_db}")
    objects = read_schema(engine, db_id="retail")
    assert {o.id for o in objects} >= {"retail.orders"}
    engine.dispose()


def test_missing_database_file_is_a_clear_error(tmp_path: Path) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    with pytest.raises(sqlalchemy.exc.OperationalError):
        read_schema(f"sqlite:///{tmp_path}/nope/none.sqlite")
