from __future__ import annotations

import math

import pytest

from grapher_core.metadata import normalise_entity, normalised_set, read_int, read_list


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["a", "b"], ["a", "b"]),
        ([" a ", "", "b"], ["a", "b"]),
        (("a", 3), ["a", "3"]),
        ('["a", "b"]', ["a", "b"]),
        ("[1, 2]", ["1", "2"]),
        ("a|b|c", ["a", "b", "c"]),
        ("a; b", ["a", "b"]),
        ("a, b", ["a", "b"]),
        ("single", ["single"]),
        ("", []),
        ("   ", []),
        (None, []),
        ([], []),
        ({"a": 1}, []),
        ("[not json", ["[not json"]),
        ([["col", "db.t", "col"]], ["col", "db.t", "col"]),
        (7, ["7"]),
        (float("nan"), []),
        ([None, "x"], ["x"]),
    ],
)
def test_read_list_accepts_every_store_shape(value: object, expected: list[str]) -> None:
    assert read_list(value) == expected


def test_read_list_json_string_with_delimiters_inside_items() -> None:
    # A JSON list wins over delimiter splitting, so commas inside items survive.
    assert read_list('["Washington, D.C.", "Paris"]') == ["Washington, D.C.", "Paris"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3),
        (3.0, 3),
        ("4", 4),
        (" 5 ", 5),
        (3.5, None),
        ("x", None),
        (None, None),
        (True, None),
        ([1], None),
    ],
)
def test_read_int(value: object, expected: int | None) -> None:
    assert read_int(value) == expected


def test_normalise_entity_case_and_whitespace() -> None:
    assert normalise_entity("  Barack \t Obama\n") == "barack obama"
    assert normalise_entity("STRASSE") == normalise_entity("strasse")
    assert normalised_set(["Paris", "paris ", "", "  "]) == {"paris"}
    assert not math.isnan(len(normalised_set([])))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (str(["Berlin", "Paris"]), ["Berlin", "Paris"]),  # a list coerced with str()
        (str(["O'Brien", "x|y"]), ["O'Brien", "x|y"]),  # quotes and delimiters inside values
        (str([1, 2]), ["1", "2"]),
        ("['unclosed', 'list'", ["['unclosed'", "'list'"]),  # not a literal: split as before
        ("[__import__('os').getcwd()]", ["[__import__('os').getcwd()]"]),  # never evaluated
    ],
)
def test_python_str_lists_are_read_without_their_quotes(value: str, expected: list[str]) -> None:
    assert read_list(value) == expected


def test_a_huge_python_literal_is_not_parsed() -> None:
    from grapher_core.metadata import PYTHON_LIST_MAX_CHARS

    value = str(["x" * 10] * (PYTHON_LIST_MAX_CHARS // 10))
    assert len(value) > PYTHON_LIST_MAX_CHARS
    assert read_list(value)[0].startswith("['x")  # split on delimiters, quotes kept
