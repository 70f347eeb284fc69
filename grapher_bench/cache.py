"""On-disk caches so a second bench run re-embeds (and re-extracts) nothing.

Embeddings are keyed by model name + sha256 of the text, in one SQLite file per cache root
(:func:`grapher_core.utils.paths.cache_root`: ``$GRAPHER_CACHE`` or ``~/.cache/grapher``). SQLite
because it is in the standard library, safe under concurrent readers, and a lookup of 35k keys
takes well under a second.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path

import numpy as np

from grapher_core.embeddings import Embedder
from grapher_core.utils.paths import cache_root
from grapher_core.utils.progress import progress_bar

__all__ = ["CachedEmbedder", "EmbeddingCache", "cache_root", "text_key"]


def text_key(model: str, text: str) -> str:
    """Cache key: the model name and the exact text (so any text change re-embeds)."""
    return hashlib.sha256(f"{model}\x00{text}".encode()).hexdigest()


class EmbeddingCache:
    """SQLite table ``key -> float32 vector bytes``.

    Each call opens its own short connection and closes it before returning, so an instance holds
    no file handle between calls (nothing to close, safe to share between processes).
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else cache_root() / "embeddings.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, data BLOB)"
            )

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """One transaction on a fresh connection: committed (or rolled back), then closed.

        ``with sqlite3.connect(...)`` alone only ends the transaction and leaves the connection
        to the garbage collector (a ``ResourceWarning`` on Python 3.13).
        """
        with closing(sqlite3.connect(self.path, timeout=60)) as db, db:
            yield db

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._connect() as db:
            for start in range(0, len(keys), 900):  # SQLite's bound-parameter limit
                chunk = list(keys[start : start + 900])
                marks = ",".join("?" * len(chunk))
                for key, _dim, data in db.execute(
                    f"SELECT key, dim, data FROM vectors WHERE key IN ({marks})", chunk
                ):
                    found[key] = np.frombuffer(data, dtype=np.float32)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        with self._connect() as db:
            db.executemany(
                "INSERT OR REPLACE INTO vectors (key, dim, data) VALUES (?, ?, ?)",
                [
                    (k, int(v.size), np.asarray(v, dtype=np.float32).tobytes())
                    for k, v in items.items()
                ],
            )


class CachedEmbedder:
    """Wraps an :class:`Embedder`; texts already embedded by the same model come from disk."""

    def __init__(
        self,
        embedder: Embedder,
        cache: EmbeddingCache | None = None,
        batch: int = 512,
        progress: bool = True,
    ) -> None:
        self.embedder = embedder
        self.name = embedder.name
        self.cache = cache or EmbeddingCache()
        self.batch = batch
        self.progress = progress

    def embed_documents(self, texts: Sequence[str], desc: str = "embedding") -> np.ndarray:
        keys = [text_key(self.name, t) for t in texts]
        found = self.cache.get_many(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            bar = progress_bar(
                len(missing), desc, unit="text", enabled=self.progress, min_total=200, leave=False
            )
            for start in range(0, len(missing), self.batch):
                chunk = missing[start : start + self.batch]
                vectors = self.embedder.embed_documents([text_of[k] for k in chunk])
                new = {
                    k: np.asarray(v, dtype=np.float32) for k, v in zip(chunk, vectors, strict=True)
                }
                self.cache.put_many(new)
                found.update(new)
                bar.update(len(chunk))
            bar.close()
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.vstack([found[k] for k in keys])

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
