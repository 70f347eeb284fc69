"""The reader signals only what it started: process identities (grapher_bench/processes.py)
recorded in its pid files and checked right before every signal -- with real processes, no
stand-in for ``os.kill``. (The stale-file cases, one per kind of file, record and command:
tests/reliability/test_rel_processes.py.)"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grapher_bench import processes
from grapher_bench.cli import main as bench_main
from grapher_bench.qa_eval import reader
from grapher_core.errors import InputError, StateError

pytestmark = pytest.mark.skipif(
    not processes.has_proc() or shutil.which("sleep") is None,
    reason="needs Linux's /proc (elsewhere nothing is signalled by record) and sleep",
)


def _python(script: str) -> subprocess.Popen[str]:
    """A Python child running ``script``, returned once it printed 'ready' (its signal
    handlers are in place by then)."""
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "60"])
    deadline = time.monotonic() + 5  # /proc shows the new command line once exec is through
    while time.monotonic() < deadline:
        if Path(f"/proc/{process.pid}/cmdline").read_bytes() == b"sleep\x0060\x00":
            break
        time.sleep(0.01)
    yield process
    process.kill()
    process.wait()


def _still_running(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> bool:
    try:
        process.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        return True
    return False


def test_an_identity_is_read_from_proc_and_round_trips_through_its_pid_file(
    sleeper: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    identity = processes.identity_of(sleeper.pid)
    assert identity is not None and identity.pid == sleeper.pid
    assert identity.cmdline == ("sleep", "60") and identity.start_time is not None
    fields = Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()
    assert identity.start_time == int(fields[19])  # field 22 of stat
    assert identity.boot_id == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    path = tmp_path / "x.pid"
    processes.write_pid_file(path, identity)
    assert json.loads(path.read_text())["format"] == processes.PID_FILE_FORMAT
    verdict = processes.check_pid_file(path)
    assert verdict is not None and verdict.ours and verdict.recorded == identity
    assert processes.matches(identity)
    assert [p.name for p in tmp_path.iterdir()] == ["x.pid"]  # no temporary left behind


def test_a_damaged_record_is_refused_naming_the_file_and_the_field() -> None:
    good = processes.ProcessIdentity(123, 456, "boot", ("sleep", "60")).to_json()
    for field, value in (("pid", 0), ("pid", "123"), ("start_time", -1), ("cmdline", "sleep")):
        with pytest.raises(InputError, match=rf"f\.pid: field '{field}' is {value!r}"):
            processes.ProcessIdentity.from_json({**good, field: value}, "f.pid")
    with pytest.raises(InputError, match="pid must be an integer >= 1, got -1"):
        processes.ProcessIdentity(-1)
    assert processes.identity_of(0) is None and processes.identity_of(-1) is None


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "kill"])
def test_a_recorded_process_is_signalled_a_changed_one_is_not(
    sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch, pidfd: bool
) -> None:
    if not pidfd:  # the path for kernels without pidfds: check, then os.kill
        monkeypatch.setattr(processes, "_pidfd_open", lambda pid: None)
    recorded = processes.identity_of(sleeper.pid)
    assert recorded is not None and recorded.start_time is not None
    later = dataclasses.replace(recorded, start_time=recorded.start_time + 1)
    other = dataclasses.replace(recorded, cmdline=("sleep", "61"))
    for stale in (later, other):
        assert not processes.signal_if_ours(stale, signal.SIGTERM)
        assert not processes.terminate(stale, grace=0.1)
    assert _still_running(sleeper)
    assert processes.signal_if_ours(recorded, signal.SIGTERM)
    assert sleeper.wait(timeout=10) == -signal.SIGTERM
    assert not processes.signal_if_ours(recorded, signal.SIGTERM)  # gone: nothing sent


def test_sigkill_after_the_grace_period_only_if_it_is_still_ours(tmp_path: Path) -> None:
    stubborn = _python(
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\ntime.sleep(60)\n"
    )
    record = processes.identity_of(stubborn.pid)
    assert record is not None
    processes.write_pid_file(tmp_path / reader.PID_FILE, record)
    assert reader.stop_server(tmp_path, grace=0.5) is True
    assert stubborn.wait(timeout=10) == -signal.SIGKILL
    # the same process turned into another program during the grace period: the SIGKILL's
    # check sees it and sends nothing
    sleep = shutil.which("sleep")
    changeling = _python(
        "import os, signal, time\n"
        f"signal.signal(signal.SIGTERM, lambda *a: os.execv({sleep!r}, ['sleep', '60']))\n"
        "print('ready', flush=True)\ntime.sleep(60)\n"
    )
    try:
        record = processes.identity_of(changeling.pid)
        assert record is not None
        assert processes.terminate(record, grace=5)  # the SIGTERM went
        assert _still_running(changeling)  # the SIGKILL did not
        now = processes.identity_of(changeling.pid)
        assert now is not None and now.cmdline == ("sleep", "60")
        assert now.start_time == record.start_time
    finally:
        changeling.kill()
        changeling.wait()


def test_without_proc_nothing_is_signalled_by_record_only_held_children(
    sleeper: subprocess.Popen[bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    record = processes.identity_of(sleeper.pid)
    assert record is not None
    processes.write_pid_file(tmp_path / reader.PID_FILE, record)
    monkeypatch.setattr(processes, "PROC", tmp_path / "no-proc")  # as on macOS
    assert not processes.has_proc()
    assert processes.identity_of(sleeper.pid) == processes.ProcessIdentity(sleeper.pid)
    assert not processes.signal_if_ours(record, signal.SIGTERM)
    assert bench_main(["reader", "stop", "--dir", str(tmp_path)]) == 0
    assert _still_running(sleeper)
    err = capsys.readouterr().err
    assert f"pid {sleeper.pid} in {tmp_path / reader.PID_FILE} cannot be verified" in err
    assert "only a child held by its parent is signalled here" in err
    assert processes.end_child(sleeper, grace=5) == -signal.SIGTERM  # held: ended


def test_the_watchdog_records_its_server_as_it_runs(tmp_path: Path) -> None:
    child_file = tmp_path / reader.CHILD_PID_FILE
    watchdog = subprocess.Popen(
        [sys.executable, "-m", "grapher_bench.qa_eval.reader", "--seconds", "60",
         "--child-pid-file", str(child_file), "--", "sleep", "60"],
    )  # fmt: skip
    try:
        until = time.monotonic() + 20
        while not child_file.exists() and time.monotonic() < until:
            time.sleep(0.05)
        verdict = processes.check_pid_file(child_file)
        assert verdict is not None and verdict.ours and verdict.recorded is not None
        assert verdict.recorded.cmdline == ("sleep", "60")
        assert verdict.recorded.start_time is not None and verdict.recorded.boot_id
        record = processes.identity_of(watchdog.pid)
        assert record is not None
        processes.write_pid_file(tmp_path / reader.PID_FILE, record)
        assert reader.stop_server(tmp_path, grace=10) is True
        assert watchdog.wait(timeout=20) != 0
        assert processes.check(verdict.recorded).standing is processes.Standing.GONE
        assert not list(tmp_path.iterdir())
    finally:
        if watchdog.poll() is None:
            watchdog.kill()
            watchdog.wait()


@contextlib.contextmanager
def _port_taken() -> Iterator[int]:
    """A port on 127.0.0.1 that something listens on."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield int(busy.getsockname()[1])


def test_start_clears_a_stale_file_and_refuses_a_live_reader(
    sleeper: subprocess.Popen[bytes], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A stale record does not block ``start`` (it is removed and said); a live recorded one
    does -- without either being signalled."""
    recorded = processes.identity_of(sleeper.pid)
    assert recorded is not None and recorded.start_time is not None
    processes.write_pid_file(tmp_path / reader.PID_FILE, recorded)
    with pytest.raises(StateError, match=rf"a reader already runs \(pid {sleeper.pid}"):
        reader.start_server(["true"], tmp_path, port=1, max_minutes=1)
    stale = dataclasses.replace(recorded, start_time=recorded.start_time + 1)
    processes.write_pid_file(tmp_path / reader.PID_FILE, stale)
    with _port_taken() as port, pytest.raises(StateError, match=f"port {port}"):
        reader.start_server(["true"], tmp_path, port=port, max_minutes=1)
    assert f"pid {sleeper.pid} in {tmp_path / reader.PID_FILE} is now another" in caplog.text
    assert not (tmp_path / reader.PID_FILE).exists()
    assert _still_running(sleeper)


def test_the_reader_module_sends_signals_only_through_processes() -> None:
    """Every signal of the reader goes through the identity check: no direct os.kill left."""
    source = Path(reader.__file__).read_text()
    assert "os.kill(" not in source and "killpg(" not in source
