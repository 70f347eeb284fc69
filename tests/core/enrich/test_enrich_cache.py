"""The SQLite cache: rows keyed by configuration and content, failures kept apart."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from grapher_core.enrich import CacheKey, EntityCache, ExtractionResult, content_hash

KEY = CacheKey("spacy:m", "m", "1")


def test_round_trip_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.sqlite"
    with EntityCache(path) as cache:
        cache.put(KEY, "h1", ExtractionResult(["Paris", "France"]))
        cache.put(KEY, "h2", ExtractionResult(None, "HTTP 500"))
        cache.put(KEY, "h3", ExtractionResult([], flags=("example_copy:Honolulu",)))
    with EntityCache(path) as cache:
        found = cache.get_many(KEY, ["h1", "h2", "h3", "missing"])
        assert found["h1"] == ExtractionResult(["Paris", "France"])
        assert found["h2"].entities is None and found["h2"].error == "HTTP 500"
        assert found["h3"] == ExtractionResult([], None, ("example_copy:Honolulu",))
        assert "missing" not in found
        assert cache.failed(KEY) == {"h2": "HTTP 500"}
        assert cache.stats(KEY).succeeded == 2 and cache.stats(KEY).failed == 1


def test_keys_do_not_mix(tmp_path: Path) -> None:
    with EntityCache(tmp_path / "c.sqlite") as cache:
        cache.put(KEY, "h", ExtractionResult(["a"]))
        for other in (
            CacheKey("spacy:m", "m", "2"),
            CacheKey("x", "m", "1"),
            CacheKey("spacy:m", "n", "1"),
        ):
            assert cache.get_many(other, ["h"]) == {}


def test_success_replaces_failure(tmp_path: Path) -> None:
    with EntityCache(tmp_path / "c.sqlite") as cache:
        cache.put(KEY, "h", ExtractionResult(None, "timeout"))
        cache.put(KEY, "h", ExtractionResult(["a"]))
        assert cache.get_many(KEY, ["h"])["h"].entities == ["a"]
        assert len(cache) == 1 and cache.failed(KEY) == {}


def test_many_hashes_in_chunks(tmp_path: Path) -> None:
    rows = [(content_hash(str(i)), ExtractionResult([str(i)])) for i in range(1200)]
    with EntityCache(tmp_path / "c.sqlite") as cache:
        cache.put_many(KEY, rows)
        found = cache.get_many(KEY, [digest for digest, _ in rows])
    assert len(found) == 1200 and found[content_hash("7")].entities == ["7"]


def test_wal_mode_and_schema_check(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    EntityCache(path).close()
    with closing(sqlite3.connect(path)) as conn, conn:  # commit, then close
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        with pytest.raises(sqlite3.IntegrityError):  # a row is either a success or a failure
            conn.execute("INSERT INTO entity_results VALUES ('a','b','c','d','[]','err','[]',0)")


def test_bad_paths_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is a directory"):
        EntityCache(tmp_path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ValueError, match="not a usable GraphER cache"):
        EntityCache(junk)


def test_content_hash_is_sha256_of_utf8() -> None:
    assert content_hash("é") == hashlib.sha256("é".encode()).hexdigest()
    assert content_hash("a") != content_hash("a ")
