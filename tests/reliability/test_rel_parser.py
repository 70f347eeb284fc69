"""Item 1: one pathological LLM answer costs bounded work, fails alone, and the run goes on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from enrich_fault_server import FaultServer

from grapher_core.enrich import parsing
from grapher_core.enrich.parsing import MAX_ANSWER_CHARS, EntityParseError, parse_entity_list

N = MAX_ANSWER_CHARS  # the longest answer that is parsed at all

PATHOLOGICAL = {
    "open brackets": "[" * N,
    "open braces": "{" * N,
    "alternating": "[{" * (N // 2),
    "unclosed quoted items": "['a', " * (N // 6),
    "many small lists": "[a]" * (N // 3),
    "open quotes": "['" * (N // 2),
    "fences": "```" * (N // 3),
    "nested then wrong close": "[" * (N // 2 - 1) + "]" * (N // 2 - 1) + "}",
}


@pytest.mark.parametrize("answer", list(PATHOLOGICAL.values()), ids=list(PATHOLOGICAL))
def test_pathological_answer_bounded_and_rejected(
    answer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Work is bounded by counting what the parser does (never by a timer): at most
    ``MAX_RESCANS + 1`` linear scans and ``MAX_BRACKET_CANDIDATES`` bracket pieces parsed."""
    scans: list[int] = []
    literals: list[int] = []
    scan, literal = parsing._scan_brackets, parsing._literal

    def counted_scan(text: str, position: int, spans: Any) -> Any:
        scans.append(len(text) - position)
        return scan(text, position, spans)

    def counted_literal(candidate: str) -> Any:
        literals.append(len(candidate))
        return literal(candidate)

    monkeypatch.setattr(parsing, "_scan_brackets", counted_scan)
    monkeypatch.setattr(parsing, "_literal", counted_literal)
    with pytest.raises(EntityParseError, match=r"no list|not a string|not a list"):
        parse_entity_list(answer)
    assert len(scans) <= parsing.MAX_RESCANS + 1
    fences = answer.count("```") // 2
    assert len(literals) <= 1 + fences + parsing.MAX_BRACKET_CANDIDATES
    # characters handed to the literal parsers: the whole text, the fences, disjoint pieces
    assert sum(literals) <= 3 * len(answer)


def test_over_the_cap_rejected_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing, "_candidates", lambda text: pytest.fail("parsed"))
    with pytest.raises(EntityParseError, match=f"over {MAX_ANSWER_CHARS}"):
        parse_entity_list("[" * 99_000)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("[Note: it's a list] ['a', 'b']", ["a", "b"]),  # apostrophe inside prose brackets
        ("Here's [one] of them: ['a']", ["a"]),
        ('[x, {y] then ["z"]', ["z"]),  # a wrong close abandons the open brackets only
    ],
)
def test_lists_after_broken_brackets_still_found(answer: str, expected: list[str]) -> None:
    assert parse_entity_list(answer) == expected


def test_one_bad_answer_fails_alone_and_the_run_goes_on(
    fault_server: Callable[..., FaultServer],
) -> None:
    from grapher_core.enrich.llm import OpenAIEntityExtractor
    from grapher_core.enrich.runner import run_extraction

    texts = [f"Story {i} about Ada Lovelace in London" for i in range(40)]
    server = fault_server(answers={texts[7]: "[" * N, texts[21]: "{" * 99_000})
    extractor = OpenAIEntityExtractor("fake", base_url=server.base_url, api_key="x",
                                      concurrency=4, max_retries=0)  # fmt: skip
    run = run_extraction(texts, extractor)
    assert run.failed_positions == [7, 21]
    assert "unparseable answer" in (run.results[7].error or "")
    assert f"over {MAX_ANSWER_CHARS}" in (run.results[21].error or "")
    assert run.results[0].entities == ["Story", "Ada Lovelace", "London"]
