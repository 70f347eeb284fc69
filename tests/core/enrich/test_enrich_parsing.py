"""The answer parser: every list shape a model produces is read, anything else is rejected."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grapher_core.enrich.parsing import MAX_ANSWER_CHARS, EntityParseError, parse_entity_list


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('["Barack Obama", "Honolulu"]', ["Barack Obama", "Honolulu"]),
        ("['Barack Obama', 'Honolulu']", ["Barack Obama", "Honolulu"]),
        ('```\n["a", "b"]\n```', ["a", "b"]),
        ('```python\n["a"]\n```', ["a"]),
        ('```json\n["a"]\n```\n', ["a"]),
        ('Sure! The entities are ["Paris", "France"]. Anything else?', ["Paris", "France"]),
        ('Output:\n["x [1]", "y]"]', ["x [1]", "y]"]),
        ("Here's the list: ['O\\'Neil', 'Dublin']", ["O'Neil", "Dublin"]),
        ('{"entities": ["a", "b"]}', ["a", "b"]),
        ("[]", []),
        ("[1810, 'Denmark']", ["1810", "Denmark"]),
        ('  \n ["a"] \n', ["a"]),
    ],
)
def test_accepted_shapes(answer: str, expected: list[str]) -> None:
    assert parse_entity_list(answer) == expected


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (None, "no content"),
        ("", "empty"),
        ("Paris, France", "no list"),
        ('["a", "b"', "no list"),
        ("[[1]]", "not a string"),
        ('["a", null]', "not a string"),
        ('{"foo": 1}', "object without"),
        ('__import__("os").system("echo pwned")', "no list"),
        ("[__import__('os')]", "no list"),
        ('"just a string"', "not a list"),
    ],
)
def test_rejected_shapes(answer: str | None, reason: str) -> None:
    with pytest.raises(EntityParseError, match=reason):
        parse_entity_list(answer)


def test_never_evaluates_code(tmp_path: object) -> None:
    """A payload that would have side effects under eval is only ever read as data."""
    marker: list[int] = []
    globals()["_marker"] = marker
    with pytest.raises(EntityParseError):
        parse_entity_list("[_marker.append(1)]")
    assert marker == []


def test_oversized_answer_rejected() -> None:
    with pytest.raises(EntityParseError, match="over"):
        parse_entity_list("[" + "'a'," * MAX_ANSWER_CHARS + "]")


def test_deeply_nested_answer_rejected_cleanly() -> None:
    with pytest.raises(EntityParseError):
        parse_entity_list("[" * 5000 + "]" * 5000)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.text(max_size=20), max_size=8), st.sampled_from(["{}", "```\n{}\n```", "A: {} ."])
)
def test_round_trip_of_any_string_list(entities: list[str], frame: str) -> None:
    assert parse_entity_list(frame.format(json.dumps(entities))) == entities


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_gives_list_or_parse_error(answer: str) -> None:
    try:
        result = parse_entity_list(answer)
    except EntityParseError:
        return
    assert isinstance(result, list)
    assert all(isinstance(item, str) for item in result)
