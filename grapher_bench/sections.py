"""The one markdown section writer of the tooling: each command owns the text between its pair of
markers in a doc (``<!-- bench:start -->`` ... ``<!-- bench:end -->``) and touches nothing else."""

from __future__ import annotations

from pathlib import Path

__all__ = ["write_section"]


def write_section(path: Path, start: str, end: str, body: str) -> None:
    """Replace the text between ``start`` and ``end`` in ``path`` with ``body``.

    When the markers are missing (or the file is), the section is appended at the end, so a new
    command's first run creates its own section; markers in the wrong order are an error.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    section = f"{start}\n{body.strip()}\n{end}"
    if start in text and end in text:
        if text.index(start) > text.index(end):
            raise ValueError(f"{path}: {end} comes before {start}")
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        text = before + section + after
    else:
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + section + "\n"
    path.write_text(text, encoding="utf-8")
