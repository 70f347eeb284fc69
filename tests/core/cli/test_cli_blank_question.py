"""An empty or blank question is refused at once, in one line with exit 2, before the corpus is
read or any embedding model is loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grapher_core.cli import main
from grapher_core.cli.rerank import check_question
from grapher_core.errors import InputError

BLANK = ["", " ", "   ", "\n", "\t\r\n", "\u200b", "\u00a0\u3000", "\ufeff ", "\x00"]


def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise AssertionError("the embedding model was loaded for a blank question")

    monkeypatch.setattr("grapher_core.embeddings.default_embedder", refuse)


@pytest.mark.parametrize("question", BLANK, ids=repr)
def test_rerank_refuses_a_blank_question_before_reading_anything(
    question: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _no_model(monkeypatch)
    missing = tmp_path / "not-there.jsonl"  # never opened: the question is checked first
    assert main(["rerank", question, "--corpus", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "question is" in err and "not-there" not in err


@pytest.mark.parametrize("question", ["", "  \t"], ids=repr)
def test_demo_refuses_a_blank_question(
    question: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_model(monkeypatch)
    assert main(["demo", "--question", question]) == 2
    assert "--question is" in capsys.readouterr().err


@pytest.mark.parametrize("question", ["?", "x", " SQL ", "表", "naïve question"])
def test_a_question_with_anything_visible_is_kept(question: str) -> None:
    assert check_question(question) == question


def test_blank_lines_of_a_questions_file_are_refused_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_model(monkeypatch)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "alpha"}) + "\n", encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "text": "   "}) + "\n", encoding="utf-8")
    argv = ["rerank", "--questions", str(questions), "--corpus", str(corpus)]
    assert main(argv) == 2
    assert "text" in capsys.readouterr().err


def test_check_question_names_the_option() -> None:
    with pytest.raises(InputError, match="--query is empty"):
        check_question("", "--query")
