"""A runaway answer or judge reply is stored cut to MAX_STORED_CHARS, flagged in its row, and
said once; the measures and the in-memory record keep the whole text."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from grapher_bench.cli import main as bench_main
from grapher_bench.qa_eval import pipeline
from grapher_bench.qa_eval.pipeline import MAX_STORED_CHARS, QARecord, QARun, stored_text
from grapher_bench.qa_eval.report import write_outputs
from grapher_bench.qa_eval.systems import parse_system

HUGE = 18_000_000


def record(
    answer: str | None, judge: str | None = None, final: str | None = None, system: str = "a"
) -> QARecord:
    return QARecord(
        "q1", system, ["d1"], 1.0, answer, None, judge, True, 1.0, 1.0, True, True, False, final
    )


@pytest.fixture(autouse=True)
def _fresh_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a new process would: the cut not yet said."""
    monkeypatch.setattr(pipeline, "_said_cut", False)


def test_an_18_mb_answer_is_stored_cut_once_per_field_and_flagged() -> None:
    answer = "Answer: " + "x" * HUGE
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        row = record(answer, final=answer[len("Answer: ") :]).to_json()
    assert len(row["answer"]) == len(row["final_answer"]) == MAX_STORED_CHARS
    assert row["answer_truncated"] is True and row["judge_reply_truncated"] is False
    assert len(json.dumps(row)) < 3 * MAX_STORED_CHARS
    assert len(said) == 1 and "answer_truncated" in str(said[0].message)


@pytest.mark.parametrize("size", [MAX_STORED_CHARS + 1, 5 * MAX_STORED_CHARS, HUGE])
def test_a_long_judge_reply_is_cut_and_flagged(size: int) -> None:
    with pytest.warns(UserWarning, match="judge_reply_truncated"):
        row = record("Paris", judge="yes " * (size // 4 + 1)).to_json()
    assert len(row["judge_reply"]) == MAX_STORED_CHARS
    assert row["judge_reply_truncated"] is True and row["answer_truncated"] is False


@pytest.mark.parametrize("answer", [None, "", "Paris", "y" * MAX_STORED_CHARS])
def test_texts_within_the_cap_are_kept_whole(answer: str | None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for texts that fit
        row = record(answer, judge="yes").to_json()
    assert row["answer"] == answer and row["judge_reply"] == "yes"
    assert row["answer_truncated"] is False and row["judge_reply_truncated"] is False


def test_the_record_in_memory_keeps_the_whole_answer() -> None:
    answer = "z" * (MAX_STORED_CHARS * 2)
    rec = record(answer)
    with pytest.warns(UserWarning, match="said once"):
        rec.to_json()
    assert rec.answer == answer


def test_stored_text_names_the_cut() -> None:
    assert stored_text("abc", 2) == ("ab", True)
    assert stored_text("ab", 2) == ("ab", False)
    assert stored_text(None) == (None, False)


def test_per_query_jsonl_stays_small_and_the_cut_is_said_once(tmp_path: Path) -> None:
    big = "w " * HUGE
    rows = [record(big, judge=big, system="a"), record(big + "!", system="a")]
    run = QARun("tiny", [parse_system("a")], [], {"a": rows}, 0, 0, 0, 0)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        write_outputs(run, tmp_path)
    written = tmp_path / "per_query.jsonl"
    assert written.stat().st_size < 2 * 3 * MAX_STORED_CHARS
    lines = [json.loads(line) for line in written.read_text(encoding="utf-8").splitlines()]
    assert [line["answer_truncated"] for line in lines] == [True, True]
    assert [line["judge_reply_truncated"] for line in lines] == [True, False]
    assert sum("answer_truncated" in str(w.message) for w in said) == 1


@pytest.mark.parametrize("key", ["", "  ", "sk-1\n"], ids=repr)
def test_qa_eval_refuses_a_blank_api_key_first(
    key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["qa-eval", "--data", str(tmp_path / "absent"), "--base-url", "http://127.0.0.1:9/v1",
            "--model", "m", "--out", str(tmp_path / "out"), "--api-key", key]  # fmt: skip
    assert bench_main(argv) == 2
    err = capsys.readouterr().err
    assert "--api-key" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()
