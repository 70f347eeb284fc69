"""The generated sections of the docs: the one writer (each command owns the text between its
pair of markers in a doc, ``<!-- bench:start -->`` ... ``<!-- bench:end -->``, and touches
nothing else) and the one way their tables print a fraction."""

from __future__ import annotations

import math
from pathlib import Path

__all__ = ["pct", "write_section"]


def pct(value: float | None) -> str:
    """A fraction as the docs' tables print it: percent with one decimal; "–" when there is no
    number (``None``, or NaN: a metric over no queries)."""
    if value is None or math.isnan(value):
        return "–"
    return f"{100 * value:.1f}"


def write_section(path: Path, start: str, end: str, body: str) -> None:
    """Replace the text between ``start`` and ``end`` in ``path`` with ``body``.

    When the markers are missing (or the file is), the section is appended at the end, so a new
    command's first run creates its own section; markers in the wrong order are an error.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    section = f"{start}\n{body.strip()}\n{end}"
    first = _marker(text, start)
    if first >= 0 and _marker(text, end, first) >= 0:
        last = _marker(text, end, first)
        text = text[:first] + section + text[last + len(end) :]
    elif start in text and end in text:
        raise ValueError(f"{path}: {end} comes before {start}")
    else:
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + section + "\n"
    path.write_text(text, encoding="utf-8")


def _marker(text: str, marker: str, after: int = 0) -> int:
    """Where ``marker`` stands on a line of its own (from ``after``), else its first occurrence
    there, else -1: a doc that quotes its markers in prose keeps the prose intact."""
    position = text.find(marker, after)
    while position >= 0:
        line_start = position == 0 or text[position - 1] == "\n"
        stop = position + len(marker)
        if line_start and (stop == len(text) or text[stop] == "\n"):
            return position
        position = text.find(marker, stop)
    return text.find(marker, after)
