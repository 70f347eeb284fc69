"""Item 3: a damaged cache never passes silently and never looks like "some objects failed"."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from enrich_fault_server import FaultServer

from grapher_core.cli import main
from grapher_core.cli.enrich import EXIT_CACHE_UNUSABLE
from grapher_core.enrich import CacheKey, EntityCache, ExtractionResult, content_hash
from grapher_core.enrich.cache import CacheError, CacheStats

KEY = CacheKey("x", "m", "1")
TEXTS = [f"Note {i}: Ada Lovelace met Charles Babbage in London" for i in range(6)]


def corpus(tmp_path: Path) -> Path:
    source = tmp_path / "corpus.jsonl"
    source.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n"
                              for i, t in enumerate(TEXTS)))  # fmt: skip
    return source


def enrich(source: Path, out: Path, cache: Path, server: FaultServer) -> int:
    return main(["enrich", "--input", str(source), "--output", str(out), "--extractor", "openai",
                 "--model", "fake", "--base-url", server.base_url, "--api-key", "x",
                 "--cache", str(cache), "--no-progress", "--max-retries", "0"])  # fmt: skip


def test_wrong_row_is_recomputed_not_spelled_out(
    fault_server: Callable[..., FaultServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reported case: a row holding "Paris" used to come back as ["P","a","r","i","s"]."""
    source, out, cache = corpus(tmp_path), tmp_path / "out.jsonl", tmp_path / "c.sqlite"
    server = fault_server()
    assert enrich(source, out, cache, server) == 0
    first = out.read_text()
    with sqlite3.connect(cache) as conn:
        conn.execute("UPDATE entity_results SET entities='\"Paris\"' WHERE content_hash=?",
                     (content_hash(TEXTS[2]),))  # fmt: skip
    server.reset_stats()
    capsys.readouterr()
    with pytest.warns(UserWarning, match="not valid results"):
        assert enrich(source, out, cache, server) == 0
    assert server.stats.requests == 1  # only the damaged row was extracted again
    assert out.read_text() == first
    with sqlite3.connect(cache) as conn:
        (row,) = conn.execute("SELECT entities FROM entity_results WHERE content_hash=?",
                              (content_hash(TEXTS[2]),)).fetchone()  # fmt: skip
    assert json.loads(row) == json.loads(first.splitlines()[2])["metadata"]["entities"]


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("entities", '"Paris"'),
        ("entities", "not json"),
        ("entities", "[1, 2]"),
        ("entities", '{"entities": ["a"]}'),
        ("entities", "[" * 5000),
        ("flags", '"example_copy:x"'),
        ("flags", "[3]"),
    ],
)
def test_invalid_row_is_missing(tmp_path: Path, column: str, value: str) -> None:
    with EntityCache(tmp_path / "c.sqlite") as cache:
        cache.put_many(KEY, [("good", ExtractionResult(["a"])), ("bad", ExtractionResult(["b"]))])
        cache._conn.execute(f"UPDATE entity_results SET {column}=? WHERE content_hash='bad'",
                            (value,))  # fmt: skip
        with pytest.warns(UserWarning, match=r"1 cached rows are not valid results"):
            found = cache.get_many(KEY, ["good", "bad"])
    assert found == {"good": ExtractionResult(["a"])}
    with EntityCache(tmp_path / "c.sqlite") as cache:
        assert cache.stats(KEY) == CacheStats(succeeded=1, failed=0, invalid=1)


def test_failed_row_without_error_text_is_missing(tmp_path: Path) -> None:
    with EntityCache(tmp_path / "c.sqlite") as cache:
        cache._conn.execute("PRAGMA ignore_check_constraints=ON")
        cache._conn.execute("INSERT INTO entity_results VALUES ('x','m','1','h',NULL,NULL,'[]',0)")
        with pytest.warns(UserWarning, match="not valid results"):
            assert cache.get_many(KEY, ["h"]) == {}


def _sql(path: Path, *statements: str) -> None:
    """Run statements and close (a WAL file left open would be checkpointed later)."""
    with closing(sqlite3.connect(path)) as conn, conn:
        for statement in statements:
            conn.execute(statement)


def _foreign(path: Path) -> None:
    _sql(path, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
         "INSERT INTO users(name) VALUES ('ada')")  # fmt: skip


def _other_version(path: Path) -> None:
    EntityCache(path).close()
    _sql(path, "UPDATE grapher_meta SET value='99' WHERE key='schema_version'")


def _other_columns(path: Path) -> None:
    _sql(path, "CREATE TABLE entity_results (content_hash TEXT PRIMARY KEY, data BLOB)")


def _junk(path: Path) -> None:
    path.write_bytes(b"this is not a database" * 200)


def _damaged_pages(path: Path) -> None:
    with EntityCache(path) as cache:
        cache.put_many(KEY, [(content_hash(str(i)), ExtractionResult(["x" * 50 + str(i)]))
                             for i in range(2000)])  # fmt: skip
    data = bytearray(path.read_bytes())
    data[4096 * 3 : 4096 * 20] = b"\xa5" * (4096 * 17)
    path.write_bytes(bytes(data))


DAMAGE = {"foreign database": (_foreign, "another program"),
          "other schema version": (_other_version, "another cache schema"),
          "other columns": (_other_columns, "another cache schema"),
          "not sqlite": (_junk, "not a usable GraphER cache"),
          "damaged pages": (_damaged_pages, "malformed")}  # fmt: skip


@pytest.mark.parametrize(("damage", "message"), list(DAMAGE.values()), ids=list(DAMAGE))
def test_unusable_cache_exit_code_names_the_file(
    fault_server: Callable[..., FaultServer], tmp_path: Path,
    capsys: pytest.CaptureFixture[str], damage: Callable[[Path], None], message: str,
) -> None:  # fmt: skip
    cache = tmp_path / "damaged.sqlite"
    damage(cache)
    before = cache.read_bytes()
    server = fault_server()
    code = enrich(corpus(tmp_path), tmp_path / "out.jsonl", cache, server)
    err = capsys.readouterr().err
    assert code == EXIT_CACHE_UNUSABLE == 3, err
    assert str(cache) in err and message in err
    assert "Traceback" not in err
    assert cache.read_bytes() == before  # nothing written into someone else's file
    assert server.stats.requests == 0  # refused before any paid request
    assert not (tmp_path / "out.jsonl").exists()
    with pytest.raises(CacheError, match=str(cache)):
        EntityCache(cache)
