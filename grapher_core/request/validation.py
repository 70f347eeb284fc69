"""The checks every door runs on what it is given: candidates, proximities, settings.

One function per field, used by the core's constructor and setters, :class:`~grapher_core.
request.settings.RerankSettings` and (through them) both wrappers and the config loader.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from operator import attrgetter

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.edges.base import Proximity
from grapher_core.errors import ConfigError, InputError, InputTypeError
from grapher_core.ranking.seeds import SEED_TRANSFORMS, _names, original_scores
from grapher_core.utils.schema import check_field_names

__all__ = [
    "check_bound",
    "check_explain",
    "check_field_names",
    "check_proximities",
    "check_score_threshold",
    "check_seed_transform",
    "validate_candidates",
    "validated_candidates",
]


def check_bound(name: str, value: object) -> int | None:
    """A positive integer bound or ``None``."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{name} must be an integer >= 1 or None, got {value!r}")
    return value


def check_seed_transform(value: object) -> str | None:
    """``None`` (the core's rule) or one of ``SEED_TRANSFORMS``."""
    if value is not None and (not isinstance(value, str) or value not in SEED_TRANSFORMS):
        raise ConfigError(f"seed_transform must be None or one of {SEED_TRANSFORMS}, got {value!r}")
    return value


def check_explain(value: object) -> int:
    """How many neighbours to report per returned candidate: an integer >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"explain must be an integer >= 0, got {value!r}")
    return value


def check_score_threshold(value: object) -> float | None:
    """``None`` or a finite number."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(float(value))
    ):
        raise ConfigError(f"score_threshold must be a finite number or None, got {value!r}")
    return float(value)


def check_proximities(proximities: object) -> tuple[Proximity, ...]:
    """The proximities as a tuple, each an instance with ``kind``, ``weight`` and
    ``adjacency(candidates)``; a class given instead of an instance is named as such."""
    if isinstance(proximities, (str, bytes)) or not isinstance(proximities, Iterable):
        raise InputTypeError(f"proximities must be a list of proximities, got {proximities!r}")
    items = tuple(proximities)
    for proximity in items:
        if isinstance(proximity, type):
            raise InputTypeError(
                f"{proximity.__name__} is a class: pass an instance, {proximity.__name__}()"
            )
        if not isinstance(proximity, Proximity):
            raise InputTypeError(
                f"{proximity!r} is not a proximity: it needs `kind`, `weight` "
                "and `adjacency(candidates)`"
            )
    return items


def validate_candidates(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Check types, ids and scores up front so errors name the problem, not a deep frame."""
    return validated_candidates(candidates)[0]


def validated_candidates(
    candidates: Sequence[Candidate],
) -> tuple[list[Candidate], np.ndarray | None]:
    """The candidates as a list and their scores (``None``: none has one), checked."""
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
        candidates = list(candidates)
    items = list(candidates)
    # The common case checked in bulk (C-level map/set passes, no per-item Python frame):
    # only Candidates, non-empty string ids, all distinct, all scores floats.
    if set(map(type, items)) == {Candidate}:
        ids = list(map(_ID, items))
        if set(map(type, ids)) == {str} and all(ids) and len(set(ids)) == len(ids):
            scores = list(map(_SCORE, items))
            if set(map(type, scores)) == {float}:
                array = np.array(scores, dtype=np.float64)
                if np.isfinite(array.sum()) or np.all(np.isfinite(array)):
                    return items, array
            return items, original_scores(items)
    for position, candidate in enumerate(items):
        if not isinstance(candidate, Candidate):
            raise InputTypeError(
                f"candidate at position {position} is a {type(candidate).__name__}, "
                "not a grapher_core.Candidate"
            )
        if not isinstance(candidate.id, str) or not candidate.id:
            raise InputError(f"candidate at position {position} has an empty or non-string id")
    if len({c.id for c in items}) != len(items):
        duplicates = [i for i, count in Counter(c.id for c in items).items() if count > 1]
        raise InputError(f"duplicate candidate ids: {_names(duplicates)}")
    return items, original_scores(items)  # raises on partial, NaN, inf or non-numeric scores


_ID = attrgetter("id")
_SCORE = attrgetter("score")
