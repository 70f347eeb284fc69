"""The one on-disk embedding cache: ``grapher rerank``/``grapher eval`` and ``grapher-bench``
share it, so vectors computed by one are found by the other.

A SQLite table ``key -> float32 vector`` (``key`` = sha256 of the model name and the exact
text, so any text change embeds again), one short connection per call and no handle kept
between calls (safe to share between processes). A file that cannot be used (not SQLite, another
schema, read-only, a full disk) is said once on ``notes`` and then left alone: vectors are
computed, never lost over a cache. SQLite because it is in the standard library, safe under
concurrent readers, and a lookup of 35k keys takes well under a second.

Sizes are checked before a vector is read: a row is only fetched when its blob is exactly
``4 * dim`` bytes with ``1 <= dim <= MAX_DIM`` (SQLite answers ``length`` of a blob without
reading it), and SQLite itself refuses any value past ``4 * MAX_DIM`` bytes before allocating
it (``SQLITE_LIMIT_LENGTH``, Python 3.11+): a tampered row costs nothing, never gigabytes.
Only finite rows are written, and a non-finite row read back (a file written by something
else) is treated as absent: one bad answer from a model never sticks here.
"""

from __future__ import annotations

import hashlib
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TextIO, TypeVar

import numpy as np

from grapher_core.utils.paths import cache_root

__all__ = ["EmbeddingCache", "text_key"]

_T = TypeVar("_T")
_BOUND = 900  # SQLite's bound-parameter limit, with room
MAX_DIM = 1 << 16
"""Widest vector read back (65,536; MiniLM's are 384): a row declaring more is not read."""


def text_key(model: str, text: str) -> str:
    """The cache key: the model name and the exact text (surrogates kept, never an error)."""
    return hashlib.sha256(f"{model}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    """``key -> float32 vector`` in ``path`` (default ``<cache root>/embeddings.sqlite``)."""

    def __init__(self, path: str | Path | None = None, notes: TextIO | None = None) -> None:
        self.path = Path(path) if path is not None else cache_root() / "embeddings.sqlite"
        self.notes = notes if notes is not None else sys.stderr
        self.usable = True
        self._guard(self._create)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """One transaction on a fresh connection: committed (or rolled back), then closed
        (``with sqlite3.connect(...)`` alone leaves the connection to the garbage collector)."""
        with closing(sqlite3.connect(self.path, timeout=60)) as db, db:
            setlimit = getattr(db, "setlimit", None)  # Python 3.11+
            if setlimit is not None:
                setlimit(getattr(sqlite3, "SQLITE_LIMIT_LENGTH", 0), 4 * MAX_DIM + 4096)
            yield db

    def _create(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, data BLOB)"
            )

    def _guard(self, work: Callable[[], _T]) -> _T | None:
        if not self.usable:
            return None
        try:
            return work()
        except (sqlite3.Error, OSError) as error:
            self.usable = False
            print(
                f"note: embedding cache {self.path} cannot be used ({error}); embedding without it",
                file=self.notes,
            )
            return None

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors held for ``keys`` (a row whose size does not match its length is not)."""

        def read() -> dict[str, np.ndarray]:
            found: dict[str, np.ndarray] = {}
            with self._connect() as db:
                for start in range(0, len(keys), _BOUND):
                    chunk = list(keys[start : start + _BOUND])
                    marks = ",".join("?" * len(chunk))
                    for key, data in db.execute(
                        "SELECT key, data FROM vectors WHERE typeof(data) = 'blob' AND "
                        "typeof(dim) = 'integer' AND dim BETWEEN 1 AND ? AND "
                        f"length(data) = 4 * dim AND key IN ({marks})",
                        [MAX_DIM, *chunk],
                    ):
                        vector = np.frombuffer(data, dtype=np.float32)
                        if np.isfinite(vector).all():  # a NaN row is embedded again
                            found[key] = vector
            return found

        return self._guard(read) or {}

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        """Keep ``items``; a vector that is not one row of finite numbers is not kept (its
        text is embedded again next time, never served wrong)."""
        rows = []
        for key, vector in items.items():
            array = np.asarray(vector, dtype=np.float32)
            if array.ndim == 1 and 1 <= array.size <= MAX_DIM and np.isfinite(array).all():
                rows.append((key, int(array.size), array.tobytes()))

        def write() -> None:
            with self._connect() as db:
                db.executemany(
                    "INSERT OR REPLACE INTO vectors (key, dim, data) VALUES (?, ?, ?)", rows
                )

        if rows:
            self._guard(write)
