"""What every wrapper does the same way, defined once so LangChain and LlamaIndex agree.

Keys of the metadata a reranked document / node carries, the names of the list formats that
extractors and transformers accept, the JSON-able form of an explanation, and how a wrapper's
(pydantic) config takes a new field value. A wrapper imports these; it never spells a key itself.
"""

from __future__ import annotations

from typing import Any, Literal

from grapher_core.candidates import RankedCandidate
from grapher_core.metadata import LIST_FORMATS

__all__ = [
    "EDGES_KEY",
    "EXPANDED_KEY",
    "EXPLANATION_KEY",
    "GRAPHER_SCORE_KEY",
    "LIST_FORMATS",
    "OUTPUT_KEYS",
    "RELEVANCE_SCORE_KEY",
    "RETRIEVAL_SCORE_KEY",
    "ListFormat",
    "assign_validated",
    "explanation_to_metadata",
    "validated_copy",
]

RELEVANCE_SCORE_KEY = "relevance_score"
"""The new (reranked) score: the key every LangChain reranker writes (LlamaIndex also sets
``NodeWithScore.score``)."""
RETRIEVAL_SCORE_KEY = "retrieval_score"
"""The base retriever's score, kept beside the new one when asked."""
EXPLANATION_KEY = "grapher_explanation"
"""The neighbours that lifted an object (``explain=True``), as :func:`explanation_to_metadata`
writes them."""
EXPANDED_KEY = "grapher_expanded"
"""``True`` on an object that expansion fetched (it was not among the retrieved ones)."""
GRAPHER_SCORE_KEY = "grapher_score"
"""The ranker's raw score (``RankedCandidate.score``: a GCS value, a PPR mass, a GAT logit);
``relevance_score`` is the same on the documented scale of
:mod:`grapher_core.ranking.calibration`."""
EDGES_KEY = "grapher_edges"
"""The candidate graph's edge count per kind for this call, e.g. ``{"structural": 12}``
(directed edges: a symmetric link counts twice; a proximity that found none shows 0, so
``{"contextual": 0}`` says relationships gave no edge)."""
OUTPUT_KEYS: tuple[str, ...] = (
    RELEVANCE_SCORE_KEY,
    RETRIEVAL_SCORE_KEY,
    EXPLANATION_KEY,
    EXPANDED_KEY,
    GRAPHER_SCORE_KEY,
    EDGES_KEY,
)
"""Every key GraphER may add to an output's metadata (keep them out of embedding/LLM text)."""

ListFormat = Literal["list", "json", "delimited"]
"""How a list metadata field is written (see :func:`grapher_core.metadata.encode_list`):
a native list, a JSON string, or a delimited string, for stores that keep only scalars."""


def explanation_to_metadata(ranked: RankedCandidate) -> list[dict[str, Any]]:
    """The explanation as plain JSON-able dicts: neighbour id, edge kinds, edge weight and the
    neighbour's share of the lift, strongest first (the order of ``ranked.explanation``)."""
    return [
        {
            "neighbour_id": item.neighbour_id,
            "kinds": list(item.kinds),
            "edge_weight": item.edge_weight,
            "contribution": item.contribution,
        }
        for item in ranked.explanation
    ]


def validated_copy(model: Any, **changes: Any) -> Any:
    """A new pydantic wrapper ``model`` with its fields and ``changes``, validated (its core
    built) as at construction; ``model`` itself is not touched."""
    fields = {key: getattr(model, key) for key in type(model).model_fields}
    return type(model)(**{**fields, **changes})


def assign_validated(model: Any, name: str, value: Any, derived: tuple[str, ...]) -> None:
    """Set field ``name`` of a pydantic wrapper ``model`` so that a refused value changes nothing.

    A copy with the new value is built (and validated, its core built) first; only then does
    ``model`` take the field and the ``derived`` private attributes (its core, ...) from the
    copy. A value that fails raises here, leaving neither the field nor the core in use changed.
    """
    trial = validated_copy(model, **{name: value})  # raises here, before any change
    model.__dict__[name] = trial.__dict__[name]
    model.__pydantic_fields_set__.add(name)
    for attribute in derived:
        setattr(model, attribute, getattr(trial, attribute))
