"""Cache cells are bounded before they are read: an oversized entity row is invalid (found row
by row, extracted again), an embedding row declaring a huge dimension is never read."""

from __future__ import annotations

import sqlite3
import tracemalloc
import warnings
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from grapher_core.enrich import cache as cache_module
from grapher_core.enrich.base import ExtractionResult
from grapher_core.enrich.cache import CacheKey, CacheStats, EntityCache
from grapher_core.utils.embedding_cache import MAX_DIM, EmbeddingCache

needs_setlimit = pytest.mark.skipif(
    not hasattr(sqlite3.Connection, "setlimit"), reason="sqlite3 setlimit needs Python 3.11+"
)
KEY = CacheKey("x", "m", "1")


@needs_setlimit
def test_an_oversized_entity_row_is_invalid_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "MAX_CELL_BYTES", 1 << 20)
    path = tmp_path / "c.sqlite"
    with EntityCache(path) as cache:
        cache.put_many(KEY, [(f"h{i}", ExtractionResult([f"e{i}"])) for i in range(5)])
        cache.put(KEY, "bad", ExtractionResult(None, "timeout"))
    with closing(sqlite3.connect(path)) as db, db:  # a tampered row: 8 MiB of entities
        db.execute("UPDATE entity_results SET entities = ? WHERE content_hash = 'h2'",
                   ('["' + "e" * (8 << 20) + '"]',))  # fmt: skip
    with EntityCache(path) as cache:
        tracemalloc.start()
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            found = cache.get_many(KEY, [f"h{i}" for i in range(5)])
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert sorted(found) == ["h0", "h1", "h3", "h4"] and peak < 2 << 20
        assert any("1 cached rows are not valid" in str(w.message) for w in said)
        assert cache.stats(KEY) == CacheStats(4, 1, 1)
        assert cache.failed(KEY) == {"bad": "timeout"}
        cache.put(KEY, "h2", ExtractionResult(["e2"]))  # rewritten like any invalid row
        assert cache.get_many(KEY, ["h2"])["h2"].entities == ["e2"]


def test_an_embedding_row_declaring_a_huge_dimension_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many({"ok": np.ones(3)})
    wide = MAX_DIM + 1
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("INSERT INTO vectors VALUES ('wide', ?, ?)", (wide, b"\x00" * 4 * wide))
        db.execute("INSERT INTO vectors VALUES ('text', 2, ?)", ("8 bytes!",))
        db.execute("INSERT INTO vectors VALUES ('half', 2.5, ?)", (b"\x00" * 10,))
    assert list(cache.get_many(["ok", "wide", "text", "half"])) == ["ok"]
    assert cache.usable
