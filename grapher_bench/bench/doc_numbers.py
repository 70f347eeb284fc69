"""Hold the numbers that docs prose quotes to the tables they come from.

Prose around the generated tables drifts when a table is regenerated and the sentence that
quoted it is not. This module parses a doc's markdown tables into cells addressable by
(table, row, column) and checks declarative claims: "this number in this sentence is that
cell" (or the difference of two cells). ``tests/docs/claims.py`` lists the claims.

Addresses:

* table: the nearest heading above the table (``#`` and backticks stripped), then the bold label
  that opens the paragraph just above it when there is one (``Selection``), then the bold
  block row inside the table (``PR@10 (%)``), joined by `` / ``; a second unlabelled table under
  the same heading gets `` #2``.
* row: the first cell, or as many leading cells as make the rows unique, joined by `` | ``.
* column: the header text (a repeated one: ``p #2`` for its second use); ``part``: which number
  of the cell (``26.5 (27.5)``: 0 is 26.5).

Markdown emphasis (``**``) and backticks are stripped from every label.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

__all__ = [
    "Cell",
    "Claim",
    "Diff",
    "Failure",
    "Table",
    "check_claim",
    "check_claims",
    "parse_tables",
    "phrase_pattern",
    "prose_numbers",
    "source_value",
    "unclaimed_numbers",
]

NUMBER = re.compile(r"[-+−]?\d+(?:\.\d+)?(?:e[-+−]?\d+)?")
DECIMAL = re.compile(r"\d+\.\d+")
CHECKED = re.compile(r"\{([^{}]*)\}")
HEADING = re.compile(r"^#{1,6}\s+(.*)$")
BOLD_LABEL = re.compile(r"^\*\*(.+?)\*\*")


@dataclass(frozen=True)
class Table:
    """One markdown table: its header and its rows by row key."""

    name: str
    header: tuple[str, ...]
    rows: dict[str, tuple[str, ...]]

    def cell(self, row: str, column: str) -> str:
        """The raw text of a cell; KeyError naming what is missing."""
        if row not in self.rows:
            raise KeyError(f"table {self.name!r} has no row {row!r}")
        if column not in self.header:
            raise KeyError(f"table {self.name!r} has no column {column!r}")
        return self.rows[row][self.header.index(column)]


@dataclass(frozen=True)
class Cell:
    """A number in a table cell: ``part`` counts the numbers of the cell from 0."""

    doc: str
    table: str
    row: str
    column: str
    part: int = 0

    def describe(self) -> str:
        """Where the number lives, for a failure message."""
        return f"{self.doc}: {self.table} / {self.row} / {self.column} [{self.part}]"


@dataclass(frozen=True)
class Diff:
    """A difference the prose quotes (``+3.3 points``): ``a - b`` of two cells."""

    a: Cell
    b: Cell

    def describe(self) -> str:
        """Both cells, for a failure message."""
        return f"({self.a.describe()}) − ({self.b.describe()})"


Source = Cell | Diff


@dataclass(frozen=True)
class Claim:
    """A prose number and the table cell it must equal.

    ``phrase`` is the prose as written (line breaks may fall at any space) with the checked
    number in braces, ``{93.2}`` or ``{}``; ``#`` and every other decimal number in it match any
    number, so a drifted neighbour does not hide the claim. The phrase must occur exactly once in
    ``file``.
    """

    file: str
    phrase: str
    source: Source


@dataclass(frozen=True)
class Failure:
    """A claim that does not hold, or cannot be checked."""

    claim: Claim
    message: str

    def __str__(self) -> str:
        return f"{self.claim.file}: {self.claim.phrase!r}: {self.message}"


def _clean(text: str) -> str:
    """A label without markdown emphasis, backticks or surrounding space."""
    return text.replace("**", "").replace("`", "").strip()


def _cells(line: str) -> list[str]:
    """The cells of a table line ``| a | b |``."""
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _is_rule(line: str) -> bool:
    """Whether a table line is the ``|---|---:|`` rule under the header."""
    return bool(re.fullmatch(r"\|?(\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*", line.strip()))


def _header(cells: Sequence[str]) -> tuple[str, ...]:
    """Column names; a name the header repeats gets `` #2``, `` #3`` ... after its first."""
    names: list[str] = []
    for cell in cells:
        name = _clean(cell)
        seen = sum(1 for other in names if other == name or other.startswith(f"{name} #"))
        names.append(f"{name} #{seen + 1}" if seen else name)
    return tuple(names)


def _row_keys(rows: Sequence[Sequence[str]]) -> list[str]:
    """The shortest run of leading cells that tells every row apart, joined by `` | ``."""
    width = max((len(row) for row in rows), default=1)
    for n in range(1, width + 1):
        keys = [" | ".join(_clean(c) for c in row[:n]) for row in rows]
        if len(set(keys)) == len(keys):
            return keys
    return [" | ".join(_clean(c) for c in row) for row in rows]


def _split_blocks(name: str, header: tuple[str, ...], body: list[list[str]]) -> list[Table]:
    """One table per bold block row (``| **PR@5 (%)** | | |``), or the table as it is."""
    blocks: list[tuple[str, list[list[str]]]] = [(name, [])]
    for row in body:
        if row[0].startswith("**") and not any(c.strip() for c in row[1:]):
            blocks.append((f"{name} / {_clean(row[0])}", []))
        else:
            blocks[-1][1].append(row)
    tables = []
    for block_name, rows in blocks:
        if rows:
            keys = _row_keys(rows)
            tables.append(Table(block_name, header, dict(zip(keys, map(tuple, rows), strict=True))))
    return tables


def _label_above(lines: Sequence[str], index: int) -> str | None:
    """The bold label that opens the paragraph just above line ``index``, if any."""
    i = index - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    if i < 0 or lines[i].lstrip().startswith("|"):
        return None
    while i > 0 and lines[i - 1].strip() and not HEADING.match(lines[i - 1]):
        i -= 1
    match = BOLD_LABEL.match(lines[i].strip())
    return _clean(match.group(1)).rstrip(".:") if match else None


def parse_tables(text: str) -> dict[str, Table]:
    """Every markdown table of a doc, by table name (see the module docstring)."""
    lines = text.splitlines()
    tables: dict[str, Table] = {}
    heading, seen_under_heading = "", 0
    i = 0
    while i < len(lines):
        match = HEADING.match(lines[i])
        if match:
            heading, seen_under_heading = _clean(match.group(1)), 0
        if lines[i].lstrip().startswith("|") and i + 1 < len(lines) and _is_rule(lines[i + 1]):
            header = _header(_cells(lines[i]))
            end = i + 2
            while end < len(lines) and lines[end].lstrip().startswith("|"):
                end += 1
            label = _label_above(lines, i)
            if label:
                name = f"{heading} / {label}"
            else:
                seen_under_heading += 1
                suffix = f" #{seen_under_heading}" if seen_under_heading > 1 else ""
                name = heading + suffix
            body = [_cells(line) for line in lines[i + 2 : end]]
            for table in _split_blocks(name, header, body):
                tables[table.name] = table
            i = end
            continue
        i += 1
    return tables


def _number(text: str) -> Decimal:
    """A number as prose or a table writes it (the Unicode minus included)."""
    return Decimal(text.replace("−", "-").lstrip("+"))


def _cell_value(cell: Cell, docs: dict[str, dict[str, Table]]) -> Decimal:
    """The ``part``-th number of a cell; KeyError naming what is missing."""
    if cell.table not in docs[cell.doc]:
        raise KeyError(f"{cell.doc} has no table {cell.table!r}")
    numbers = NUMBER.findall(docs[cell.doc][cell.table].cell(cell.row, cell.column))
    if cell.part >= len(numbers):
        raise KeyError(f"{cell.describe()}: the cell has {len(numbers)} number(s)")
    return _number(numbers[cell.part])


def source_value(source: Source, docs: dict[str, dict[str, Table]]) -> Decimal:
    """What the prose must say: a cell's number, or the difference of two."""
    if isinstance(source, Diff):
        return _cell_value(source.a, docs) - _cell_value(source.b, docs)
    return _cell_value(source, docs)


ANY_NUMBER = r"[-+−]?\d+(?:\.\d+)?(?:e[-+−]?\d+)?"
PROSE_NUMBER = re.compile(r"(?<![\w.§-])[-+−]?\d+\.\d+(?![\w.]*\w)")
GENERATED = re.compile(r"<!-- (\S+):start -->.*?<!-- \1:end -->", re.S)


def _literal(text: str) -> str:
    """Prose as a regex: any whitespace between words, ``#`` and decimal numbers any number."""
    out = []
    for piece in re.split(r"(\s+|\d+\.\d+|#)", text):
        if not piece:
            continue
        if piece.isspace():
            out.append(r"\s+")
        elif piece == "#" or DECIMAL.fullmatch(piece):
            out.append(ANY_NUMBER)
        else:
            out.append(re.escape(piece))
    return "".join(out)


def phrase_pattern(phrase: str) -> re.Pattern[str]:
    """A claim's phrase as a regex: the braced number captured, every other number a wildcard."""
    checked = CHECKED.search(phrase)
    if checked is None:
        raise ValueError(f"phrase {phrase!r} has no {{number}} to check")
    before, after = phrase[: checked.start()], phrase[checked.end() :]
    return re.compile(_literal(before) + f"({ANY_NUMBER})" + _literal(after))


def prose_numbers(text: str) -> list[re.Match[str]]:
    """Every decimal number of a doc's prose: outside generated sections, tables and code
    blocks (versions, section numbers and model names such as ``Qwen2.5-Coder`` left out)."""
    hidden = [m.span() for m in GENERATED.finditer(text)]
    found, offset, in_code = [], 0, False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        table = line.lstrip().startswith("|")
        if not (in_code or table or any(a <= offset < b for a, b in hidden)):
            found += [m for m in PROSE_NUMBER.finditer(text, offset, offset + len(line))]
        offset += len(line)
    return found


def unclaimed_numbers(
    file: str, text: str, claims: Iterable[Claim], untied: Iterable[str]
) -> list[str]:
    """Prose numbers of ``text`` that no claim checks and no ``untied`` passage (a phrase in the
    claims' syntax, without braces) covers; a passage found nowhere is reported as stale."""
    covered: list[tuple[int, int]] = []
    problems = []
    for claim in claims:
        if claim.file == file:
            covered += [m.span(1) for m in phrase_pattern(claim.phrase).finditer(text)]
    for passage in untied:
        spans = [m.span() for m in re.finditer(_literal(passage), text)]
        if not spans:
            problems.append(f"{file}: untied passage not found (stale?): {passage!r}")
        covered += spans
    for number in prose_numbers(text):
        start, end = number.span()
        if not any(a < end and start < b for a, b in covered):
            line = text.count("\n", 0, start) + 1
            context = " ".join(text[max(0, start - 50) : end + 20].split())
            problems.append(f"{file}:{line}: {number.group()} is in no claim: ...{context}...")
    return problems


def check_claim(claim: Claim, text: str, docs: dict[str, dict[str, Table]]) -> Failure | None:
    """Whether one claim holds in ``text`` (its file's content); a Failure when it does not."""
    try:
        pattern = phrase_pattern(claim.phrase)
        expected = source_value(claim.source, docs)
    except (KeyError, ValueError) as error:
        return Failure(claim, f"cannot be checked: {error}")
    matches = list(pattern.finditer(text))
    if len(matches) != 1:
        return Failure(claim, f"phrase found {len(matches)} times (must be once)")
    said = matches[0].group(1)
    places = _decimals(_number(said))
    if places > _places(claim.source, docs) or _number(said) != round(expected, places):
        shown = _format(expected, claim.source, docs)
        return Failure(
            claim, f"prose says {said}, the table says {shown} ({claim.source.describe()})"
        )
    return None


def _decimals(value: Decimal) -> int:
    """How many decimal places a number is written with."""
    exponent = value.as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _places(source: Source, docs: dict[str, dict[str, Table]]) -> int:
    """Decimal places the table prints for this source (a Diff: its first cell's)."""
    cell = source.a if isinstance(source, Diff) else source
    return _decimals(_cell_value(cell, docs))


def _format(value: Decimal, source: Source, docs: dict[str, dict[str, Table]]) -> str:
    """The expected number as the prose should write it."""
    text = f"{value:.{_places(source, docs)}f}"
    return f"+{text}" if isinstance(source, Diff) and value > 0 else text


def check_claims(claims: Iterable[Claim], root: Path) -> list[Failure]:
    """Every failing claim, each file and doc read once from ``root``."""
    claims = list(claims)
    names = {c.file for c in claims}
    for claim in claims:
        source = claim.source
        cells = [source.a, source.b] if isinstance(source, Diff) else [source]
        names.update(cell.doc for cell in cells)
    texts = {name: (root / name).read_text(encoding="utf-8") for name in sorted(names)}
    docs = {name: parse_tables(text) for name, text in texts.items()}
    failures = [check_claim(claim, texts[claim.file], docs) for claim in claims]
    return [failure for failure in failures if failure is not None]
