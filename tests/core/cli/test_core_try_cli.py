"""`grapher rerank` on your own data (one question or a file of them), `grapher --version`,
`grapher demo --top` bounds."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from grapher_core import __version__
from grapher_core.cli import main

if TYPE_CHECKING:
    from conftest import HashEmbedder

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
    for command in ("rerank", "enrich", "demo", "eval"):
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


ZOO = """
CREATE TABLE animals (animal_id INTEGER PRIMARY KEY, species TEXT, country TEXT);
CREATE TABLE keepers (keeper_id INTEGER PRIMARY KEY, first_name TEXT,
    animal_id INTEGER REFERENCES animals(animal_id));
"""


def _databases(tmp_path: Path) -> list[str]:
    """``--database`` arguments of two real SQLite databases, pooled as one corpus."""
    pytest.importorskip("sqlalchemy")
    args = []
    for name, schema in (("shop", SHOP), ("zoo", ZOO)):
        with closing(sqlite3.connect(tmp_path / f"{name}.db")) as connection, connection:
            connection.executescript(schema)
        args += ["--database", f"sqlite:///{tmp_path / name}.db"]
    return args


def test_rerank_questions_embeds_the_corpus_once_and_writes_one_list_each(
    tmp_path: Path, embedder: HashEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "questions.jsonl"
    rows = [
        {"id": "q1", "text": "Which customers bought tracks?"},
        {"id": "q2", "text": "Which keepers look after which animals?", "gold": ["zoo.keepers"]},
        {"id": 3, "text": "invoice totals per country"},
    ]
    questions.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "lists.jsonl"
    base = ["rerank", "--questions", str(questions), *_databases(tmp_path), "--fetch", "6"]
    assert main([*base, "--top", "3", "--out", str(out)]) == 0
    assert "8 objects, 3 questions; 6 candidates each" in capsys.readouterr().out
    assert embedder.embedded == 8 + 3  # the pooled corpus once, then each question
    lists = [json.loads(line) for line in out.read_text().splitlines()]
    assert [item["id"] for item in lists] == ["q1", "q2", "3"]
    for item in lists:
        assert len(item["reranked"]) == 3 and len(item["retriever"]) == 3
        assert [r["rank"] for r in item["reranked"]] == [1, 2, 3]
        assert {"id", "relevance", "retriever_rank"} <= set(item["reranked"][0])
    assert {"zoo.keepers", "zoo.animals"} <= {r["id"] for r in lists[1]["reranked"]}

    assert main([*base, "--top", "2", "--no-cache"]) == 0  # printed, not written
    printed = capsys.readouterr().out
    assert "q2: Which keepers look after which animals?" in printed
    assert ". zoo.keepers" in printed and "[gold]" in printed


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["a question"], "give a question or --questions FILE.jsonl (not both)"),
        ([], "(not both)"),
        (["q", "--out", "x.jsonl"], "--out writes the lists of --questions"),
    ],
)
def test_rerank_question_or_questions(
    tmp_path: Path,
    embedder: HashEmbedder,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    said: str,
) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "x"}) + "\n")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "1", "text": "x"}) + "\n")
    with_file = ["--questions", str(questions)] if "(not both)" in said and extra else []
    assert main(["rerank", *extra, *with_file, "--corpus", str(corpus)]) == 2
    assert said in capsys.readouterr().err
    assert embedder.embedded == 0


def test_rerank_questions_checks_gold_ids_before_embedding(
    tmp_path: Path, embedder: HashEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "x"}) + "\n")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "1", "text": "x", "gold": ["b"]}) + "\n")
    assert main(["rerank", "--questions", str(questions), "--corpus", str(corpus)]) == 2
    assert f"{questions}:1: field 'gold': id 'b' is not in the corpus" in capsys.readouterr().err
    assert embedder.embedded == 0 and not (tmp_path / "cache").exists()
