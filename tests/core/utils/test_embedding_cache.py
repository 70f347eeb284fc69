"""The one embedding cache: round trip, a malformed row skipped, an unusable file said once."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import numpy as np

from grapher_core.utils.embedding_cache import EmbeddingCache, text_key


def test_vectors_round_trip_and_keys_name_model_and_text(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    key = text_key("m", "text \ud800")  # a lone surrogate is a key, not an error
    assert key != text_key("other", "text \ud800") and key != text_key("m", "text")
    cache.put_many({key: np.arange(3, dtype=np.float64)})
    found = cache.get_many([key, "absent"])
    assert list(found) == [key] and found[key].dtype == np.float32
    np.testing.assert_array_equal(found[key], [0, 1, 2])


def test_a_row_whose_size_does_not_match_is_not_returned(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite"
    EmbeddingCache(path)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO vectors VALUES ('k', 4, ?)", (b"\x00" * 8,))
    db.close()
    assert EmbeddingCache(path).get_many(["k"]) == {}


def test_an_unusable_file_is_said_once_and_nothing_fails(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite"
    path.write_text("not a database " * 100)
    notes = io.StringIO()
    cache = EmbeddingCache(path, notes=notes)
    assert cache.get_many(["k"]) == {}
    cache.put_many({"k": np.ones(2)})
    assert not cache.usable and notes.getvalue().count("cannot be used") == 1
    assert path.read_text().startswith("not a database")  # left as it was


def test_non_finite_rows_are_neither_kept_nor_served(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    cache.put_many({"nan": np.array([np.nan, 1.0], np.float32), "ok": np.ones(2, np.float32)})
    assert set(cache.get_many(["nan", "ok"])) == {"ok"}
    with sqlite3.connect(tmp_path / "e.sqlite") as db:  # a row another writer left
        db.execute("INSERT INTO vectors VALUES ('inf', 2, ?)",
                   (np.array([np.inf, 0.0], np.float32).tobytes(),))  # fmt: skip
    assert cache.get_many(["inf"]) == {}
