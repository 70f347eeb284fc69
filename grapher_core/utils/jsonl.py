"""Reading JSON-lines files, once for the library and the tooling: one object per line, blank
lines skipped, errors that name the file and the line.

Every line is bounded before it is read whole: ``max_line_bytes`` (128 MiB; real records are
kilobytes, a whole book a few megabytes) is read at most, so a file of one 4 GB line costs
128 MiB and an error naming the line, not 4 GB and more for its text and its parse. Nesting
is bounded before a line is parsed: Python's JSON parser recurses once per level, so a line
nested 100 000 deep would end in a ``RecursionError`` (and deep values break later consumers
that recurse too); the depth scan works in fixed-size chunks, never on a whole-line integer
array. Lone surrogates (``"\\ud800"``, legal JSON escapes, not UTF-8) are kept exactly as
parsed; whoever encodes the text decides what to do with them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.errors import ConfigError, InputError, InputFileNotFoundError

__all__ = ["MAX_JSON_DEPTH", "MAX_LINE_BYTES", "json_depth", "read_jsonl"]

MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays and objects accepted in one line (real records nest a few levels;
the parser and the code after it recurse per level). Pass ``max_depth`` to change it."""

MAX_LINE_BYTES = 128 << 20
"""Longest line accepted, in bytes (128 MiB): a line costs its bytes, its decoded text (1x for
ASCII, up to 4x) and its parse (about 1x for text, up to ~20x for ``[[],[],...]``). The longest
benchmark record here is 8 KB; ``grapher rerank`` cuts a 60 MB text rather than refuse it.
Pass ``max_line_bytes`` to change it."""

_DEPTH_CHUNK = 1 << 20  # bytes scanned per step by json_depth

# A JSON string (quotes included), written without backtracking: brackets inside strings
# do not nest.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPEN = np.frombuffer(b"[{", dtype=np.uint8)
_CLOSE = np.frombuffer(b"]}", dtype=np.uint8)


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in one JSON text, brackets inside strings not
    counted; linear time, no recursion (C-speed regex and numpy), working memory one copy of
    the text plus fixed-size chunks."""
    codes = np.frombuffer(_STRING.sub(b'""', raw), dtype=np.uint8)
    depth = deepest = 0
    for start in range(0, codes.size, _DEPTH_CHUNK):
        part = codes[start : start + _DEPTH_CHUNK]
        steps = np.isin(part, _OPEN).astype(np.int32) - np.isin(part, _CLOSE).astype(np.int32)
        levels = np.cumsum(steps, dtype=np.int64) + depth
        deepest = max(deepest, int(levels.max()))
        depth = int(levels[-1])
    return deepest


def read_jsonl(
    path: Path,
    *,
    what: str = "file",
    max_depth: int = MAX_JSON_DEPTH,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line; ``FileNotFoundError`` (naming
    ``what``) when the file is missing, ``ValueError`` for a directory and, naming
    ``path:line``, for a line longer than ``max_line_bytes`` (refused before it is read
    whole), not UTF-8, not a JSON object or nested deeper than ``max_depth`` levels."""
    path = Path(path)
    if (
        isinstance(max_line_bytes, bool)
        or not isinstance(max_line_bytes, int)
        or max_line_bytes < 1
    ):
        raise ConfigError(f"max_line_bytes must be a positive integer, got {max_line_bytes!r}")
    if path.is_dir():
        raise InputError(f"{what} {path} is a directory, expected a JSONL file")
    if not path.is_file():
        raise InputFileNotFoundError(f"{what} {path} does not exist")
    with path.open("rb") as handle:
        number = 0
        while raw := handle.readline(max_line_bytes + 2):  # + the line end, + 1 to see past
            number += 1
            ending = 2 if raw.endswith(b"\r\n") else 1 if raw.endswith(b"\n") else 0
            if len(raw) - ending > max_line_bytes:
                raise InputError(
                    f"{path}:{number}: line longer than {max_line_bytes:,} bytes "
                    "(max_line_bytes), refused before reading it whole"
                )
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
