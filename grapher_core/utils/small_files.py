"""The one reader of small files GraphER is handed by name: configs, pid files, state files.

A name can point at anything: ``/dev/zero`` (endless), a FIFO (blocks until someone writes), a
folder, a file of gigabytes. Only a regular file is read, its size bounded before and while it
is read (at most ``limit + 1`` bytes), and it is opened non-blocking so a FIFO answers at once.

Symbolic links: a config reached through a link to a regular file is an ordinary setup (a
dotfiles folder, a shared model folder), so ``follow=True`` reads it and checks the final
target; the file we open is the file we checked (``fstat`` of the open descriptor). A pid file
is GraphER's own: ``follow=False`` refuses any link there (``O_NOFOLLOW``).

JSON files are decoded as UTF-8 and a key given twice in one object is refused, naming the key:
``json.loads`` would keep the last one silently, so ``"ranker": "baseline"`` followed by
``"ranker": "gcs"`` would run GCS while the reader of the file sees the baseline.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grapher_core.errors import GraphERError, InputError, InputFileNotFoundError

__all__ = ["read_json_file", "read_small_file"]

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)

ErrorType = Callable[[str], GraphERError]


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _status(path: Path, follow: bool, what: str, error: ErrorType) -> os.stat_result:
    """The file's status before opening it: a device or a FIFO is refused without being
    opened (opening some devices does something)."""
    try:
        status = path.stat() if follow else path.lstat()
    except FileNotFoundError:
        raise InputFileNotFoundError(f"{what} {path} does not exist") from None
    except OSError as reason:
        raise error(f"{what} {path}: cannot be read ({reason.strerror or reason})") from None
    _refuse_special(path, status, what, error, follow)
    return status


def _refuse_special(
    path: Path, status: os.stat_result, what: str, error: ErrorType, follow: bool
) -> None:
    if stat.S_ISREG(status.st_mode):
        return
    if stat.S_ISLNK(status.st_mode):  # only seen with follow=False
        raise error(
            f"{what} {path} is not a regular file: it is a symbolic link, which is not "
            "followed here; give the file itself"
        )
    through = "a symbolic link to " if follow and path.is_symlink() else ""
    raise error(
        f"{what} {path} is not a regular file: it is {through}{_kind(status.st_mode)}; give "
        "the path of a regular file"
    )


def read_small_file(
    path: str | Path,
    *,
    limit: int,
    what: str = "file",
    follow: bool = True,
    error: ErrorType = InputError,
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Raises :class:`InputFileNotFoundError` when it is missing and ``error`` (a
    :class:`GraphERError` class) naming ``what`` and the path when it is not a regular file
    (a directory, a FIFO, a device, a socket; with ``follow=False`` a symbolic link too), is
    larger than ``limit`` bytes or cannot be read."""
    path = Path(path)
    before = _status(path, follow, what, error)
    _refuse_size(path, before.st_size, limit, what, error)
    flags = _OPEN_FLAGS | (0 if follow else _NO_FOLLOW)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise InputFileNotFoundError(f"{what} {path} does not exist") from None
    except OSError as reason:  # ELOOP: it became a link in between (follow=False)
        raise error(f"{what} {path}: cannot be read ({reason.strerror or reason})") from None
    try:
        opened = os.fstat(descriptor)  # the file we read is the file we checked
        _refuse_special(path, opened, what, error, follow)
        _refuse_size(path, opened.st_size, limit, what, error)
        return _read_bounded(descriptor, path, limit, what, error)
    finally:
        os.close(descriptor)


def _refuse_size(path: Path, size: int, limit: int, what: str, error: ErrorType) -> None:
    if size > limit:
        raise error(
            f"{what} {path}: {size:,} bytes, more than a {what} may hold ({limit:,}); is this "
            "the right file?"
        )


def _read_bounded(descriptor: int, path: Path, limit: int, what: str, error: ErrorType) -> bytes:
    """At most ``limit + 1`` bytes, so a file that grew past its bound is caught, not read."""
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        try:
            chunk = os.read(descriptor, min(1 << 16, limit + 1 - total))
        except OSError as reason:
            raise error(f"{what} {path}: cannot be read ({reason.strerror or reason})") from None
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise error(f"{what} {path}: grew past {limit:,} bytes while it was read; not read")
    return b"".join(chunks)


def read_json_file(
    path: str | Path,
    *,
    limit: int,
    what: str = "JSON file",
    follow: bool = True,
    error: ErrorType = InputError,
) -> Any:
    """The JSON value of the regular file ``path`` (read by :func:`read_small_file`), decoded
    as UTF-8; a key that appears twice in one object is refused naming it."""
    path = Path(path)
    raw = read_small_file(path, limit=limit, what=what, follow=follow, error=error)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: not UTF-8 text, expected a {what} (JSON)") from None

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise error(
                    f"{path}: key {key!r} appears twice in one object; keep one (a JSON "
                    "reader would silently use the last)"
                )
            out[key] = value
        return out

    try:
        return json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as reason:
        raise error(f"{path}: not valid JSON ({reason.msg}, line {reason.lineno})") from None
    except RecursionError:
        raise error(f"{path}: nested too deep to be a {what}") from None
