"""A resumable result cache in one SQLite file.

Enrichment runs over a whole corpus through a paid, flaky API; a run killed at 80 % must keep
its 80 %. Rows are keyed by (extractor name, model, version, sha256 of the text) and committed
as they arrive, in WAL mode: a SIGKILL at any moment loses at most the rows not yet committed,
and a committed row is never half-written (SQLite transactions are atomic). Failed extractions
are stored too (``entities`` NULL, ``error`` set), so they can be listed and retried alone.

A cache is only trusted as far as it checks out. A row whose values are not what this module
writes (``entities`` not a JSON list of strings, ``flags`` not a JSON list) is treated as
missing, so the text is extracted again and the row rewritten, and that is said once per file.
A file that is not a GraphER cache (another program's SQLite file, another schema version,
damaged pages) raises ``CacheError`` naming the file; ``grapher enrich`` turns it into exit
code 3, distinct from "some objects failed, re-run" (1).

A cell is bounded before it is read: SQLite refuses any value past :data:`MAX_CELL_BYTES`
(``SQLITE_LIMIT_LENGTH``, Python 3.11+) before allocating it, and a row holding one is invalid
like any other (found row by row, extracted again, rewritten): a tampered 1 GB row costs
nothing, never its size in text and again in its parse.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grapher_core.enrich.base import ExtractionResult
from grapher_core.errors import CacheError, ConfigError

__all__ = ["CacheError", "CacheKey", "CacheStats", "EntityCache", "content_hash"]

SCHEMA_VERSION = 1
MAX_CELL_BYTES = 16 << 20
"""Longest value a cache cell may hold (16 MiB; an entity list is kilobytes)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entity_results (
    extractor    TEXT NOT NULL,
    model        TEXT NOT NULL,
    version      TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    entities     TEXT,
    error        TEXT,
    flags        TEXT NOT NULL DEFAULT '[]',
    updated_at   REAL NOT NULL,
    PRIMARY KEY (extractor, model, version, content_hash),
    CHECK ((entities IS NULL) <> (error IS NULL))
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS grapher_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


_COLUMNS = ("extractor", "model", "version", "content_hash", "entities", "error", "flags",
            "updated_at")  # fmt: skip

_log = logging.getLogger(__name__)
_warned: set[tuple[str, str]] = set()


def content_hash(text: str) -> str:
    """sha256 of the UTF-8 text: the content part of the cache key.

    Lone surrogates (``"\\ud800"``, legal in JSON and Python, not in UTF-8) are hashed as their
    code units (``surrogatepass``), so every distinct text keeps a distinct, stable key.
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CacheKey:
    """Which extractor configuration a row belongs to (everything but the content)."""

    extractor: str
    model: str
    version: str


@dataclass(frozen=True)
class CacheStats:
    """Row counts of one extractor configuration.

    ``invalid`` rows are not what ``put_many`` writes (a damaged or foreign file): reads treat
    them as missing, so they count as neither succeeded nor failed.
    """

    succeeded: int
    failed: int
    invalid: int = 0


class EntityCache:
    """SQLite-backed store of extraction results, safe to share between threads.

    Open it with a path; the file and its parent folder are created. Use it as a context
    manager or call ``close()``.
    """

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        if self.path.exists() and self.path.is_dir():
            raise ConfigError(f"cache path {self.path} is a directory, expected a file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        with self._guard("open"):
            self._conn = sqlite3.connect(
                str(self.path), timeout=timeout, check_same_thread=False, isolation_level=None
            )
            setlimit = getattr(self._conn, "setlimit", None)  # Python 3.11+
            if setlimit is not None:
                setlimit(getattr(sqlite3, "SQLITE_LIMIT_LENGTH", 0), MAX_CELL_BYTES)
            self._check_existing()
            self._conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode survives any process crash (SIGKILL included); only a power
            # loss may drop the last commits, never corrupt the file.
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            self._conn.execute(
                "INSERT OR IGNORE INTO grapher_meta(key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """Turn any SQLite failure into a ``CacheError`` naming the file (and close on open)."""
        try:
            yield
        except CacheError:
            self._close_quietly(action)
            raise
        except sqlite3.Error as error:
            self._close_quietly(action)
            raise CacheError(
                f"{self.path} is not a usable GraphER cache ({action} failed: {error}); "
                "move it away or pass another --cache"
            ) from error

    def _close_quietly(self, action: str) -> None:
        connection = getattr(self, "_conn", None)
        if action == "open" and connection is not None:
            connection.close()

    def _check_existing(self) -> None:
        """Refuse another program's database or another schema before writing anything."""
        tables = {name for (name,) in self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}  # fmt: skip
        if tables and not tables & {"entity_results", "grapher_meta"}:
            raise CacheError(
                f"{self.path} is an SQLite database of another program (tables: "
                f"{', '.join(sorted(tables)[:5])}), not a GraphER entity cache; "
                "pass another --cache"
            )
        columns: tuple[str, ...] = _COLUMNS
        if "entity_results" in tables:
            columns = tuple(
                row[1] for row in self._conn.execute("PRAGMA table_info(entity_results)")
            )
        version: str | None = str(SCHEMA_VERSION)
        if "grapher_meta" in tables:
            row = self._conn.execute(
                "SELECT value FROM grapher_meta WHERE key='schema_version'"
            ).fetchone()
            version = row[0] if row else None
        if set(columns) != set(_COLUMNS) or version != str(SCHEMA_VERSION):
            raise CacheError(
                f"{self.path} has another cache schema (version {version!r}, columns "
                f"{', '.join(columns)}); expected version {SCHEMA_VERSION} with columns "
                f"{', '.join(_COLUMNS)}; move it away or pass another --cache"
            )

    def __enter__(self) -> EntityCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"EntityCache({str(self.path)!r})"

    def close(self) -> None:
        """Close the connection (rows are already committed)."""
        with self._lock:
            self._conn.close()

    def get_many(self, key: CacheKey, hashes: Iterable[str]) -> dict[str, ExtractionResult]:
        """Stored results for the given content hashes (absent hashes are simply missing)."""
        found: dict[str, ExtractionResult] = {}
        with self._lock, self._guard("read"):
            rows, invalid = self._rows(key, list(dict.fromkeys(hashes)))
        for digest, entities, error, flags in rows:
            result = _row_to_result(entities, error, flags)
            if result is None:
                invalid.append(digest)
            else:
                found[digest] = result
        if invalid:
            self._say_invalid(invalid)
        return found

    def _rows(self, key: CacheKey, hashes: list[str] | None) -> tuple[list[tuple], list[str]]:
        """``(content_hash, entities, error, flags)`` of ``hashes`` (all of ``key`` when
        ``None``), and the hashes of rows holding a cell SQLite refused to read (too big)."""
        where = "WHERE extractor=? AND model=? AND version=?"
        if hashes is None:
            hashes = [digest for (digest,) in self._conn.execute(
                f"SELECT content_hash FROM entity_results {where}", _key(key))]  # fmt: skip

        def select(part: list[str]) -> list[tuple]:
            return self._conn.execute(
                "SELECT content_hash, entities, error, flags FROM entity_results "
                f"{where} AND content_hash IN ({','.join('?' * len(part))})",
                (*_key(key), *part),
            ).fetchall()

        rows: list[tuple] = []
        oversized: list[str] = []
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            try:
                rows += select(chunk)
            except sqlite3.DataError:  # a cell past MAX_CELL_BYTES: find it row by row
                for digest in chunk:
                    try:
                        rows += select([digest])
                    except sqlite3.DataError:
                        oversized.append(digest)
        return rows, oversized

    def _say_invalid(self, digests: list[str]) -> None:
        message = (
            f"{self.path}: {len(digests)} cached rows are not valid results (e.g. content hash "
            f"{digests[0][:12]}); they are treated as missing, extracted again and rewritten"
        )
        _log.warning(message)
        if (str(self.path), "invalid rows") not in _warned:
            _warned.add((str(self.path), "invalid rows"))
            warnings.warn(message, stacklevel=3)

    def put(self, key: CacheKey, digest: str, result: ExtractionResult) -> None:
        """Store one result and commit it at once."""
        self.put_many(key, [(digest, result)])

    def put_many(self, key: CacheKey, items: Sequence[tuple[str, ExtractionResult]]) -> None:
        """Store several results in one atomic transaction (all or none survive a crash)."""
        if not items:
            return
        now = time.time()
        rows = [
            (
                key.extractor,
                key.model,
                key.version,
                digest,
                None if result.entities is None else json.dumps(result.entities),
                None
                if result.entities is not None
                else (result.error or "extraction failed (no reason given)"),
                json.dumps(list(result.flags)),
                now,
            )
            for digest, result in items
        ]
        with self._lock, self._guard("write"):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO entity_results(extractor, model, version, "
                    "content_hash, entities, error, flags, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def failed(self, key: CacheKey) -> dict[str, str]:
        """content hash -> error message of every failed row of this configuration."""
        with self._lock, self._guard("read"):
            rows, _ = self._rows(key, None)
        return {digest: error for digest, entities, error, _ in rows if entities is None}

    def stats(self, key: CacheKey) -> CacheStats:
        """How many rows of this configuration succeeded, failed, or are unreadable."""
        with self._lock, self._guard("read"):
            rows, oversized = self._rows(key, None)
        ok, bad, invalid = 0, 0, len(oversized)
        for _, entities, error, flags in rows:
            result = _row_to_result(entities, error, flags)
            if result is None:
                invalid += 1
            elif result.entities is None:
                bad += 1
            else:
                ok += 1
        return CacheStats(ok, bad, invalid)

    def __len__(self) -> int:
        with self._lock, self._guard("read"):
            (count,) = self._conn.execute("SELECT COUNT(*) FROM entity_results").fetchone()
        return int(count)


def _key(key: CacheKey) -> tuple[str, str, str]:
    return key.extractor, key.model, key.version


def _row_to_result(entities: object, error: object, flags: object) -> ExtractionResult | None:
    """The stored result, or ``None`` when the row is not what ``put_many`` writes."""
    try:
        if flags is None or flags == "":
            parsed_flags = []
        elif isinstance(flags, str):
            parsed_flags = json.loads(flags)
        else:
            return None
        if not isinstance(parsed_flags, list) or not all(isinstance(f, str) for f in parsed_flags):
            return None
        if entities is None:
            if not isinstance(error, str):
                return None
            return ExtractionResult(None, error or "extraction failed", tuple(parsed_flags))
        if not isinstance(entities, str):
            return None
        parsed = json.loads(entities)
    except (ValueError, TypeError, RecursionError):
        return None
    if not isinstance(parsed, list) or not all(isinstance(e, str) for e in parsed):
        return None
    return ExtractionResult(parsed, None, tuple(parsed_flags))
