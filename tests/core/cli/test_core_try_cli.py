"""`grapher rerank` on your own data, `grapher --version`, `grapher demo --top` bounds."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from grapher_core import __version__
from grapher_core.cli import main

SHOP = """
CREATE TABLE artists (artist_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE albums (album_id INTEGER PRIMARY KEY, title TEXT,
    artist_id INTEGER REFERENCES artists(artist_id));
CREATE TABLE tracks (track_id INTEGER PRIMARY KEY, name TEXT,
    album_id INTEGER REFERENCES albums(album_id));
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, first_name TEXT, country TEXT);
CREATE TABLE invoices (invoice_id INTEGER PRIMARY KEY, total REAL,
    customer_id INTEGER REFERENCES customers(customer_id));
CREATE TABLE invoice_lines (invoice_line_id INTEGER PRIMARY KEY, unit_price REAL,
    invoice_id INTEGER REFERENCES invoices(invoice_id),
    track_id INTEGER REFERENCES tracks(track_id));
"""


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"grapher {__version__}"


def test_every_option_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("rerank", "enrich", "demo"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        lines = capsys.readouterr().out.splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("  -"):
                continue
            spec, _, rest = line.strip().partition("  ")
            follows = lines[i + 1] if i + 1 < len(lines) else ""
            has_help = rest.strip() or (
                follows.startswith(" " * 6)
                and follows.strip()
                and not follows.strip().startswith("-")
            )
            assert has_help, f"grapher {command}: {spec} has no help"


def test_rerank_over_a_sqlalchemy_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("sqlalchemy")
    path = tmp_path / "shop.db"
    with closing(sqlite3.connect(path)) as connection, connection:  # commit, then close
        connection.executescript(SHOP)
    assert (
        main(
            [
                "rerank",
                "Which customers bought tracks?",
                "--database",
                f"sqlite:///{path}",
                "--top",
                "3",
                "--fetch",
                "6",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "6 objects; 6 retrieved" in out
    assert "graph: ForeignKeys('foreign_keys'); edges per kind: structural: 10" in out
    assert out.count("shop.") >= 6  # both columns filled


def test_rerank_over_a_corpus_with_other_field_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("sentence_transformers")
    corpus = tmp_path / "langs.jsonl"
    rows = [
        ("Fortran", "Fortran was the first widely used high-level language."),
        ("ALGOL", "ALGOL was designed after Fortran and influenced Pascal."),
        ("Pascal", "Pascal was designed by Niklaus Wirth for teaching."),
        ("COBOL", "COBOL is a business language."),
    ]
    corpus.write_text(
        "".join(json.dumps({"key": t.lower(), "body": f"{t}\n{b}"}) + "\n" for t, b in rows)
    )
    assert (
        main(
            [
                "rerank",
                "Who designed Pascal?",
                "--corpus",
                str(corpus),
                "--id-field",
                "key",
                "--text-field",
                "body",
                "--mentions",
                "--top",
                "2",
                "--fetch",
                "4",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "ForeignKeys('mentions' -> 'title')" in out
    assert "structural:" in out


def test_rerank_names_bad_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"key": "a", "body": "x"}) + "\n")
    assert main(["rerank", "q", "--corpus", str(corpus)]) == 2
    assert "--id-field" in capsys.readouterr().err


def test_demo_top_larger_than_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sentence_transformers")
    assert main(["demo", "--top", "100"]) == 0
    out = capsys.readouterr().out
    assert "\n26. " in out and "\n27. " not in out  # all 26 tables, no IndexError
    assert main(["demo", "--top", "0"]) == 2
