"""Outputs are tried before inputs are read (``grapher_core/utils/outputs.py``).

Every option a command writes to is declared with ``output_argument``; ``run`` (the dispatcher
of ``grapher`` and ``grapher-bench``) creates its folder and a temporary file there, removes
both, and refuses a place that cannot be written -- naming the option, the path and the
system's reason, exit code 2 -- before the command reads a line or loads a model. Before this,
``grapher train --out <unwritable>`` ran every fold and the final fine-tune, then failed with a
bare ``Errno``.

The guard against a bypass: every option of every subcommand whose name says it writes
(``--out``, ``--output``, ``--write*``, ``--json``, ``--failed``, ``--*cache``) must be declared,
and every declared one is refused before a missing input is noticed.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from grapher_core.cli.arguments import OUTPUTS_DEFAULT, output_argument
from grapher_core.cli.main import build_parser, run
from grapher_core.errors import InputError
from grapher_core.utils.outputs import check_output

OUTPUT_NAME = re.compile(r"^--(out|output|json|failed)$|write|cache$|save|dump")
"""Option names that say the command writes there."""
NOT_OUTPUTS: dict[tuple[str, str], str] = {
    ("enrich", "--price-output"): "a price per million output tokens, not a path",
}


def _bench_parser() -> argparse.ArgumentParser:
    from grapher_bench.cli import bench_parser

    return bench_parser()


PARSERS: dict[str, Callable[[], argparse.ArgumentParser]] = {
    "grapher": build_parser,
    "grapher-bench": _bench_parser,
}


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:  # argparse has no public listing of subparsers
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _declared(sub: argparse.ArgumentParser) -> list[tuple[str, str, bool]]:
    return list(sub.get_default(OUTPUTS_DEFAULT) or ())


def undeclared_outputs(parser: argparse.ArgumentParser) -> list[str]:
    """``command --option`` for every option that names a place written to but is not
    declared with ``output_argument`` (so ``run`` would not try it first)."""
    found = []
    for command, sub in _subcommands(parser):
        declared = {option for _, option, _ in _declared(sub)}
        for action in sub._actions:
            if not action.option_strings or action.nargs == 0:  # positionals and flags
                continue
            name = max(action.option_strings, key=len)
            named = OUTPUT_NAME.search(name) and (command, name) not in NOT_OUTPUTS
            if named and name not in declared:
                found.append(f"{command} {name}")
    return found


@pytest.mark.parametrize("prog", list(PARSERS))
def test_every_output_option_is_declared(prog: str) -> None:
    assert undeclared_outputs(PARSERS[prog]()) == []


def _planted(declare: bool, read: list[str]) -> argparse.ArgumentParser:
    """A ``grapher export`` command reading ``--input`` and writing ``--out``; ``declare=False``
    is the bypass: an output added with a plain ``add_argument``."""
    parser = argparse.ArgumentParser(prog="grapher")
    sub = parser.add_subparsers(dest="command").add_parser("export")
    sub.add_argument("--input", type=Path)
    if declare:
        output_argument(sub, "--out")
    else:
        sub.add_argument("--out", type=Path)

    def export(args: argparse.Namespace) -> int:
        read.append(str(args.input))
        return 0

    sub.set_defaults(func=export)
    return parser


@pytest.mark.parametrize("declare", [True, False], ids=["declared", "planted-bypass"])
def test_a_planted_undeclared_output_is_caught(
    declare: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    read: list[str] = []
    parser = _planted(declare, read)
    blocker = tmp_path / "file.txt"
    blocker.write_text("a regular file")
    code = run(parser, ["export", "--input", "in.jsonl", "--out", str(blocker / "out.jsonl")])
    if declare:
        assert undeclared_outputs(parser) == []
        assert code == 2 and read == []  # refused before the input was read
        assert f"--out {blocker / 'out.jsonl'} cannot be" in capsys.readouterr().err
    else:
        assert undeclared_outputs(parser) == ["export --out"]  # the guard sees the bypass
        assert read == ["in.jsonl"]  # what the bypass does: the work starts


def _every_declared() -> list[tuple[str, str, str, bool]]:
    return [
        (prog, command, option, folder)
        for prog, make in PARSERS.items()
        for command, sub in _subcommands(make())
        for _, option, folder in _declared(sub)
    ]


DECLARED = _every_declared()


def _required(sub: argparse.ArgumentParser, skip: str, missing: Path) -> list[str]:
    """A value for each required option (a path that does not exist), ``skip`` aside."""
    needed = [a for a in sub._actions if a.required and a.option_strings]
    needed += [g._group_actions[0] for g in sub._mutually_exclusive_groups if g.required]
    argv: list[str] = []
    for action in needed:
        if skip not in action.option_strings:
            argv += [action.option_strings[0], str(missing)]
    return argv


@pytest.mark.parametrize(
    ("prog", "command", "option", "folder"),
    DECLARED,
    ids=[f"{p} {c} {o}" for p, c, o, _ in DECLARED],
)
def test_every_declared_output_is_refused_before_any_input_is_read(
    prog: str,
    command: str,
    option: str,
    folder: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRAPHER_CACHE", str(tmp_path / "cache"))
    parser = PARSERS[prog]()
    sub = dict(_subcommands(parser))[command]
    blocker = tmp_path / "file.txt"
    blocker.write_text("a regular file")
    target = blocker / "sub" / "out"
    missing = tmp_path / "missing-input"
    argv = [command, *_required(sub, option, missing), option, str(target)]
    code = run(parser, argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{option} {target} cannot be created: {blocker} is a file, not a folder" in err
    assert "missing-input" not in err  # refused before any input was looked at
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]  # nothing left behind


# ---------------------------------------------------------------- what the system says


def _refusal(path: Path, option: str = "--out", *, folder: bool = False) -> str:
    with pytest.raises(InputError) as caught:
        check_output(path, option, folder=folder)
    message = str(caught.value)
    assert message.startswith(f"{option} {path}"), message
    return message


def test_a_name_too_long_names_the_system_reason(tmp_path: Path) -> None:
    long = tmp_path / ("x" * 300)
    assert "File name too long" in _refusal(long, folder=True)
    assert "File name too long" in _refusal(long / "config.json", "--write-config")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_the_system_refuses_is_named(tmp_path: Path) -> None:
    message = _refusal(Path("/proc/self/grapher-out.json"), "--json")
    assert "cannot be written: /proc/self:" in message and "give a path you can write to" in message


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    assert "Permission denied" in _refusal(folder / "out.jsonl", "--output")


@pytest.mark.parametrize(
    ("kind", "folder", "said"),
    [
        ("folder", False, "is a directory, expected a file path"),
        ("file", True, "is a file, not a folder; give a folder"),
        ("fifo", False, "is not a regular file"),
        ("device", False, "is not a regular file"),
    ],
)
def test_the_wrong_kind_of_file_is_refused(
    tmp_path: Path, kind: str, folder: bool, said: str
) -> None:
    path = tmp_path / kind
    if kind == "folder":
        path.mkdir()
    elif kind == "file":
        path.write_text("x")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/null")  # never replaced by a written file
    assert said in _refusal(path, folder=folder)


def test_a_checked_place_is_left_as_it_was(tmp_path: Path) -> None:
    check_output(tmp_path / "a" / "b" / "out.jsonl", "--output")
    check_output(tmp_path / "c" / "d", "--out", folder=True)
    existing = tmp_path / "kept.json"
    existing.write_text("unchanged")
    check_output(existing, "--write-config")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.json"]  # no folder, no probe
    assert existing.read_text() == "unchanged"


# ---------------------------------------------- the commands of the issue, with real inputs


class _NoModel:
    """Stands in for the embedding model: loading it fails the test."""

    def __call__(self) -> Any:
        raise AssertionError("a model was loaded before the output was checked")


@pytest.mark.parametrize(
    "extra",
    [
        ["train", "--out"],
        ["train", "--work"],
        ["eval", "--write-config"],
        ["eval", "--json"],
        ["rerank", "--out"],
    ],
    ids=lambda extra: " ".join(extra),
)
def test_an_unwritable_output_stops_the_command_before_its_model(
    extra: Sequence[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from helpers_train import write_data

    from grapher_core.cli import main

    monkeypatch.setattr("grapher_core.embeddings.default_embedder", _NoModel())
    monkeypatch.setenv("GRAPHER_CACHE", str(tmp_path / "cache"))
    corpus, questions = write_data(tmp_path, "marked")
    command, option = extra
    target = Path("/proc/version") / "out"  # /proc/version is a file
    code = main(
        [command, "--corpus", str(corpus), "--questions", str(questions), option, str(target)]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"grapher {command}: error: {option} {target} cannot be created" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
