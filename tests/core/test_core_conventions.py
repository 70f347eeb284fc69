"""One set of output keys and one error base class for the whole library."""

from __future__ import annotations

import json

import pytest

from grapher_core import Candidate, Contribution, RankedCandidate
from grapher_core.conventions import (
    EXPANDED_KEY,
    EXPLANATION_KEY,
    LIST_FORMATS,
    OUTPUT_KEYS,
    RETRIEVAL_SCORE_KEY,
    explanation_to_metadata,
)
from grapher_core.errors import CheckpointError, ConfigError, GraphERError, InputError
from grapher_core.metadata import encode_list


def test_explanation_metadata_is_plain_json() -> None:
    ranked = RankedCandidate(
        id="a",
        score=0.9,
        original_score=0.5,
        rank=1,
        original_rank=3,
        candidate=Candidate(id="a", text="a", score=0.5),
        explanation=(Contribution("b", ("structural", "contextual"), 1.0, 0.25),),
    )
    out = explanation_to_metadata(ranked)
    assert json.loads(json.dumps(out)) == [
        {
            "neighbour_id": "b",
            "kinds": ["structural", "contextual"],
            "edge_weight": 1.0,
            "contribution": 0.25,
        }
    ]
    assert len(set(OUTPUT_KEYS)) == len(OUTPUT_KEYS) == 6 and EXPANDED_KEY in OUTPUT_KEYS


def test_list_formats_are_the_encoder_s() -> None:
    for fmt in LIST_FORMATS:
        encode_list(["x", "y"], fmt)
    with pytest.raises(ValueError, match="list format"):
        encode_list(["x"], "native")


def test_wrappers_write_the_core_keys() -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    import langchain_grapher.convert as lc
    import langchain_grapher.neighbours as lc_neighbours
    import llama_index_grapher.convert as li
    import llama_index_grapher.postprocessor as li_post

    assert lc.RETRIEVAL_SCORE_KEY is li.RETRIEVAL_SCORE_KEY is RETRIEVAL_SCORE_KEY
    assert lc_neighbours.EXPANDED_KEY is li_post.EXPANDED_KEY is EXPANDED_KEY
    assert lc.EXPLANATION_KEY is li_post.EXPLANATION_KEY is EXPLANATION_KEY


@pytest.mark.parametrize(
    "error, builtin",
    [(InputError, ValueError), (ConfigError, ValueError), (CheckpointError, ValueError)],
)
def test_errors_share_one_base_and_keep_their_builtin(
    error: type[Exception], builtin: type[Exception]
) -> None:
    with pytest.raises(GraphERError):
        raise error("x")
    with pytest.raises(builtin):
        raise error("x")


def test_library_errors_derive_from_the_base() -> None:
    from grapher_core.enrich.llm import ExtractorConfigError
    from grapher_core.enrich.parsing import EntityParseError
    from grapher_core.errors import EmbeddingMismatchError

    for error in (ExtractorConfigError, EntityParseError, EmbeddingMismatchError):
        assert issubclass(error, GraphERError) and issubclass(error, ValueError)
