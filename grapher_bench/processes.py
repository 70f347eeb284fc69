"""Signal only the processes we started: a pid, plus what makes its process unique.

A pid names a process only while that process lives. After a crash or a reboot a pid file
outlives its process and the number is handed to another program; a ``kill`` by that file ends
a stranger (one of the same user: nothing else stops it). So every process the tooling manages
is recorded as a :class:`ProcessIdentity` -- pid, start time (Linux: field 22 of
``/proc/<pid>/stat``, clock ticks since boot), boot id and command line -- and
:func:`signal_if_ours` compares the record with the live process immediately before each
signal, through a pidfd where the kernel has one, so that the process checked is the process
signalled. A process that does not match is never signalled; neither is one whose record is a
bare pid (the older plain-pid files), since it cannot be checked.

Without ``/proc`` (macOS, Windows) no record can be checked: nothing is signalled by record, and
only a child this process holds -- a :class:`subprocess.Popen` not yet reaped, whose pid cannot
be reused -- is ended, by :func:`end_child`.

Standard library only (and GraphER's errors), so any part of the library or its tooling can
use it.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from grapher_core.errors import GraphERError, InputError
from grapher_core.utils.small_files import read_small_file

__all__ = [
    "PID_FILE_FORMAT",
    "ProcessIdentity",
    "Standing",
    "Verdict",
    "check",
    "check_pid_file",
    "drop_pid_file",
    "end_child",
    "has_proc",
    "identity_of",
    "matches",
    "signal_if_ours",
    "terminate",
    "write_pid_file",
]

PROC = Path("/proc")
"""Where process identities are read from (a module attribute so a test can take it away)."""
PID_FILE_FORMAT = "grapher-process/1"
MAX_PID_FILE_BYTES = 64 << 10
"""A pid file holds one identity (a command line of a few hundred bytes); larger is not ours."""
_LEGACY = re.compile(r"[+-]?\d+")


def has_proc() -> bool:
    """Whether identities can be read here (Linux's ``/proc``); without it nothing is
    signalled by record."""
    return (PROC / "self" / "stat").is_file()


def _valid_pid(pid: object) -> TypeGuard[int]:
    """An integer >= 1: to kill(2), 0 and negative numbers name process groups or every
    process of the user, never one process."""
    return isinstance(pid, int) and not isinstance(pid, bool) and pid >= 1


@dataclass(frozen=True)
class ProcessIdentity:
    """One process as it was when recorded: the pid, the start time in clock ticks since boot
    (``None`` where it cannot be read), the boot id and the command line."""

    pid: int
    start_time: int | None = None
    boot_id: str | None = None
    cmdline: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _valid_pid(self.pid):
            raise InputError(f"ProcessIdentity: pid must be an integer >= 1, got {self.pid!r}")

    def command(self, limit: int = 80) -> str:
        """The command line, quoted as a shell would take it and cut to ``limit`` characters."""
        text = shlex.join(self.cmdline) if self.cmdline else "(command line unknown)"
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def to_json(self) -> dict[str, Any]:
        """The pid file's content (its format named, so an older reader refuses it)."""
        return {
            "format": PID_FILE_FORMAT,
            "pid": self.pid,
            "start_time": self.start_time,
            "boot_id": self.boot_id,
            "cmdline": list(self.cmdline),
        }

    @classmethod
    def from_json(cls, data: object, source: str) -> ProcessIdentity:
        """Read :meth:`to_json`'s form back; ``source`` (the file) is named in any error."""
        if not isinstance(data, dict):
            raise InputError(f"{source}: expected a JSON object, got {type(data).__name__}")
        if data.get("format") != PID_FILE_FORMAT:
            raise InputError(
                f"{source}: field 'format' is {data.get('format')!r}, expected {PID_FILE_FORMAT!r}"
            )
        pid, start, boot, cmdline = (
            data.get(k) for k in ("pid", "start_time", "boot_id", "cmdline")
        )
        if not _valid_pid(pid):
            raise InputError(f"{source}: field 'pid' is {pid!r}, expected an integer >= 1")
        if start is not None and not (_valid_pid(start) or start == 0):
            raise InputError(f"{source}: field 'start_time' is {start!r}, expected ticks >= 0")
        if boot is not None and not isinstance(boot, str):
            raise InputError(f"{source}: field 'boot_id' is {boot!r}, expected a string")
        if not isinstance(cmdline, list) or not all(isinstance(a, str) for a in cmdline):
            raise InputError(
                f"{source}: field 'cmdline' is {cmdline!r}, expected a list of strings"
            )
        return cls(pid, start if isinstance(start, int) else None, boot, tuple(cmdline))


def _boot_id() -> str | None:
    with contextlib.suppress(OSError):
        return (PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip() or None
    return None


def _exists(pid: int) -> bool:
    """Whether ``pid`` names a process, by signal 0 (which sends nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def identity_of(pid: int) -> ProcessIdentity | None:
    """The identity of the process at ``pid`` now, or ``None`` when there is none -- no such
    process, or one that has exited and waits to be reaped (a zombie: nothing left to stop).

    Where ``/proc`` is missing or unreadable only the pid is known (no start time): such an
    identity never matches a record, so nothing is signalled on it."""
    if not _valid_pid(pid):
        return None
    if not has_proc():
        if os.name == "nt":  # os.kill(pid, 0) would terminate the process there
            return ProcessIdentity(pid)
        return ProcessIdentity(pid) if _exists(pid) else None
    folder = PROC / str(pid)
    try:
        stat = (folder / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:  # hidden from us (hidepid): it may exist, but who it is cannot be said
        return ProcessIdentity(pid) if _exists(pid) else None
    fields = stat.rsplit(")", 1)[-1].split()  # the name, in parentheses, may hold spaces
    if fields and fields[0] in ("Z", "X", "x"):
        return None
    try:
        start_time: int | None = int(fields[19])  # field 22; the fields after ")" start at 3
    except (IndexError, ValueError):
        start_time = None
    cmdline: tuple[str, ...] = ()
    with contextlib.suppress(OSError):
        raw = (folder / "cmdline").read_bytes()
        cmdline = tuple(a.decode("utf-8", "backslashreplace") for a in raw.split(b"\0")[:-1])
    return ProcessIdentity(pid, start_time, _boot_id(), cmdline)


class Standing(enum.Enum):
    """What a record's pid names now."""

    OURS = "ours"  # the recorded process, still running
    GONE = "gone"  # no process (or a zombie) there: the record is stale
    FOREIGN = "foreign"  # another process has the pid
    UNVERIFIABLE = "unverifiable"  # the record or this system cannot tell


@dataclass(frozen=True)
class Verdict:
    """A record checked against the live process: where it stands, and why, in words."""

    standing: Standing
    pid: int | None
    why: str
    recorded: ProcessIdentity | None = None
    current: ProcessIdentity | None = None

    @property
    def ours(self) -> bool:
        return self.standing is Standing.OURS


def check(recorded: ProcessIdentity) -> Verdict:
    """Compare ``recorded`` with the process now at its pid."""
    pid = recorded.pid
    current = identity_of(pid)
    if current is None:
        return Verdict(Standing.GONE, pid, "is no longer running", recorded)
    if recorded.start_time is None:
        why = (
            "was recorded without a start time (where there is no /proc), so it cannot be verified"
        )
        return Verdict(Standing.UNVERIFIABLE, pid, why, recorded, current)
    if current.start_time is None:
        why = (
            "cannot be verified on this system (no readable /proc); only a child held by its "
            "parent is signalled here"
        )
        return Verdict(Standing.UNVERIFIABLE, pid, why, recorded, current)
    now = f"cmdline {current.command()!r}, started at tick {current.start_time}"
    then = f"the file records {recorded.command()!r}, started at tick {recorded.start_time}"
    if recorded.boot_id and current.boot_id and recorded.boot_id != current.boot_id:
        why = f"is now another process ({now}; the file was written before the last reboot)"
        return Verdict(Standing.FOREIGN, pid, why, recorded, current)
    if current.start_time != recorded.start_time:
        why = f"is now another process ({now}; {then})"
        return Verdict(Standing.FOREIGN, pid, why, recorded, current)
    if current.cmdline != recorded.cmdline:  # the same process, turned into another program
        why = f"is now another program ({now}; {then})"
        return Verdict(Standing.FOREIGN, pid, why, recorded, current)
    return Verdict(Standing.OURS, pid, "is the recorded process", recorded, current)


def matches(recorded: ProcessIdentity) -> bool:
    """Whether the process at ``recorded.pid`` is still the one recorded."""
    return check(recorded).ours


def _pidfd_open(pid: int) -> int | None:
    """A handle on the process now at ``pid`` (Linux >= 5.3), so that the process checked is
    the one signalled even if the pid changes hands in between; ``None`` where there is none."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None or not hasattr(signal, "pidfd_send_signal") or not has_proc():
        return None
    try:
        return int(opener(pid))
    except OSError:  # no such process (the check says so) or no pidfds in this kernel
        return None


def signal_if_ours(recorded: ProcessIdentity, sig: int) -> bool:
    """Send ``sig`` to ``recorded.pid`` only if the process there is the recorded one, checked
    right before sending; True when it was sent."""
    pidfd = _pidfd_open(recorded.pid)
    try:
        if not matches(recorded):
            return False
        try:
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, sig)
            else:
                os.kill(recorded.pid, sig)
        except ProcessLookupError:
            return False
        return True
    finally:
        if pidfd is not None:
            os.close(pidfd)


def terminate(recorded: ProcessIdentity, grace: float = 15.0, poll: float = 0.1) -> bool:
    """SIGTERM, then SIGKILL if it still runs after ``grace`` seconds, each sent only if the
    process is still the recorded one (checked again before the SIGKILL: the pid may have
    changed hands while we waited). True when the SIGTERM was sent."""
    if not signal_if_ours(recorded, signal.SIGTERM):
        return False
    until = time.monotonic() + grace
    while time.monotonic() < until and matches(recorded):
        time.sleep(poll)
    signal_if_ours(recorded, getattr(signal, "SIGKILL", signal.SIGTERM))
    return True


def end_child(process: subprocess.Popen[Any], grace: float = 15.0) -> int:
    """End a child this process holds and return its exit code: until it is reaped its pid
    cannot go to another process, so no identity check is needed (and none is possible
    without /proc)."""
    if process.poll() is None:
        process.terminate()
        try:
            return process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait()


# ------------------------------------------------------------------------------ pid files


def write_pid_file(path: Path, identity: ProcessIdentity) -> None:
    """Write ``identity`` to ``path`` atomically: a reader never sees half a record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(json.dumps(identity.to_json()) + "\n")
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def check_pid_file(path: Path) -> Verdict | None:
    """Check the record in the pid file ``path`` (``None`` when there is no file). A bare pid
    (the older format) or a damaged file is unverifiable: never signalled."""
    try:  # a regular file only, never through a link: /dev/zero or a FIFO is refused unread
        raw = read_small_file(path, limit=MAX_PID_FILE_BYTES, what="pid file", follow=False)
    except FileNotFoundError:
        return None
    except GraphERError as error:
        return Verdict(Standing.UNVERIFIABLE, None, _after_path(error, path))
    text = raw.decode("utf-8", errors="replace").strip()
    if _LEGACY.fullmatch(text):
        pid = int(text)
        if not _valid_pid(pid):
            return Verdict(Standing.UNVERIFIABLE, None, f"holds {pid}, which is no single pid")
        why = (
            "has no recorded identity (a bare pid, the format of older versions: no start "
            "time or command line to check), so it cannot be verified"
        )
        return Verdict(Standing.UNVERIFIABLE, pid, why, None, identity_of(pid))
    try:
        recorded = ProcessIdentity.from_json(json.loads(text), str(path))
    except (ValueError, InputError) as error:
        return Verdict(Standing.UNVERIFIABLE, None, f"is not a pid file ({error})")
    return check(recorded)


def _after_path(error: Exception, path: Path) -> str:
    """The reader's message without the path (the line that reports it names the file)."""
    message = str(error)
    for prefix in (f"pid file {path} ", f"pid file {path}: ", f"{path}: "):
        message = message.removeprefix(prefix)
    return message


def drop_pid_file(path: Path, verdict: Verdict) -> str:
    """Remove the pid file of a process that is not ours to signal; one line saying so."""
    path.unlink(missing_ok=True)
    who = f"pid {verdict.pid} in {path}" if verdict.pid is not None else str(path)
    if verdict.standing is Standing.GONE:
        return f"{who} {verdict.why}; removed the stale file"
    if verdict.standing is Standing.FOREIGN:
        return f"{who} {verdict.why}; not signalled; removed the stale file"
    if verdict.standing is Standing.UNVERIFIABLE:
        alive = verdict.pid is not None and verdict.current is not None
        hint = " (it runs: end it yourself if it is yours)" if alive else ""
        return f"{who} {verdict.why}; not signalled; removed the file{hint}"
    return f"{who} {verdict.why}; removed the file"
