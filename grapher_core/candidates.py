"""The core's plain data types: what goes into a reranker and what comes out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from grapher_core.errors import InputTypeError
from grapher_core.utils.schema import DeclaredFields


@dataclass(frozen=True)
class Candidate(DeclaredFields):
    """One object returned by a base retriever, the single input type of the core.

    ``score`` is the base retriever's score (``None`` when the retriever gives none: seeds then
    come from rank). ``metadata`` holds the enrichment fields the proximities read.
    ``embedding`` is only needed by rankers or proximities that use vectors.
    ``metadata=None`` means no metadata (stored as ``{}``); anything else that is not a mapping
    is refused here, naming the candidate, rather than deep inside a proximity.
    """

    id: str
    text: str = ""
    score: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    embedding: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check_metadata(self, "candidate")


@dataclass(frozen=True)
class CorpusObject(DeclaredFields):
    """An object of a corpus before retrieval (a table, a passage, a chunk)."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_metadata(self, "object")


def _check_metadata(item: Candidate | CorpusObject, what: str) -> None:
    metadata = item.metadata
    if type(metadata) is dict:
        return
    if metadata is None:
        object.__setattr__(item, "metadata", {})
    elif not isinstance(metadata, Mapping):
        raise InputTypeError(
            f"{what} {item.id!r} has metadata of type {type(metadata).__name__}; "
            "expected a mapping (dict) or None"
        )


@dataclass(frozen=True)
class Contribution(DeclaredFields):
    """One neighbour's share in lifting a candidate's score: the explanation unit.

    ``contribution = W[i, j] * score[j]`` with ``W`` the row-normalised adjacency: the
    neighbour's score weighted by its share of i's edges. It is a share of the smoothing term,
    not of the final score, so it can exceed the candidate's own score (a strong neighbour of a
    weak candidate); compare contributions with each other, not with the score.
    """

    neighbour_id: str
    kinds: tuple[str, ...]
    edge_weight: float
    contribution: float


@dataclass(frozen=True)
class RankedCandidate(DeclaredFields):
    """A reranked candidate: its new score and rank, where it came from, and why it moved."""

    id: str
    score: float
    original_score: float | None
    rank: int
    original_rank: int
    candidate: Candidate
    explanation: tuple[Contribution, ...] = ()
    relevance: float | None = None
    """``score`` on the documented relevance scale (:mod:`grapher_core.ranking.calibration`)."""
    expanded: bool = False
    """True when expansion fetched this object (it was not among the given candidates); its
    ``original_rank`` is then beyond the candidate list and ``original_score`` the seed score
    expansion gave it."""

    @property
    def lifted(self) -> bool:
        """True when the graph moved this candidate up the list."""
        return self.rank < self.original_rank


# The library's own results: built without the constructor's frames. A frozen dataclass sets
# each field through ``object.__setattr__`` in its ``__init__``, and ``DeclaredFields.__new__``
# checks the keywords a caller spelt; a rerank of top 10 builds 10 ranked candidates and 30
# contributions (~2 us each that way, 85 us of a 1 ms call). These two classes have no
# ``__post_init__``: the only check a constructor runs is on keyword names, which are fixed
# here, so the values are the same objects a constructor makes (equal, same fields: tested).
# A user constructing either directly still goes through every check.

_new = object.__new__


def contribution_of(
    neighbour_id: str, kinds: tuple[str, ...], edge_weight: float, contribution: float
) -> Contribution:
    """``Contribution(neighbour_id, kinds, edge_weight, contribution)`` for values the
    library computed (explanations)."""
    made = cast(Contribution, _new(Contribution))
    fields = made.__dict__
    fields["neighbour_id"] = neighbour_id
    fields["kinds"] = kinds
    fields["edge_weight"] = edge_weight
    fields["contribution"] = contribution
    return made


def ranked_of(
    id: str,
    score: float,
    original_score: float | None,
    rank: int,
    original_rank: int,
    candidate: Candidate,
    explanation: tuple[Contribution, ...],
    relevance: float | None,
) -> RankedCandidate:
    """``RankedCandidate(...)`` (not expanded) for values the library computed (the ranked
    list)."""
    made = cast(RankedCandidate, _new(RankedCandidate))
    fields = made.__dict__
    fields["id"] = id
    fields["score"] = score
    fields["original_score"] = original_score
    fields["rank"] = rank
    fields["original_rank"] = original_rank
    fields["candidate"] = candidate
    fields["explanation"] = explanation
    fields["relevance"] = relevance
    fields["expanded"] = False
    return made
