"""``grapher demo``: the whole method end to end on embedded defaults, offline, in seconds.

A small retail database is created in SQLite, its tables are read back through SQLAlchemy's
inspector (foreign keys included), embedded with the packaged MiniLM model and retrieved for a
question whose SQL needs a table that plain semantic retrieval misses. GraphER then reranks the
candidates over the foreign-key graph, and both top-5 lists are printed with the explanation.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate, CorpusObject, RankedCandidate
from grapher_core.edges.keys import ForeignKeys
from grapher_core.errors import InputError
from grapher_core.rerank import GraphReranker

RETAIL_SCHEMA = """
CREATE TABLE cities (city_id INTEGER PRIMARY KEY, city_name TEXT, region TEXT);
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT,
    email TEXT, signup_date DATE, city_id INTEGER REFERENCES cities(city_id));
CREATE TABLE stores (store_id INTEGER PRIMARY KEY, store_name TEXT, street_address TEXT,
    city_id INTEGER REFERENCES cities(city_id));
CREATE TABLE employees (employee_id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT,
    job_title TEXT, hire_date DATE, store_id INTEGER REFERENCES stores(store_id));
CREATE TABLE categories (category_id INTEGER PRIMARY KEY, category_name TEXT);
CREATE TABLE suppliers (supplier_id INTEGER PRIMARY KEY, company_name TEXT, country TEXT);
CREATE TABLE products (product_id INTEGER PRIMARY KEY, product_name TEXT, list_price REAL,
    category_id INTEGER REFERENCES categories(category_id),
    supplier_id INTEGER REFERENCES suppliers(supplier_id));
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, order_date DATE, status TEXT,
    customer_id INTEGER REFERENCES customers(customer_id),
    store_id INTEGER REFERENCES stores(store_id));
CREATE TABLE order_items (order_item_id INTEGER PRIMARY KEY, quantity INTEGER,
    unit_price REAL, order_id INTEGER REFERENCES orders(order_id),
    product_id INTEGER REFERENCES products(product_id));
CREATE TABLE payments (payment_id INTEGER PRIMARY KEY, payment_method TEXT, amount REAL,
    paid_at TIMESTAMP, order_id INTEGER REFERENCES orders(order_id));
"""


# Other databases in the same catalogue: their tables compete with the retail ones for the
# question's words, as the 166 databases of Spider's pooled corpus do.
OTHER_SCHEMAS: dict[str, str] = {
    "travel": """
CREATE TABLE destinations (destination_id INTEGER PRIMARY KEY, city_name TEXT, country TEXT,
    best_season TEXT);
CREATE TABLE hotels (hotel_id INTEGER PRIMARY KEY, hotel_name TEXT, stars INTEGER,
    destination_id INTEGER REFERENCES destinations(destination_id));
CREATE TABLE travellers (traveller_id INTEGER PRIMARY KEY, full_name TEXT, home_city TEXT,
    passport_country TEXT);
CREATE TABLE bookings (booking_id INTEGER PRIMARY KEY, check_in DATE, nights INTEGER,
    total_price REAL, hotel_id INTEGER REFERENCES hotels(hotel_id),
    traveller_id INTEGER REFERENCES travellers(traveller_id));
""",
    "restaurant": """
CREATE TABLE restaurants (restaurant_id INTEGER PRIMARY KEY, restaurant_name TEXT, city TEXT,
    cuisine TEXT);
CREATE TABLE diners (diner_id INTEGER PRIMARY KEY, diner_name TEXT, phone TEXT);
CREATE TABLE reservations (reservation_id INTEGER PRIMARY KEY, party_size INTEGER,
    reserved_for TIMESTAMP, restaurant_id INTEGER REFERENCES restaurants(restaurant_id),
    diner_id INTEGER REFERENCES diners(diner_id));
CREATE TABLE menu_orders (menu_order_id INTEGER PRIMARY KEY, dish_name TEXT, price REAL,
    reservation_id INTEGER REFERENCES reservations(reservation_id));
""",
    "library": """
CREATE TABLE authors (author_id INTEGER PRIMARY KEY, author_name TEXT, birth_city TEXT);
CREATE TABLE books (book_id INTEGER PRIMARY KEY, title TEXT, published_year INTEGER,
    author_id INTEGER REFERENCES authors(author_id));
CREATE TABLE members (member_id INTEGER PRIMARY KEY, member_name TEXT, joined_on DATE);
CREATE TABLE loans (loan_id INTEGER PRIMARY KEY, loaned_on DATE, returned_on DATE,
    book_id INTEGER REFERENCES books(book_id), member_id INTEGER REFERENCES members(member_id));
""",
    "crm": """
CREATE TABLE accounts (account_id INTEGER PRIMARY KEY, account_name TEXT, industry TEXT,
    annual_revenue REAL);
CREATE TABLE contacts (contact_id INTEGER PRIMARY KEY, contact_name TEXT, email TEXT,
    account_id INTEGER REFERENCES accounts(account_id));
CREATE TABLE opportunities (opportunity_id INTEGER PRIMARY KEY, stage TEXT, amount REAL,
    close_date DATE, account_id INTEGER REFERENCES accounts(account_id));
CREATE TABLE purchase_requests (request_id INTEGER PRIMARY KEY, requested_by TEXT,
    amount REAL, status TEXT, account_id INTEGER REFERENCES accounts(account_id));
""",
}


@dataclass(frozen=True)
class DemoQuestion:
    text: str
    sql: str
    tables: tuple[str, ...]


DEFAULT_QUESTION = DemoQuestion(
    text="Which suppliers provide products in the electronics category?",
    sql=(
        "SELECT DISTINCT s.company_name FROM suppliers s JOIN products p ON p.supplier_id = "
        "s.supplier_id JOIN categories c ON c.category_id = p.category_id "
        "WHERE c.category_name = 'Electronics'"
    ),
    tables=("suppliers", "products", "categories"),
)


def create_databases(folder: Path) -> dict[str, Path]:
    """Write the retail schema and the other catalogue databases as SQLite files."""
    paths = {}
    for name, script in {"retail": RETAIL_SCHEMA, **OTHER_SCHEMAS}.items():
        paths[name] = folder / f"{name}.sqlite"
        with sqlite3.connect(paths[name]) as connection:
            connection.executescript(script)
    return paths


def read_catalogue(paths: dict[str, Path]) -> list[CorpusObject]:
    """Every table of every database, read back through SQLAlchemy's inspector."""
    from grapher_core.enrich.schema import read_schema

    return [
        obj for name, path in paths.items() for obj in read_schema(f"sqlite:///{path}", db_id=name)
    ]


def dense_candidates(
    objects: Sequence[CorpusObject], question: str, embedder: Any
) -> list[Candidate]:
    """Rank every table by cosine similarity to the question, the plain semantic baseline."""
    vectors = embedder.embed_documents([o.text for o in objects])
    query = embedder.embed_query(question)
    scores = vectors @ query
    order = np.argsort(-scores, kind="stable")
    return [
        Candidate(objects[i].id, objects[i].text, float(scores[i]), objects[i].metadata, vectors[i])
        for i in order
    ]


def run(args: argparse.Namespace) -> int:
    from grapher_core.embeddings import default_embedder

    if args.question is not None:
        from grapher_core.cli.rerank import check_question

        check_question(args.question, "--question")
    question = DEFAULT_QUESTION if args.question is None else DemoQuestion(args.question, "", ())
    if args.top < 1:
        raise InputError("--top must be >= 1")
    with tempfile.TemporaryDirectory() as folder:
        paths = create_databases(Path(folder))
        started = time.perf_counter()
        objects = read_catalogue(paths)
        schema_ms = (time.perf_counter() - started) * 1e3
    n_links = sum(len(o.metadata["foreign_keys"]) for o in objects) // 2
    print(
        f"{len(paths)} SQLite databases ({', '.join(paths)}): {len(objects)} tables, "
        f"{n_links} foreign-key links read with SQLAlchemy's inspector ({schema_ms:.0f} ms)"
    )
    embedder = default_embedder()
    started = time.perf_counter()
    candidates = dense_candidates(objects, question.text, embedder)
    retrieval_ms = (time.perf_counter() - started) * 1e3
    reranker = GraphReranker([ForeignKeys("foreign_keys")], ranker="gcs")
    reranker.rerank(candidates)  # warm-up, so the timing below is the steady state
    started = time.perf_counter()
    results = reranker.rerank(candidates, query=question.text)
    rerank_ms = (time.perf_counter() - started) * 1e3
    top = min(args.top, len(candidates))  # --top 100 over 30 tables shows all 30

    print(f"\nQuestion: {question.text}")
    needed = {f"retail.{t}" for t in question.tables}
    if needed:
        print(f"Its SQL: {question.sql}")
        print(f"Tables the SQL needs: {', '.join(question.tables)}")
    before = [c.id for c in candidates[:top]]
    after = [r.id for r in results[:top]]
    _print_side_by_side(candidates, results, top, needed)
    if needed:
        print(
            f"\nPerfect recall@{top}: dense retrieval {'yes' if needed <= set(before) else 'no'}"
            f" ({len(needed & set(before))}/{len(needed)} tables), GraphER "
            f"{'yes' if needed <= set(after) else 'no'} ({len(needed & set(after))}/"
            f"{len(needed)} tables)"
        )
    _print_explanations(results[:top], set(before))
    print(
        f"\nLoad MiniLM + embed {len(objects)} tables and the query: {retrieval_ms:.0f} ms; "
        f"GraphER rerank: {rerank_ms:.2f} ms"
    )
    return 0


def _print_side_by_side(
    candidates: Sequence[Candidate], results: Sequence[RankedCandidate], top: int, needed: set[str]
) -> None:
    def mark(table_id: str) -> str:
        return "*" if table_id in needed else " "

    print(f"\n{'':3}{'Dense retrieval (MiniLM)':<38}GraphER (GCS over foreign keys)")
    for k in range(top):
        left = f"{mark(candidates[k].id)}{candidates[k].id:<26} {candidates[k].score:.3f}"
        right = f"{mark(results[k].id)}{results[k].id:<26} {results[k].score:.3f}"
        print(f"{k + 1:>2}. {left:<37}{right}")
    if needed:
        print("   (* = needed by the SQL)")


def _print_explanations(results: Sequence[RankedCandidate], before: set[str]) -> None:
    lifted = [r for r in results if r.id not in before]
    for r in lifted:
        reasons = ", ".join(f"{c.neighbour_id} ({'/'.join(c.kinds)} edge)" for c in r.explanation)
        print(
            f"\nWhy {r.id} entered the top: rank {r.original_rank} -> {r.rank}, "
            f"score {1 / r.original_rank:.3f} (its seed, 1/rank) -> {r.score:.3f}, "
            f"lifted by {reasons}"
        )


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="end-to-end example on a retail SQLite database")
    parser.add_argument("--question", help="ask your own question about the retail schema")
    parser.add_argument("--top", type=int, default=5, help="how many tables to show (default 5)")
    parser.set_defaults(func=run)
