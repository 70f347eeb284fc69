"""Fixed: ``grapher-bench reader stop`` sent SIGTERM and SIGKILL to whatever process had the pid
in ``server.pid``, checking only that one was alive -- after a crash or a reboot that pid
belongs to another program, and the user's unrelated process was killed. Now each pid file
records the process's identity (pid, start time, boot id, command line,
``grapher_bench/processes.py``) and nothing is signalled unless the live process matches it.

Each case starts a real unrelated process (``sleep 60``), writes a pid file naming it that does
not describe it, and checks that ``stop`` / ``status`` leave it running, say so in one line
naming the file, and remove the file."""

from __future__ import annotations

import dataclasses
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grapher_bench import processes
from grapher_bench.cli import main as bench_main
from grapher_bench.qa_eval import reader

pytestmark = pytest.mark.skipif(
    not processes.has_proc() or shutil.which("sleep") is None,
    reason="needs Linux's /proc (elsewhere nothing is signalled by record at all) and sleep",
)

WATCHDOG_ARGV = (sys.executable, "-m", "grapher_bench.qa_eval.reader", "--seconds", "600")


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """A live process that no pid file of the reader describes."""
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


def _still_running(process: subprocess.Popen[bytes]) -> bool:
    """Alive half a second later: a signal sent to it would have ended it by then."""
    try:
        process.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        return True
    return False


def _record(kind: str, pid: int) -> str:
    """A pid file naming ``pid`` that does not describe the process there."""
    real = processes.identity_of(pid)
    assert real is not None and real.start_time is not None
    if kind == "bare pid":  # the format before identities were recorded
        return f"{pid}\n"
    if kind == "other start time":  # the pid reused after the recorded process died
        record = dataclasses.replace(real, start_time=real.start_time + 1, cmdline=WATCHDOG_ARGV)
    elif kind == "other command line":
        record = dataclasses.replace(real, cmdline=WATCHDOG_ARGV)
    else:  # "other boot": the file outlived a reboot
        record = dataclasses.replace(real, boot_id="00000000-0000-0000-0000-000000000000")
    return json.dumps(record.to_json()) + "\n"


KINDS = ("bare pid", "other start time", "other command line", "other boot")


@pytest.mark.parametrize("action", ["stop", "status"])
@pytest.mark.parametrize("pid_file", [reader.PID_FILE, reader.CHILD_PID_FILE])
@pytest.mark.parametrize("kind", KINDS)
def test_a_stale_pid_file_naming_a_live_process_is_never_signalled(
    stranger: subprocess.Popen[bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    pid_file: str,
    action: str,
) -> None:
    path = tmp_path / pid_file
    path.write_text(_record(kind, stranger.pid))
    code = bench_main(["reader", action, "--dir", str(tmp_path)])
    assert _still_running(stranger), f"reader {action} signalled pid {stranger.pid}"
    out, err = capsys.readouterr()
    assert code == (0 if action == "stop" else 1)
    assert "no reader" in out and "reader stopped" not in out
    assert f"pid {stranger.pid} in {path} " in err and "; not signalled; removed the" in err
    if kind == "bare pid":
        assert "cannot be verified" in err and "end it yourself" in err
    else:
        assert "is now another" in err and "cmdline 'sleep 60'" in err
    assert len(err.splitlines()) == 1  # one line
    assert not path.exists()


@pytest.mark.parametrize(
    "content",
    ["0\n", "-1\n", "", "not a pid\n", '{"format": "grapher-process/1", "pid": -1}',
     '{"format": "grapher-process/1", "pid": true, "start_time": 1, "cmdline": []}',
     '{"format": "other", "pid": 5, "start_time": 1, "cmdline": []}', "[1]"],
)  # fmt: skip
def test_a_pid_file_that_names_no_single_process_is_refused(tmp_path: Path, content: str) -> None:
    """0 and -1 name process groups or every process to kill(2): never a record, never
    signalled (checked where it is read, without sending anything)."""
    path = tmp_path / reader.CHILD_PID_FILE
    path.write_text(content)
    verdict = processes.check_pid_file(path)
    assert verdict is not None
    assert verdict.standing is processes.Standing.UNVERIFIABLE and verdict.pid is None
    assert verdict.recorded is None
    line = processes.drop_pid_file(path, verdict)
    assert line.startswith(f"{path} ") and "not signalled" in line and not path.exists()


def test_a_damaged_pid_file_beside_a_live_process_is_reported_and_removed(
    stranger: subprocess.Popen[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / reader.PID_FILE).write_text('{"format": "grapher-process/1", "pid": ')
    (tmp_path / reader.CHILD_PID_FILE).write_text(_record("other start time", stranger.pid))
    assert bench_main(["reader", "stop", "--dir", str(tmp_path)]) == 0
    assert _still_running(stranger)
    err = capsys.readouterr().err
    assert f"{tmp_path / reader.PID_FILE} is not a pid file" in err
    assert f"pid {stranger.pid} in {tmp_path / reader.CHILD_PID_FILE} is now another" in err
    assert not list(tmp_path.iterdir())


def test_an_exited_unreaped_process_is_gone_not_signalled(tmp_path: Path) -> None:
    """A zombie (exited, its parent has not reaped it) keeps its pid but takes no signal worth
    sending: its record reads as gone."""
    process = subprocess.Popen(["sleep", "0"])
    record = processes.identity_of(process.pid)
    assert record is not None
    path = tmp_path / reader.PID_FILE
    processes.write_pid_file(path, record)
    until = time.monotonic() + 10
    while processes.identity_of(process.pid) is not None and time.monotonic() < until:
        time.sleep(0.05)  # until it has exited (and is not reaped: nobody waited for it)
    verdict = processes.check_pid_file(path)
    assert verdict is not None and verdict.standing is processes.Standing.GONE
    assert not processes.signal_if_ours(record, signal.SIGTERM)
    assert process.wait(timeout=5) == 0  # it ended by itself, not by a signal


def test_stop_ends_a_recorded_process_and_only_it(
    stranger: subprocess.Popen[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The positive path: the process a pid file describes is stopped; the unrelated one named
    by the other, stale file is not."""
    ours = subprocess.Popen(["sleep", "60"])
    try:
        record = processes.identity_of(ours.pid)
        assert record is not None
        processes.write_pid_file(tmp_path / reader.PID_FILE, record)
        (tmp_path / reader.CHILD_PID_FILE).write_text(_record("other start time", stranger.pid))
        assert bench_main(["reader", "stop", "--dir", str(tmp_path)]) == 0
        assert ours.wait(timeout=10) == -15  # SIGTERM
        assert _still_running(stranger)
        out, err = capsys.readouterr()
        assert "reader stopped" in out and f"pid {stranger.pid}" in err
        assert not list(tmp_path.iterdir())
    finally:
        ours.kill()
        ours.wait()
