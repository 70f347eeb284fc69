"""Prose numbers that name a benchmark row equal the tables they come from (README.md and
docs/benchmarks.md; claims in doc_claims.py), and the checker does catch a drifted number."""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_claims import BENCH, CLAIMS, UNTIED_BENCH, passages

from grapher_bench.bench.doc_numbers import (
    Cell,
    Claim,
    Diff,
    check_claim,
    check_claims,
    parse_tables,
    phrase_pattern,
    unclaimed_numbers,
)

ROOT = Path(__file__).resolve().parents[2]

DOC = """# Study

## Results

**Main.** Cells: PR@10.

| retriever + ranker | spider_dev | bird_dev |
|---|---|---|
| **PR@5 (%)** | | |
| hybrid + baseline | 58.2 (77.9) | 61.7 (69.9) |
| hybrid + gcs | 84.5 (88.2) | **81.8 (85.4)** |
| **PR@10 (%)** | | |
| hybrid + baseline | 75.2 (88.1) | 78.3 (82.9) |
| hybrid + gcs | 93.2 (95.4) | 95.0 (95.8) |

| dataset | ranker | Δ |
|---|---|---|
| spider_dev | gcs | +18.1 |
| bird_dev | gcs | +16.7 |
"""
MAIN = "Results / Main"


def _cell(block: str, row: str, column: str, part: int = 0) -> Cell:
    return Cell("doc.md", f"{MAIN} / {block}", row, column, part)


def _check(tmp_path: Path, prose: str, claim: Claim) -> list[str]:
    (tmp_path / "doc.md").write_text(DOC, encoding="utf-8")
    (tmp_path / "prose.md").write_text(prose, encoding="utf-8")
    return [str(failure) for failure in check_claims([claim], tmp_path)]


def test_every_prose_number_equals_its_table_cell() -> None:
    failures = check_claims(CLAIMS, ROOT)
    assert not failures, "\n".join(str(failure) for failure in failures)


def test_the_claims_cover_both_files() -> None:
    files = {claim.file for claim in CLAIMS}
    assert files == {"README.md", BENCH}
    assert len(CLAIMS) > 200


def test_tables_are_addressed_by_heading_label_block_row_and_column() -> None:
    tables = parse_tables(DOC)
    assert set(tables) == {f"{MAIN} / PR@5 (%)", f"{MAIN} / PR@10 (%)", "Results"}
    assert tables[f"{MAIN} / PR@5 (%)"].cell("hybrid + gcs", "bird_dev") == "**81.8 (85.4)**"
    assert tables["Results"].cell("bird_dev", "Δ") == "+16.7"
    with pytest.raises(KeyError, match="no row"):
        tables["Results"].cell("beaver_dev", "Δ")


def test_rows_sharing_a_first_cell_are_told_apart_by_the_next_cells() -> None:
    text = "| set | retriever | PR |\n|---|---|---|\n| a | bm25 | 1.0 |\n| a | dense | 2.0 |\n"
    assert set(parse_tables(text)[""].rows) == {"a | bm25", "a | dense"}


def test_a_repeated_column_name_is_numbered_from_its_second_use() -> None:
    text = "| pair | Δ | p | Δ | p |\n|---|---|---|---|---|\n| a → b | +1.0 | 0.5 | −2.0 | 0.02 |\n"
    table = parse_tables(text)[""]
    assert table.header == ("pair", "Δ", "p", "Δ #2", "p #2")
    assert table.cell("a → b", "p #2") == "0.02"


def test_a_wrong_number_is_reported_with_file_phrase_and_both_numbers(tmp_path: Path) -> None:
    claim = Claim(
        "prose.md", "on spider_dev (75.2 → {})", _cell("PR@10 (%)", "hybrid + gcs", "spider_dev")
    )
    failures = _check(tmp_path, "GCS lifts PR@10 on spider_dev (75.2 → 89.3) here.", claim)
    assert len(failures) == 1
    assert "prose.md" in failures[0]
    assert "on spider_dev (75.2 → {})" in failures[0]
    assert "prose says 89.3, the table says 93.2" in failures[0]


def test_the_right_number_passes_and_a_neighbour_does_not_hide_it(tmp_path: Path) -> None:
    cell = _cell("PR@10 (%)", "hybrid + gcs", "spider_dev")
    claim = Claim("prose.md", "on spider_dev (75.2 → {})", cell)
    # the other number of the phrase drifted: that is its own claim's business, not this one's
    assert _check(tmp_path, "on spider_dev\n  (70.0 → 93.2) here", claim) == []


def test_an_other_part_of_a_cell_and_bold_cells(tmp_path: Path) -> None:
    claim = Claim("prose.md", "all questions: {}", _cell("PR@5 (%)", "hybrid + gcs", "bird_dev", 1))
    assert _check(tmp_path, "all questions: 85.4.", claim) == []
    assert len(_check(tmp_path, "all questions: 81.8.", claim)) == 1


def test_a_difference_of_two_cells_keeps_its_sign(tmp_path: Path) -> None:
    gain = Diff(
        _cell("PR@5 (%)", "hybrid + gcs", "spider_dev"),
        _cell("PR@5 (%)", "hybrid + baseline", "spider_dev"),
    )
    claim = Claim("prose.md", "PR@5 {} points", gain)
    assert _check(tmp_path, "PR@5 +26.3 points", claim) == []
    failures = _check(tmp_path, "PR@5 −26.3 points", claim)
    assert len(failures) == 1 and "the table says +26.3" in failures[0]


def test_a_rounded_number_passes_a_more_precise_one_does_not(tmp_path: Path) -> None:
    claim = Claim("prose.md", "bird_dev by {} points", Cell("doc.md", "Results", "bird_dev", "Δ"))
    assert _check(tmp_path, "bird_dev by +17 points", claim) == []
    assert len(_check(tmp_path, "bird_dev by +16.70 points", claim)) == 1


def test_a_missing_or_repeated_phrase_or_cell_is_a_failure(tmp_path: Path) -> None:
    cell = _cell("PR@10 (%)", "hybrid + gcs", "spider_dev")
    missing = _check(tmp_path, "nothing here", Claim("prose.md", "spider_dev {}", cell))
    assert len(missing) == 1 and "found 0 times" in missing[0]
    twice = _check(
        tmp_path, "spider_dev 93.2, spider_dev 93.2", Claim("prose.md", "spider_dev {}", cell)
    )
    assert len(twice) == 1 and "found 2 times" in twice[0]
    no_row = _cell("PR@10 (%)", "hybrid + ppr", "spider_dev")
    unknown = _check(tmp_path, "spider_dev 93.2", Claim("prose.md", "spider_dev {}", no_row))
    assert len(unknown) == 1 and "no row 'hybrid + ppr'" in unknown[0]


def test_the_real_tables_catch_the_drift_this_check_was_written_for(tmp_path: Path) -> None:
    """The MuSiQue sentence as it stood before the tables moved: 47.9 for a row now at 40.1."""
    (tmp_path / "docs").mkdir()
    bench = (ROOT / BENCH).read_text(encoding="utf-8")
    old = "the best row (the GAT on capped entities, 47.9) is +15.1 over the hybrid baseline"
    (tmp_path / BENCH).write_text(bench + "\n" + old + "\n", encoding="utf-8")
    claim = Claim(
        BENCH,
        "(the GAT on capped entities, {})",
        passages(10, "hybrid + gat[entities-capped]", "musique"),
    )
    failures = [str(failure) for failure in check_claims([claim], tmp_path)]
    assert len(failures) == 1
    assert "prose says 47.9, the table says 40.1" in failures[0]


def test_every_claim_fails_when_its_prose_number_changes() -> None:
    """No claim is vacuous: nudging the number it checks, in memory, makes it fail."""
    texts = {name: (ROOT / name).read_text(encoding="utf-8") for name in {c.file for c in CLAIMS}}
    docs = {
        name: parse_tables((ROOT / name).read_text(encoding="utf-8"))
        for name in {cell.doc for claim in CLAIMS for cell in _cells(claim)}
    }
    silent = []
    for claim in CLAIMS:
        text = texts[claim.file]
        match = phrase_pattern(claim.phrase).search(text)
        assert match is not None, claim.phrase
        said = match.group(1)
        nudged = said[:-1] + ("1" if said[-1] != "1" else "2")
        mutated = text[: match.start(1)] + nudged + text[match.end(1) :]
        if check_claim(claim, mutated, docs) is None:
            silent.append(f"{claim.file}: {claim.phrase!r} ({said} → {nudged})")
    assert not silent, "\n".join(silent)


def _cells(claim: Claim) -> list[Cell]:
    source = claim.source
    return [source.a, source.b] if isinstance(source, Diff) else [source]


def test_every_prose_number_of_the_benchmarks_doc_is_claimed_or_said_untied() -> None:
    """A new number in docs/benchmarks.md's prose needs a claim, or a passage saying why no
    table holds it (README is left to its claims: other prose there is not about benchmarks)."""
    text = (ROOT / BENCH).read_text(encoding="utf-8")
    untied = [passage for passage, _ in UNTIED_BENCH]
    problems = unclaimed_numbers(BENCH, text, CLAIMS, untied)
    assert not problems, "\n".join(problems)


def test_an_unclaimed_prose_number_is_reported_and_generated_tables_code_are_not() -> None:
    text = (
        "Prose with 12.5 in it and 7.0 claimed.\n\n| a | 3.5 |\n|---|---|\n| b | 4.5 |\n\n"
        "```\nx = 1.5\n```\n<!-- t:start -->\n9.5 generated\n<!-- t:end -->\n"
        "Version 0.2.0, Qwen2.5 and Apache-2.0 are no results.\n"
    )
    claim = Claim("x.md", "and {} claimed", _cell("PR@5 (%)", "hybrid + gcs", "spider_dev"))
    problems = unclaimed_numbers("x.md", text, [claim], ["gone 1.0 passage"])
    assert len(problems) == 2
    assert "not found" in problems[0] and "gone 1.0 passage" in problems[0]
    assert problems[1].startswith("x.md:1: 12.5 is in no claim")
    assert unclaimed_numbers("x.md", text, [claim], ["with 12.5 in"]) == []
