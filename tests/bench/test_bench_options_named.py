"""grapher-bench names what is wrong: an integer option out of range by its flag (one argparse
type for all of them), a damaged results.json read by --from-results by its path."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from grapher_bench.cli import bench_parser, int_argument, main, non_negative_int, positive_int
from grapher_bench.runner import load_run
from grapher_core.errors import GraphERError

GOOD_RUN = {
    "dataset": "d",
    "retriever": "r",
    "n_queries": 2,
    "n_multi": 2,
    "n_candidates": 5,
    "results": {"gcs": {"PR@5": 0.5, "PR@10": 1.0}},
}


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["gat-latency", "--n", "-3"], "--n"),
        (["gat-latency", "--n", "0"], "--n"),
        (["gat-latency", "--repeats", "x"], "--repeats"),
        (["gat-latency", "--threads", "0"], "--threads"),
        (["bench", "--limit", "0"], "--limit"),
        (["bench", "--top-n", "-1"], "--top-n"),
        (["bench", "--llm-concurrency", "0"], "--llm-concurrency"),
        (["tune", "--limit", "-5"], "--limit"),
        (["bench-latency", "--repeats", "0"], "--repeats"),
        (["hub-memory", "--n", "-1"], "--n"),
        (["train", "--epochs", "0"], "--epochs"),
        (["train", "--seed", "-1"], "--seed"),
        (["train", "--patience", "-1"], "--patience"),
        (["qagnn-eval", "--folds", "1"], "--folds"),
        (["grag-study", "--hidden", "0"], "--hidden"),
        (["seeds", "--top-n", "0"], "--top-n"),
        (["default-study", "--limit", "0"], "--limit"),
        (["wrapper-latency", "--warmup", "-1"], "--warmup"),
        (["wrapper-latency", "--queries", "1.5"], "--queries"),
    ],
)
def test_an_integer_option_out_of_range_is_named_in_one_line(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"argument {flag}:" in err and "integer" in err


def test_zero_is_allowed_where_it_means_none() -> None:
    parser = bench_parser()
    args = parser.parse_args(["train", "--seed", "0", "--patience", "0", "--threads", "0"])
    assert (args.seed, args.patience, args.threads) == (0, 0, 0)
    assert parser.parse_args(["wrapper-latency", "--warmup", "0"]).warmup == 0


def test_every_integer_option_of_grapher_bench_is_checked() -> None:
    """No subcommand keeps a bare ``type=int`` (qa-eval checks its own before any work)."""
    parser = bench_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    bare = [
        f"{command} {action.option_strings[0]}"
        for command, sub in subparsers.choices.items()
        if command not in ("qa-eval", "reader")
        for action in sub._actions
        if action.type is int
    ]
    assert bare == []


@pytest.mark.parametrize(("value", "low", "ok"), [("3", 1, 3), (" 0 ", 0, 0), ("7", 2, 7)])
def test_int_argument_accepts(value: str, low: int, ok: int) -> None:
    assert int_argument(low)(value) == ok


@pytest.mark.parametrize("value", ["0", "-1", "1e3", "", "two", "2.0"])
def test_positive_int_refuses(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="integer >= 1"):
        positive_int(value)


def test_non_negative_int_and_an_upper_bound() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=">= 0"):
        non_negative_int("-1")
    with pytest.raises(argparse.ArgumentTypeError, match=r"in \[1, 5\]"):
        int_argument(1, 5)("6")


def _write(folder: Path, content: str | bytes) -> Path:
    path = folder / "set" / "dense" / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


DAMAGED = {
    "truncated": ('{"dataset": "d", ', "not JSON"),
    "empty": ("", "not JSON"),
    "binary": (b"\xff\xfe\x00garbage", "not UTF-8"),
    "array": ("[1, 2]", "JSON array"),
    "no results": (json.dumps({**GOOD_RUN, "results": None}), "'results'"),
    "string metric": (
        json.dumps({**GOOD_RUN, "results": {"gcs": {"PR@5": "high", "PR@10": 1}}}),
        "'PR@5'",
    ),
    "negative count": (json.dumps({**GOOD_RUN, "n_queries": -1}), "'n_queries'"),
    "missing dataset": (
        json.dumps({k: v for k, v in GOOD_RUN.items() if k != "dataset"}),
        "'dataset'",
    ),
    "no PR@10": (json.dumps({**GOOD_RUN, "results": {"gcs": {"PR@5": 0.5}}}), "PR@10"),
    "deep": ("[" * 100_000 + "]" * 100_000, "results.json"),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_from_results_names_the_damaged_file(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content, said = DAMAGED[case]
    path = _write(tmp_path, content)
    assert main(["bench", "--from-results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(path) in err and said in err and "--from-results" in err


def test_from_results_names_a_damaged_per_query_file(tmp_path: Path) -> None:
    path = _write(tmp_path, json.dumps(GOOD_RUN))
    path.with_name("per_query.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(GraphERError, match=r"per_query\.json"):
        load_run(path)


def test_from_results_still_reads_a_good_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, json.dumps(GOOD_RUN))
    assert main(["bench", "--from-results", str(tmp_path)]) == 0
    assert "r + gcs" in capsys.readouterr().out
    assert main(["bench", "--from-results", str(path)]) == 0  # the file itself


def test_from_results_of_a_missing_folder_names_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--from-results", str(tmp_path / "absent")]) == 2
    assert "--from-results" in capsys.readouterr().err
