"""Hostile input at the command line: one line on stderr, a documented exit code, no traceback,
nothing left behind and nothing the user gave changed.

Every ``grapher`` case runs the real command in a subprocess (``python -m grapher_core.cli``),
and so do three ``grapher-bench qa-eval`` ones; the other qa-eval options run in-process
through the same ``run`` (a subprocess costs ~0.6 s of CPU in imports). The quick refusals run
concurrently, once per module; each one is still its own test case.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers_extras import needs

DEEP = 100_000


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str


def _run(module: str, args: list[str], cwd: Path, timeout: float = 120) -> Outcome:
    env = {**os.environ, "GRAPHER_CACHE": str(cwd / "cache"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=timeout,
        encoding="utf-8",
        errors="backslashreplace",
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def _refused(outcome: Outcome, *needles: str) -> None:
    """Exit code 2 and exactly one line on stderr holding every needle, no traceback."""
    assert "Traceback" not in outcome.err, outcome.err
    lines = outcome.err.strip().splitlines()
    assert outcome.code == 2, outcome.err
    assert len(lines) == 1, outcome.err
    for needle in needles:
        assert needle in lines[0], lines[0]


def _digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and its sha256: what a refused run must leave as it was."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ------------------------------------------------------------------ the inputs


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of hostile and sane inputs shared by every case (none may change them)."""
    root = tmp_path_factory.mktemp("cli_inputs")
    deep = "[" * DEEP + "]" * DEEP
    (root / "deep.jsonl").write_text(
        '{"id": "a", "text": "fine"}\n{"id": "b", "text": "x", "metadata": {"k": ' + deep + "}}\n"
    )
    (root / "garbage.db").write_bytes(bytes(range(256)) * 20)
    (root / "folder").mkdir()
    with contextlib.closing(sqlite3.connect(root / "real.db")) as db, db:
        db.execute("create table artist (id integer primary key, name text)")
    data = root / "tinyqa"
    data.mkdir()
    (data / "corpus.jsonl").write_text(
        '{"id": "A", "text": "A\\nAlpha is in Bravo.", "metadata": {"title": "A"}}\n'
    )
    (data / "queries.jsonl").write_text(
        '{"id": "q", "text": "Where is Alpha?", "gold": ["A"], "answer": "Bravo"}\n'
    )
    (data / "notes.md").write_text("<!-- qa-eval:end -->\n<!-- qa-eval:start -->\n")
    for name, corpus in (("noqueries", True), ("deepqa", False)):
        folder = root / name
        folder.mkdir()
        (folder / "corpus.jsonl").write_text(
            (data / "corpus.jsonl").read_text() if corpus else deep + "\n"
        )
        if not corpus:
            (folder / "queries.jsonl").write_text((data / "queries.jsonl").read_text())
    (root / "other").mkdir()
    (root / "other" / "tinyqa").mkdir()
    (root / "a_file").write_text("not a folder\n")
    (root / "reversed.md").write_text("<!-- qa-eval:end -->\n\n<!-- qa-eval:start -->\n")
    return root


QA_BASE = ["qa-eval", "--data", "tinyqa", "--base-url", "http://127.0.0.1:9/v1", "--model",
           "fake", "--cache", "run/c.sqlite", "--out", "run/out", "--no-progress"]  # fmt: skip

#: name: (module, arguments, what the one line must say)
QUICK: dict[str, tuple[str, list[str], tuple[str, ...]]] = {
    "rerank-deep-line": (
        "grapher_core.cli",
        ["rerank", "q", "--corpus", "deep.jsonl"],
        ("deep.jsonl:2", f"nested {DEEP + 2} levels deep", "more than the 100"),
    ),
    "enrich-deep-line": (
        "grapher_core.cli",
        ["enrich", "--input", "deep.jsonl", "--output", "run/out.jsonl", "--no-cache"],
        ("deep.jsonl:2", "nested"),
    ),
    "database-garbage-file": (
        "grapher_core.cli",
        ["rerank", "q", "--database", "sqlite:///garbage.db"],
        ("--database", "garbage.db", "file is not a database"),
    ),
    "database-bogus-dialect": (
        "grapher_core.cli",
        ["rerank", "q", "--database", "bogus://user:secret@host/db"],
        ("unknown database dialect 'bogus'", "***"),
    ),
    "database-not-a-url": (
        "grapher_core.cli",
        ["rerank", "q", "--database", "chinook.db"],
        ("is not a SQLAlchemy URL",),
    ),
    "database-missing-file": (  # SQLite would have created an empty file
        "grapher_core.cli",
        ["rerank", "q", "--database", "sqlite:///run/missing.db"],
        ("does not exist",),
    ),
    "database-folder": (
        "grapher_core.cli",
        ["rerank", "q", "--database", "sqlite:///folder"],
        ("is not a file",),
    ),
    "rerank-max-chars-zero": (
        "grapher_core.cli",
        ["rerank", "q", "--corpus", "deep.jsonl", "--max-chars", "0"],
        ("--max-chars must be >= 1",),
    ),
    **{
        f"qa-eval{option}": ("grapher_bench.cli", [*QA_BASE, *extra], (option.split("=")[0], said))
        for option, extra, said in [
            ("--k=0", ["--k", "0"], ">= 1, got 0"),
            ("--timeout=nan", ["--timeout", "nan"], "finite number"),
            ("--out=inside-data", ["--out", "tinyqa/results"], "inside --data"),
        ]
    },
}


#: qa-eval options refused in-process (the same ``run`` as the command; subprocesses above).
QA_OPTIONS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "--k=21": (["--k", "21"], ("--k", "at most 20")),
    "--limit=0": (["--limit", "0"], ("--limit", ">= 1")),
    "--top-n=0": (["--top-n", "0"], ("--top-n", ">= 1")),
    "--top-n<k": (["--top-n", "3", "--k", "5"], ("--top-n (3) must be at least --k (5)",)),
    "--concurrency=0": (["--concurrency", "0"], ("--concurrency", ">= 1")),
    "--max-retries=-1": (["--max-retries", "-1"], ("--max-retries", ">= 0")),
    "--answer-tokens=0": (["--answer-tokens", "0"], ("--answer-tokens", ">= 1")),
    "--judge-tokens=0": (["--judge-tokens", "0"], ("--judge-tokens", ">= 1")),
    "--block=0": (["--block", "0"], ("--block", ">= 1")),
    "--timeout=inf": (["--timeout", "inf"], ("--timeout", "finite number")),
    "--timeout=-1": (["--timeout", "-1"], ("--timeout", "finite number")),
    "--base-url": (["--base-url", "localhost:8080"], ("--base-url", "http(s) URL")),
    "--judge-base-url": (["--judge-base-url", "ftp://x/v1"], ("--judge-base-url", "http(s)")),
    "--model": (["--model", " "], ("--model must not be empty",)),
    "--judge-model": (["--judge-model", ""], ("--judge-model must not be empty",)),
    "--data=missing": (["--data", "nowhere"], ("--data nowhere: no such folder",)),
    "--data=noqueries": (["--data", "noqueries"], ("queries.jsonl is missing",)),
    "--data=twice": (["--data", "other/tinyqa"], ("two folders called 'tinyqa'",)),
    "--data=deep": (["--data", "deepqa"], ("deepqa/corpus.jsonl:1", "nested")),
    "--out=file": (["--out", "a_file"], ("--out a_file is a file",)),
    "--out=a-data-folder": (["--out", "."], ("--out", "inside --data")),
    "--cache=folder": (["--cache", "folder"], ("--cache folder is a directory",)),
    "--cache=input": (["--cache", "tinyqa/corpus.jsonl"], ("--cache", "inside --data")),
    "--write-doc=input": (["--write-doc", "tinyqa/notes.md"], ("--write-doc", "inside --data")),
    "--write-doc=reversed": (["--write-doc", "reversed.md"], ("comes before",)),
    "--limit-for=typo": (["--limit-for", "tinyqa_typo=2"], ("not a --data folder",)),
    "--systems-for=typo": (["--systems-for", "tinyqa_typo=baseline"], ("not a --data",)),
}


@pytest.mark.parametrize("case", list(QA_OPTIONS))
def test_qa_eval_refuses_an_option_before_creating_anything(
    case: str,
    inputs: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from grapher_bench.cli import main as bench_main

    monkeypatch.chdir(inputs)
    monkeypatch.setenv("GRAPHER_CACHE", str(inputs / "cache"))
    before = _digest(inputs)
    extra, needles = QA_OPTIONS[case]
    code = bench_main([*QA_BASE, *extra])
    _refused(Outcome(code, *capsys.readouterr()), *needles)
    assert not (inputs / "run").exists() and not (inputs / "cache").exists()
    assert _digest(inputs) == before


@pytest.fixture(scope="module")
def quick(inputs: Path) -> Iterator[dict[str, tuple[Outcome, dict[str, str]]]]:
    """Every quick case run once, four at a time, each in a fresh ``run/`` folder checked
    after it: (outcome, what the inputs folder holds afterwards)."""
    before = _digest(inputs)
    results: dict[str, tuple[Outcome, dict[str, str]]] = {}

    def one(name: str) -> tuple[str, Outcome]:
        module, args, _ = QUICK[name]
        return name, _run(module, args, inputs)

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = dict(pool.map(one, QUICK))
    after = _digest(inputs)
    for name, outcome in outcomes.items():
        results[name] = (outcome, after)
    yield results
    assert _digest(inputs) == before


@pytest.mark.parametrize("case", list(QUICK))
def test_refused_in_one_line_with_nothing_left_behind(
    case: str, quick: dict[str, tuple[Outcome, dict[str, str]]], inputs: Path
) -> None:
    if case.startswith("database-"):
        needs("sql")  # without it every --database is refused for that, not for its input
    outcome, after = quick[case]
    _refused(outcome, *QUICK[case][2])
    assert not (inputs / "run").exists(), "a refused run created run/"
    assert not (inputs / "cache").exists(), "a refused run created the cache folder"
    assert not (inputs / "missing.db").exists()
    assert {k: v for k, v in after.items() if not k.startswith("run/")} == _digest(inputs)


def test_rerank_keeps_surrogates_and_cuts_a_60_mb_text(inputs: Path, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")  # the command embeds with the packaged MiniLM
    corpus = tmp_path / "corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as handle:
        handle.write('{"id": "bad\\ud800", "text": "bad \\ud800 text about Paris"}\n')
        handle.write(json.dumps({"id": "huge", "text": "word " * 12_000_000}) + "\n")
        handle.write('{"id": "paris", "text": "Paris is the capital of France"}\n')
    before = hashlib.sha256(corpus.read_bytes()).hexdigest()
    outcome = _run(
        "grapher_core.cli",
        ["rerank", "Where is Paris?", "--corpus", str(corpus), "--no-cache"],  # inputs unchanged
        inputs,
    )
    assert outcome.code == 0 and "Traceback" not in outcome.err, outcome.err
    assert "bad\\ud800" in outcome.out  # printed escaped, not a UnicodeEncodeError
    assert "note: 1 texts longer than 20,000 characters were cut (--max-chars)" in outcome.out
    assert hashlib.sha256(corpus.read_bytes()).hexdigest() == before


def test_a_sqlite_database_is_read_not_written(inputs: Path) -> None:
    needs("sql")
    from grapher_core.cli.rerank import read_database

    database = inputs / "real.db"
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    objects = read_database(f"sqlite:///{database}")
    assert [o.id for o in objects] == ["real.artist"]
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in inputs.iterdir() if p.name.startswith("real")) == ["real.db"]
