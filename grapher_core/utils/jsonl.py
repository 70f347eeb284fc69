"""Reading JSON-lines files, once for the library and the tooling: one object per line, blank
lines skipped, errors that name the file and the line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grapher_core.errors import InputError, InputFileNotFoundError

__all__ = ["read_jsonl"]


def read_jsonl(path: Path, *, what: str = "file") -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line; ``FileNotFoundError`` (naming
    ``what``) when the file is missing, ``ValueError`` for a directory and, naming
    ``path:line``, for a line that is not UTF-8 or not a JSON object."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{what} {path} is a directory, expected a JSONL file")
    if not path.is_file():
        raise InputFileNotFoundError(f"{what} {path} does not exist")
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InputError(
                    f"{path}:{number}: not UTF-8 ({error.reason} at byte {error.start} of the line)"
                ) from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(f"{path}:{number}: not valid JSON ({error.msg})") from None
            if not isinstance(record, dict):
                raise InputError(f"{path}:{number}: expected a JSON object per line")
            yield number, record
