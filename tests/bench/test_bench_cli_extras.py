"""``grapher-bench`` installed without its extras: each subcommand names the extra to install."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from grapher_bench.cli import (
    COMMAND_EXTRAS,
    bench_parser,
    install_hint,
    missing_module,
    naming_the_extra,
)
from grapher_core.errors import MissingDependencyError

# What `pip install grapher-rerank` lacks: blocked in the subprocesses below, so the test holds
# in the full development venv too.
OPTIONAL = (
    *("bm25s", "torch", "torch_geometric", "sentence_transformers", "spacy", "ahocorasick"),
    *("openai", "tiktoken", "penman", "matplotlib", "tqdm", "chromadb", "langchain_chroma"),
)


def bench_without(blocked: tuple[str, ...], *argv: str) -> subprocess.CompletedProcess[str]:
    """``grapher-bench argv`` in a fresh interpreter where ``blocked`` cannot be imported."""
    code = (
        "import sys\n"
        f"for name in {list(blocked)!r}:\n"
        "    sys.modules[name] = None  # `import name` raises ModuleNotFoundError\n"
        "from grapher_bench.cli import main\n"
        f"raise SystemExit(main({list(argv)!r}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )


def tiny_set(root: Path) -> Path:
    folder = root / "tiny"
    folder.mkdir()
    corpus = [{"id": f"t{i}", "text": f"table {i} of the shop", "metadata": {}} for i in range(4)]
    queries = [{"id": "q1", "text": "which table of the shop?", "gold": ["t1", "t2"]}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    return folder


def test_bench_without_bm25s_names_the_extra(tmp_path: Path) -> None:
    data = tiny_set(tmp_path)
    out = bench_without(
        ("bm25s",), "bench", "--data", str(data), "--retriever", "bm25", "--rankers", "baseline",
        "--out", str(tmp_path / "out"), "--no-progress",
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines()[-1:] == [
        "grapher-bench bench: error: needs the 'bench' extra: pip install 'grapher-rerank[bench]'"
    ]
    assert "Traceback" not in out.stderr


def test_every_subcommand_registers_without_the_extras() -> None:
    """The parser imports no optional package: --help lists every command with none of them."""
    out = bench_without(OPTIONAL, "--help")
    assert out.returncode == 0, out.stderr
    for command in COMMAND_EXTRAS:
        assert f"    {command} " in out.stdout or f"    {command}\n" in out.stdout, command


def test_every_subcommand_has_its_extras_listed() -> None:
    parser = bench_parser()
    commands = {
        name
        for action in parser._actions
        if hasattr(action, "choices") and isinstance(action.choices, dict)
        for name in action.choices
    }
    assert commands == set(COMMAND_EXTRAS)


@pytest.mark.parametrize("command", sorted(COMMAND_EXTRAS))
def test_each_subcommand_names_its_extras(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the command, a missing optional module becomes its extras' install line."""

    def needs_bm25s(args: argparse.Namespace) -> int:
        import bm25s  # noqa: F401  (blocked below)

        return 0

    monkeypatch.setitem(sys.modules, "bm25s", None)
    extras = COMMAND_EXTRAS[command]
    with pytest.raises(MissingDependencyError) as raised:
        naming_the_extra(command, needs_bm25s)(argparse.Namespace())
    message = str(raised.value)
    assert message.startswith("needs the ") and "\n" not in message
    assert message.endswith(f"pip install 'grapher-rerank[{','.join(extras)}]'")
    assert all(f"'{extra}'" in message for extra in extras)


def test_other_errors_pass_through() -> None:
    def broken(args: argparse.Namespace) -> int:
        raise ImportError("cannot import name 'x' from 'grapher_core'")

    with pytest.raises(ImportError, match="cannot import name") as raised:
        naming_the_extra("bench", broken)(argparse.Namespace())
    assert not isinstance(raised.value, MissingDependencyError)


def test_only_optional_modules_are_rewritten() -> None:
    absent = ModuleNotFoundError("No module named 'bm25s'", name="bm25s")
    assert missing_module(absent) == "bm25s"
    wrapped = MissingDependencyError("title mentions need pyahocorasick")
    wrapped.__cause__ = ModuleNotFoundError(name="ahocorasick")
    assert missing_module(wrapped) == "ahocorasick"
    assert missing_module(ModuleNotFoundError(name="grapher_core.gone")) is None  # a broken install
    assert missing_module(ImportError("cannot import name 'x'")) is None
    hint = install_hint("wrapper-latency", "chromadb")
    assert hint.endswith("[bench,gat,langchain,llamaindex]' chromadb")
    assert install_hint("train", "torch") == (
        "needs the 'bench' and 'gat' extras: pip install 'grapher-rerank[bench,gat]'"
    )


def test_from_results_reads_only_the_runs_of_its_folder(tmp_path: Path) -> None:
    """``make bench`` renders from ``bench_out``; another study written under it (the docs'
    ``--out bench_out/expand_default``) must not add rows to its tables."""
    from grapher_bench.bench.cli import result_files

    own = [tmp_path / "spider_dev" / "hybrid", tmp_path / "musique" / "dense"]
    other = [tmp_path / "expand" / "spider_dev" / "hybrid", tmp_path / "user"]
    for folder in own + other:
        folder.mkdir(parents=True)
        (folder / "results.json").write_text("{}")
    assert result_files(tmp_path) == sorted(f / "results.json" for f in own)
    assert result_files(tmp_path / "user") == [tmp_path / "user" / "results.json"]
    assert result_files(tmp_path / "expand") == [other[0] / "results.json"]
