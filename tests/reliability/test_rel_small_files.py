"""One reader for the small files GraphER is handed by name (``grapher_core/utils/small_files.py``).

Before: a config at ``/dev/zero`` or a FIFO was "does not exist"; a pid file linked to
``/dev/zero`` made ``reader stop`` read until ``MemoryError``, a FIFO blocked it forever; a key
given twice in a config (``"ranker": "gcs"`` then ``"ranker": "baseline"``) -- the last won,
silently. Now only a regular file is read (configs may be reached through a link to one; pid
files never through a link), bounded in size, and a duplicate key is refused naming it, through
every door that loads a config.

Every hostile load runs in a child process capped at 2 GiB of address space, each with a
deadline, so a regression fails the test instead of hanging or exhausting the machine; the
planted naive reader shows that the cap and the deadline catch one.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grapher_bench import processes
from grapher_core.errors import GraphERError
from grapher_core.ranking.config import MAX_CONFIG_BYTES, load_config
from grapher_core.request.settings import RerankSettings

ROOT = Path(__file__).resolve().parents[2]
CONFIG = RerankSettings(ranker="gcs").to_config()


def _doors() -> dict[str, Callable[[Path], Any]]:
    from grapher_core import GraphReranker

    doors: dict[str, Callable[[Path], Any]] = {
        "load_config": load_config,
        "RerankSettings.from_config": RerankSettings.from_config,
        "GraphReranker.from_config": GraphReranker.from_config,
    }
    try:
        from langchain_core.retrievers import BaseRetriever

        from langchain_grapher import GraphERReranker, GraphERRetriever

        class Nothing(BaseRetriever):
            def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
                return []

        doors["GraphERReranker.from_config"] = lambda p: GraphERReranker.from_config(
            p, score_key="score"
        )
        doors["GraphERRetriever.from_config"] = lambda p: GraphERRetriever.from_config(
            p, base_retriever=Nothing()
        )
    except ImportError:  # make test-min has it; make test-gat-only does not
        pass
    try:
        from llama_index_grapher import GraphERPostprocessor

        doors["GraphERPostprocessor.from_config"] = GraphERPostprocessor.from_config
    except ImportError:
        pass
    return doors


DOORS = _doors()


def _within(seconds: float, call: Callable[[], Any]) -> BaseException | Any:
    """``call()``'s result or error, or a failure when it runs past ``seconds`` (a FIFO read
    blocks; the thread is a daemon, left behind)."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(call())
        except BaseException as error:  # handed to the test
            outcome.append(error)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        pytest.fail(f"still reading after {seconds} s")
    return outcome[0]


def _planted_config(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A config file of ``kind`` and what its refusal says."""
    path = tmp_path / "grapher_config.json"
    text = json.dumps(CONFIG)
    if kind == "/dev/zero":
        return Path("/dev/zero"), "is not a regular file: it is a device"
    if kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
        return path, "is not a regular file: it is a symbolic link to a device"
    if kind == "fifo":
        os.mkfifo(path)
        return path, "is not a regular file: it is a FIFO"
    if kind == "link to a fifo":
        os.mkfifo(tmp_path / "pipe")
        path.symlink_to(tmp_path / "pipe")
        return path, "is not a regular file: it is a symbolic link to a FIFO"
    if kind == "folder":
        path.mkdir()
        return path, "is not a regular file: it is a directory"
    if kind == "oversized":
        path.write_text(text[:-1] + ', "note": "' + "x" * MAX_CONFIG_BYTES + '"}')
        return path, f"more than a GraphER config may hold ({MAX_CONFIG_BYTES:,})"
    if kind == "duplicate ranker":
        path.write_text(text[:-1] + ', "ranker": "baseline"}')
        return path, "key 'ranker' appears twice in one object"
    assert kind == "duplicate nested key"
    path.write_text(text[:-1] + ', "evaluation": {"PR@5": 0.1, "PR@5": 0.9}}')
    return path, "key 'PR@5' appears twice in one object"


KINDS = [
    "/dev/zero",
    "link to /dev/zero",
    "fifo",
    "link to a fifo",
    "folder",
    "oversized",
    "duplicate ranker",
    "duplicate nested key",
]


CAP = 2 << 30
"""The children's address space: a read of ``/dev/zero`` ends there (``MemoryError``), not in
the machine's memory."""

CONFIG_CHILD = f"""
import json, resource, sys, tempfile, threading
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, ({CAP}, {CAP}))
from grapher_core.errors import ConfigError
import test_rel_small_files as here
results = {{}}
for door, load in here.DOORS.items():
    for kind in here.KINDS:
        path, said = here._planted_config(Path(tempfile.mkdtemp(dir=sys.argv[1])), kind)
        outcome = []
        def attempt():
            try:
                load(path)
                outcome.append(("loaded", False, ""))
            except BaseException as error:
                outcome.append((type(error).__name__, isinstance(error, ConfigError), str(error)))
        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        worker.join(10)  # a FIFO opened for reading blocks: the worker is left behind
        error, config_error, message = outcome[0] if outcome else ("timed out", False, "")
        results[door + "|" + kind] = [error, config_error, message, str(path), said]
print(json.dumps(results), flush=True)
"""


def _env() -> dict[str, str]:
    paths = [ROOT, ROOT / "tests" / "helpers", ROOT / "tests" / "reliability"]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(map(str, paths)),
        "OPENBLAS_NUM_THREADS": "1",
    }


@pytest.fixture(scope="module")
def door_outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    """Every door on every planted config, loaded once in a child capped at :data:`CAP`, each
    load in a thread with a 10 s deadline."""
    folder = tmp_path_factory.mktemp("configs")
    done = subprocess.run(
        [sys.executable, "-c", CONFIG_CHILD, str(folder)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outcomes: dict[str, list[Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return outcomes


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("door", list(DOORS))
def test_a_config_that_is_not_a_small_regular_json_file_is_refused(
    door: str, kind: str, door_outcomes: dict[str, list[Any]]
) -> None:
    error, config_error, message, path, said = door_outcomes[f"{door}|{kind}"]
    assert config_error, f"{error}: {message}"
    assert path in message and said in message, message


@pytest.mark.parametrize("door", list(DOORS))
def test_a_config_reached_through_a_link_to_a_regular_file_loads(door: str, tmp_path: Path) -> None:
    """The documented choice: a link to a regular file is an ordinary setup (dotfiles, a
    shared model folder); only the final target's kind is checked."""
    real = tmp_path / "shared" / "grapher_config.json"
    real.parent.mkdir()
    real.write_text(json.dumps(CONFIG))
    link = tmp_path / "grapher_config.json"
    link.symlink_to(real)
    assert not isinstance(_within(20, lambda: DOORS[door](link)), BaseException)


def test_a_missing_config_is_still_named_missing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"GraphER config .*nope\.json does not exist"):
        load_config(tmp_path / "nope.json")


# ------------------------------------------------------------------------------ pid files

CHILD = f"""
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, ({CAP}, {CAP}))
from grapher_bench import processes
if sys.argv[2] == "naive":  # the planted bypass: the reader before this mechanism
    processes.read_small_file = lambda path, **_: Path(path).read_bytes()
verdict = processes.check_pid_file(Path(sys.argv[1]))
print(processes.drop_pid_file(Path(sys.argv[1]), verdict))
"""


def _stop_in_child(path: Path, reader: str, seconds: float = 20) -> str:
    """What checking ``path`` says, in a child capped at :data:`CAP` that must finish in
    time."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), reader],
            capture_output=True,
            text=True,
            timeout=seconds,
            check=False,
            env=_env(),
        )
    except subprocess.TimeoutExpired:
        return "timed out"
    return done.stdout if done.returncode == 0 else f"failed: {done.stderr[-300:]}"


def _pid_file(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / "server.pid"
    if kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "oversized":
        path.write_text("1" * (processes.MAX_PID_FILE_BYTES + 1))
    else:  # a link to a real record of this very process: still never read through a link
        record = tmp_path / "elsewhere.pid"
        identity = processes.identity_of(os.getpid())
        assert identity is not None
        record.write_text(json.dumps(identity.to_json()))
        path.symlink_to(record)
    return path


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="needs O_NOFOLLOW (POSIX)")
@pytest.mark.parametrize("kind", ["link to /dev/zero", "fifo", "oversized", "link to a record"])
def test_a_pid_file_that_is_not_a_small_regular_file_is_refused_unread(
    kind: str, tmp_path: Path
) -> None:
    path = _pid_file(tmp_path, kind)
    said = _stop_in_child(path, "real")
    assert said.startswith(f"{path} "), said
    assert "not signalled; removed the file" in said
    expected = "more than a pid file may hold" if kind == "oversized" else "not a regular file"
    assert expected in said
    assert not os.path.lexists(path)  # the link is removed, never what it points to
    assert Path("/dev/zero").exists()


@pytest.mark.parametrize("kind", ["link to /dev/zero", "fifo"])
def test_the_planted_naive_reader_is_caught(kind: str, tmp_path: Path) -> None:
    """The bypass this mechanism closes, planted back: the child runs out of memory on
    ``/dev/zero`` and blocks on the FIFO -- the checks above would fail on it."""
    path = _pid_file(tmp_path, kind)
    said = _stop_in_child(path, "naive", seconds=5 if kind == "fifo" else 60)
    assert said == "timed out" or said.startswith("failed:"), said


STOP_CHILD = f"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({CAP}, {CAP}))
from grapher_bench.cli import main
raise SystemExit(main(["reader", "stop", "--dir", sys.argv[1]]))
"""


def test_the_reader_stop_command_refuses_a_pid_file_linked_to_dev_zero(tmp_path: Path) -> None:
    from grapher_bench.qa_eval import reader

    (tmp_path / reader.PID_FILE).symlink_to("/dev/zero")
    os.mkfifo(tmp_path / reader.CHILD_PID_FILE)
    done = subprocess.run(
        [sys.executable, "-c", STOP_CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=_env(),
    )
    assert done.returncode == 0 and "no reader" in done.stdout, done.stderr[-2000:]
    assert done.stderr.count("is not a regular file") == 2 and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# ------------------------------------------------------------------------- the one reader

LAYERS = ("grapher_core", "langchain_grapher", "llama_index_grapher")
EXTRA_FILES = ("grapher_bench/processes.py", "grapher_bench/qa_eval/reader.py")
REVIEWED = {
    "grapher_core/learned/weights.py": "a checkpoint's JSON beside its safetensors, read by "
    "the checkpoint loader (size-checked there; the checkpoint schema is its own)",
}


def json_read_from_a_path(source: str) -> list[int]:
    """Lines where JSON is parsed straight from a file (``json.load(handle)``,
    ``json.loads(path.read_text())`` / ``read_bytes()``) instead of through
    ``read_json_file``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if not (isinstance(node.func.value, ast.Name) and node.func.value.id == "json"):
            continue
        if node.func.attr == "load":
            lines.append(node.lineno)
        elif node.func.attr == "loads" and node.args:
            inner = node.args[0]
            if (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and inner.func.attr in ("read_text", "read_bytes", "read")
            ):
                lines.append(node.lineno)
    return lines


def test_no_library_file_parses_json_from_a_path_except_through_the_reader() -> None:
    files = [p for layer in LAYERS for p in (ROOT / layer).rglob("*.py")]
    files += [ROOT / name for name in EXTRA_FILES]
    found = {
        str(path.relative_to(ROOT)): lines
        for path in files
        if (lines := json_read_from_a_path(path.read_text(encoding="utf-8")))
    }
    assert sorted(set(found) - set(REVIEWED)) == [], found


def test_a_planted_direct_json_read_is_caught() -> None:
    planted = "import json\n\ndef load(path):\n    return json.loads(path.read_text())\n"
    assert json_read_from_a_path(planted) == [4]
    assert json_read_from_a_path("import json\nwith open(p) as f:\n    json.load(f)\n") == [3]
    assert json_read_from_a_path("import json\njson.loads(text)\n") == []


def test_the_reader_errors_are_grapher_errors(tmp_path: Path) -> None:
    from grapher_core.utils.small_files import read_json_file

    path = tmp_path / "x.json"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(GraphERError, match="not UTF-8"):
        read_json_file(path, limit=100)
    path.write_text("{" * 100_000)
    with pytest.raises(GraphERError, match=r"nested too deep|not valid JSON"):
        read_json_file(path, limit=1 << 20)
