"""GRAGRanker refuses a bad option before loading its checkpoint, naming the option and the
values it may take (threads=True is not a thread count; "xml" is not a concept format)."""

from __future__ import annotations

import pytest

from grapher_core.errors import ConfigError
from grapher_core.ranking.registry import make_ranker

pytest.importorskip("torch", reason="needs the grag extra (torch)")

from grapher_core.learned.grag.ranker import GRAGRanker


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("threads", True, "positive integer"),
        ("threads", False, "positive integer"),
        ("threads", 0, "positive integer"),
        ("threads", -2, "positive integer"),
        ("threads", 2.0, "positive integer"),
        ("threads", "4", "positive integer"),
        ("concept_format", "xml", "('concepts', 'penman')"),
        ("concept_format", "PENMAN", "('concepts', 'penman')"),
        ("concept_format", None, "('concepts', 'penman')"),
        ("concept_field", "", "field name"),
        ("text", "words", "('concepts', 'plain', 'fast')"),
        ("graph", "all", "question"),
        ("paths", "none", "document"),
        ("strict", "yes", "True or False"),
    ],
)
def test_a_bad_option_is_named_with_its_allowed_values(
    option: str, value: object, said: str
) -> None:
    with pytest.raises(ConfigError, match=f"GRAGRanker: {option} must") as error:
        GRAGRanker(**{option: value})  # type: ignore[arg-type]
    assert said in str(error.value)


def test_the_registry_refuses_the_same() -> None:
    with pytest.raises(ConfigError, match="threads"):
        make_ranker("g-rag", threads=True)


@pytest.mark.filterwarnings("ignore:g-rag is a port of G-RAG")  # the shipped one's caveat
@pytest.mark.parametrize("fmt", ["concepts", "penman"])
def test_the_allowed_formats_pass_the_check(fmt: str) -> None:
    assert GRAGRanker(concept_format=fmt).concept_format == fmt
