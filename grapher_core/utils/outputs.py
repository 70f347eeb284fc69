"""Check a place a command will write to, before it reads its inputs or loads a model.

A command that learns at its end that its output cannot be written has wasted the whole run
(``grapher train`` fine-tunes every fold, then fails). So the output is tried first, for real:
its missing folders are created and a temporary file is made there and removed, which is the
only test that sees what permissions, read-only mounts, full quotas and files in the way say
(``os.access`` is wrong for root and on network mounts). Folders the check created are removed
again, so a run refused later leaves nothing behind; the writer creates them when it writes.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from grapher_core.errors import InputError

__all__ = ["check_output"]

_PROBE_PREFIX = ".grapher-write-check-"


def check_output(path: str | Path | None, option: str, *, folder: bool = False) -> None:
    """Refuse, naming ``option``, the path and the system's reason, a ``path`` that cannot be
    written: a file (``folder=False``) or a folder (``folder=True``). ``None``: nothing to
    check (the option was not given)."""
    if path is None:
        return
    path = Path(path)
    _refuse_wrong_kind(path, option, folder)
    where = path if folder else path.parent
    created = _make_folders(where, path, option)
    try:
        _probe(where, path, option)
        if not folder and path.exists():
            _probe_file(path, option)
    finally:
        for made in reversed(created):
            with contextlib.suppress(OSError):
                made.rmdir()


def _refuse_wrong_kind(path: Path, option: str, folder: bool) -> None:
    """A folder where a file goes, a file where a folder goes, a device or a FIFO."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # missing (or unreachable: the folder check says why)
    if folder and not stat.S_ISDIR(mode):
        raise InputError(f"{option} {path} is a file, not a folder; give a folder")
    if not folder and stat.S_ISDIR(mode):
        raise InputError(f"{option} {path} is a directory, expected a file path")
    if not folder and not stat.S_ISREG(mode):
        raise InputError(
            f"{option} {path} is not a regular file (a device, a FIFO or a socket); give the "
            "path of a file to write"
        )


def _make_folders(where: Path, path: Path, option: str) -> list[Path]:
    """Create ``where`` and its missing parents; the ones created, outermost first."""
    missing: list[Path] = []
    current = where
    created: list[Path] = []
    try:
        while not os.path.exists(current) and current != current.parent:
            if current.is_symlink():  # a dangling link: mkdir would fail with a puzzling EEXIST
                raise InputError(f"{option} {path} cannot be created: {current} is a broken link")
            missing.append(current)
            current = current.parent
        if os.path.exists(current) and not current.is_dir():
            raise InputError(
                f"{option} {path} cannot be created: {current} is a file, not a folder"
            )
        for folder in reversed(missing):
            folder.mkdir()
            created.append(folder)
    except OSError as error:
        for made in reversed(created):
            with contextlib.suppress(OSError):
                made.rmdir()
        raise InputError(
            f"{option} {path} cannot be created: {error.filename or where}: "
            f"{error.strerror or error}; give a path you can write to"
        ) from None
    return created


def _probe(where: Path, path: Path, option: str) -> None:
    """Make and remove a temporary file in ``where``."""
    try:
        descriptor, name = tempfile.mkstemp(prefix=_PROBE_PREFIX, dir=where)
    except OSError as error:
        raise InputError(
            f"{option} {path} cannot be written: {where}: {error.strerror or error}; give a "
            "path you can write to"
        ) from None
    os.close(descriptor)
    with contextlib.suppress(OSError):
        os.unlink(name)


def _probe_file(path: Path, option: str) -> None:
    """An existing file is opened for writing without truncating it (nothing is written)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise InputError(
            f"{option} {path} cannot be written: {error.strerror or error}; give a path you "
            "can write to"
        ) from None
    os.close(descriptor)
