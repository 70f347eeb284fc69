"""Reading JSON-lines files, once for the library and the tooling: one object per line, blank
lines skipped, errors that name the file and the line.

Nesting is bounded before a line is parsed: Python's JSON parser recurses once per level, so a
line nested 100 000 deep would end in a ``RecursionError`` (and deep values break later
consumers that recurse too). Lone surrogates (``"\\ud800"``, legal JSON escapes, not UTF-8)
are kept exactly as parsed; whoever encodes the text decides what to do with them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.errors import InputError, InputFileNotFoundError

__all__ = ["MAX_JSON_DEPTH", "json_depth", "read_jsonl"]

MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays and objects accepted in one line (real records nest a few levels;
the parser and the code after it recurse per level). Pass ``max_depth`` to change it."""

# A JSON string (quotes included), written without backtracking: brackets inside strings
# do not nest.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPEN = np.frombuffer(b"[{", dtype=np.uint8)
_CLOSE = np.frombuffer(b"]}", dtype=np.uint8)


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in one JSON text, brackets inside strings not
    counted; linear time, no recursion (C-speed regex and numpy)."""
    codes = np.frombuffer(_STRING.sub(b'""', raw), dtype=np.uint8)
    steps = np.isin(codes, _OPEN).astype(np.int64) - np.isin(codes, _CLOSE).astype(np.int64)
    return int(np.cumsum(steps).max(initial=0))


def read_jsonl(
    path: Path, *, what: str = "file", max_depth: int = MAX_JSON_DEPTH
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line; ``FileNotFoundError`` (naming
    ``what``) when the file is missing, ``ValueError`` for a directory and, naming
    ``path:line``, for a line that is not UTF-8, not a JSON object or nested deeper than
    ``max_depth`` levels."""
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
            # cheap bound first: fewer brackets than the limit cannot nest deeper than it
            if raw.count(b"[") + raw.count(b"{") > max_depth:
                depth = json_depth(raw)
                if depth > max_depth:
                    raise InputError(
                        f"{path}:{number}: nested {depth} levels deep, more than the "
                        f"{max_depth} accepted"
                    )
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(f"{path}:{number}: not valid JSON ({error.msg})") from None
            except RecursionError:  # a backstop: the scan above should have refused it
                raise InputError(f"{path}:{number}: nested too deep to parse") from None
            if not isinstance(record, dict):
                raise InputError(f"{path}:{number}: expected a JSON object per line")
            yield number, record
