"""How ``grapher`` ends when there is nothing to do or the user stops it.

* ``grapher eval --rankers qa-gnn`` without the gat extra skipped its only ranker, exited 0 and
  "chose" among 0 configurations, its skip line naming a module. Now a request whose every ranker
  needs a missing extra exits 2 naming the extra before any input is read; one whose every
  ranker was skipped for another reason exits 2 after the rankers are built; a skipped ranker
  beside a usable one is one line naming the extra (``missing_extras`` in
  ``grapher_core/cli/eval.py``).
* Ctrl-C during ``grapher train`` printed a traceback. Now it is one line saying what was kept,
  exit code 130 (``run`` in ``grapher_core/cli/main.py``; the line from the command's
  ``interrupted`` default).

The missing extra is real: a fresh interpreter where ``torch`` and ``torch_geometric`` cannot be
imported (what ``make test-min`` installs); the interrupt is a real SIGINT sent to a real
``grapher train`` child process in the middle of its second fold.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers_hash_embedder import HashEmbedder
from helpers_train import MINILM, write_data

from grapher_core.cli import main
from grapher_core.cli.main import EXIT_INTERRUPTED, run
from grapher_core.errors import ConfigError
from grapher_core.ranking.base import Ranker

ROOT = Path(__file__).resolve().parents[2]
HELPERS = ROOT / "tests" / "helpers"
WITHOUT_GAT = textwrap.dedent(
    """
    import sys


    class NotInstalled:  # as if pip had never installed them (sys.modules stays clean)
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in ("torch", "torch_geometric"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)


    sys.meta_path.insert(0, NotInstalled())
    """
)
HASH_MODEL = textwrap.dedent(
    f"""
    import grapher_core.embeddings
    from helpers_hash_embedder import HashEmbedder
    fake = HashEmbedder(384)
    fake.name = {MINILM!r}
    grapher_core.embeddings.default_embedder = lambda: fake
    """
)


def _child(code: str, *argv: str, cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HELPERS)])}
    env["GRAPHER_CACHE"] = str(cwd / "cache")
    return subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _eval_without_gat(tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    code = (
        WITHOUT_GAT
        + HASH_MODEL
        + ("from grapher_core.cli import main\nraise SystemExit(main(sys.argv[1:]))\n")
    )
    child = _child(code, "eval", *argv, cwd=tmp_path)
    out, err = child.communicate(timeout=300)
    return child.returncode, out, err


@pytest.mark.parametrize("rankers", ["qa-gnn", "gat", "gat,qa-gnn,mlp"])
def test_every_ranker_needing_a_missing_extra_exits_2_before_reading(
    tmp_path: Path, rankers: str
) -> None:
    missing = tmp_path / "nowhere.jsonl"
    code, out, err = _eval_without_gat(
        tmp_path, "--corpus", str(missing), "--questions", str(missing), "--rankers", rankers
    )
    assert code == 2, err
    assert f"grapher eval: error: --rankers {rankers}: every requested ranker needs" in err
    assert "pip install 'grapher-rerank[gat]'" in err
    assert "does not exist" not in err  # refused before the corpus was looked for
    assert len(err.strip().splitlines()) == 1 and out == ""


def test_a_skipped_ranker_beside_a_usable_one_is_one_line_naming_the_extra(
    tmp_path: Path,
) -> None:
    corpus, questions = write_data(tmp_path, "marked", questions=6)
    code, out, err = _eval_without_gat(
        tmp_path, "--corpus", str(corpus), "--questions", str(questions), "--rankers",
        "gcs,qa-gnn", "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    skipped = [line for line in out.splitlines() if line.startswith("skipped:")]
    assert skipped == ["skipped: qa-gnn: needs the gat extra: pip install 'grapher-rerank[gat]'"]


@pytest.fixture
def broken_ranker() -> object:
    """A registered ranker that cannot be built (as a checkpoint that fails to load)."""
    from grapher_core import register_ranker
    from grapher_core.allowed import _unregister

    def broken(**_: object) -> Ranker:
        raise ConfigError("the planted ranker cannot be built")

    register_ranker("planted-broken", broken)
    yield "planted-broken"
    _unregister("ranker", "planted-broken")


@pytest.mark.parametrize("rankers", ["planted-broken", "gcs,planted-broken"])
def test_an_evaluation_whose_every_ranker_was_skipped_exits_2(
    rankers: str,
    broken_ranker: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake = HashEmbedder(384)
    monkeypatch.setattr("grapher_core.embeddings.default_embedder", lambda: fake)
    monkeypatch.setenv("GRAPHER_CACHE", str(tmp_path / "cache"))
    corpus, questions = write_data(tmp_path, "marked", questions=6)
    argv = ["eval", "--corpus", str(corpus), "--questions", str(questions), "--no-progress"]
    code = main([*argv, "--rankers", rankers])
    out, err = capsys.readouterr()
    if rankers == broken_ranker:
        assert code == 2
        assert "every requested ranker was skipped (planted-broken: the planted ranker" in err
        assert "choice on PR@" not in out  # no choice "made" among 0 configurations
    else:  # one usable ranker: evaluated, the broken one named
        assert code == 0, err
        assert "skipped: planted-broken: the planted ranker cannot be built" in out
        assert "choice on PR@" in out


# ------------------------------------------------------------------------------- Ctrl-C

TRAIN = HASH_MODEL + textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from helpers_train import FAST, write_data
    from grapher_core.cli import main
    corpus, questions = write_data(Path.cwd(), "marked")
    raise SystemExit(main([
        "train", "--corpus", str(corpus), "--questions", str(questions), *FAST,
        "--epochs", "30", "--patience", "30", *sys.argv[1:],
    ]))
    """
)


def test_ctrl_c_during_train_is_one_line_and_keeps_finished_folds(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="needs the gat extra: pip install 'grapher-rerank[gat]'")
    pytest.importorskip("torch_geometric", reason="needs the gat extra")
    work = tmp_path / "work"
    child = _child(TRAIN, "--work", str(work), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert child.stderr is not None
    before = []
    try:
        for line in child.stderr:  # progress lines, flushed one by one
            before.append(line)
            if line.startswith("fold 1/2: done"):
                child.send_signal(signal.SIGINT)  # in the middle of the second fold
                break
        _, after = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
    assert any(line.startswith("fold 1/2: done") for line in before), "".join(before[-5:])
    assert child.returncode == EXIT_INTERRUPTED, after
    assert after.strip() == f"grapher train: interrupted; finished folds are kept in --work {work}"
    assert "Traceback" not in after
    kept = json.loads((work / "fold-0.json").read_text())
    assert kept["fold"] == 0 and not (work / "fold-1.json").exists()
    assert not list(work.glob("*.partial")) and not (tmp_path / "out").exists()


def test_ctrl_c_in_any_command_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """The dispatcher's rule, for a command with nothing to keep and for train without
    ``--work`` (its line says how to keep folds next time)."""
    from grapher_core.cli.train import interrupted_line

    def stopped(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    parser = argparse.ArgumentParser(prog="grapher")
    sub = parser.add_subparsers(dest="command").add_parser("export")
    sub.set_defaults(func=stopped)
    assert run(parser, ["export"]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err.strip() == "grapher export: interrupted"
    sub.set_defaults(interrupted=interrupted_line, work=None)
    assert run(parser, ["export"]) == EXIT_INTERRUPTED
    assert "interrupted; nothing kept (give --work DIR" in capsys.readouterr().err
