"""One text cleaning for every model: the core's embedding path, the CLI, the enrichment runner
and the concept parser run the same rule (lone surrogates -> U+FFFD, an optional length)."""

from __future__ import annotations

import pytest

from grapher_core.cli import inputs
from grapher_core.enrich.concepts.text import sanitise_texts
from grapher_core.utils.text import clean_text, clean_texts, surrogate_positions


def test_clean_text_replaces_lone_surrogates_and_cuts() -> None:
    assert clean_text("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert clean_text("abcdef", 3) == "abc"
    assert clean_text("fine") == "fine"
    assert clean_text("x\ud800", 1) == "x"


def test_the_cli_uses_the_cores_rule() -> None:
    assert inputs.clean_text is clean_text


def test_named_cleaning_says_it_once_and_keeps_clean_lists() -> None:
    texts = ["ok", "bad \ud800"]
    with pytest.warns(UserWarning, match="the reader: 1 text.*'id-text-2'.*U\\+FFFD"):
        assert clean_texts(texts, ["id-text-1", "id-text-2"], "the reader") == ["ok", "bad \ufffd"]
    assert texts == ["ok", "bad \ud800"]  # the caller's list is not mutated
    clean = ["a", "b"]
    assert clean_texts(clean) is clean
    assert surrogate_positions(["\udc00", "x", "y\ud800"]) == [0, 2]


def test_the_concept_parser_runs_the_same_rule() -> None:
    with pytest.warns(UserWarning, match="'doc-text-9'"):
        assert sanitise_texts(["a \udfff"], ["doc-text-9"]) == [clean_text("a \udfff")]
