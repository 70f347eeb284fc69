"""What a ranker is: the :class:`Ranker` protocol, its declared capabilities, what it is
given (:class:`RankContext`) and the do-nothing baseline every graph ranker must beat."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

try:  # scipy's compiled csr kernels: the same ones `@` ends in, without their dispatch cost
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
    from scipy.sparse._sparsetools import csr_scale_rows as _csr_scale_rows
except ImportError:  # pragma: no cover
    _csr_matvec = None
    _csr_scale_rows = None

from grapher_core.candidates import Candidate
from grapher_core.edges.graph import CandidateGraph
from grapher_core.errors import ConfigError
from grapher_core.utils.schema import DeclaredFields, Schema, Spec, check_fields

# What a config's ``ranker_options`` (or a constructor call) may set on the built-in rankers: the
# field specs their ``FIELDS`` are made of. Iteration is bounded here, once: no file can make one
# query iterate for hours (``max_iter: 1e9`` with ``tol: 1e-300`` never converges in float64).
MAX_ITER = 10_000
"""The most propagation steps a ranker may be given (the default: GCS converges in tens)."""
MIN_TOL = 1e-15
"""The smallest convergence tolerance: below float64's resolution of an L1 change over a few
hundred scores a smaller one is never met, and every allowed step would run."""

ALPHA = Spec("float", low=0.0, high=1.0, open_low=True, open_high=True)
"""A seed weight in (0, 1)."""
TOL = Spec("float", low=MIN_TOL, fix=f"a tolerance below {MIN_TOL:g} is never reached")
"""A convergence tolerance >= :data:`MIN_TOL`."""
MAX_ITER_SPEC = Spec("int", low=1, high=MAX_ITER, fix="the default is 10000")
"""A step count in [1, :data:`MAX_ITER`]."""
RANKER_NAME = Spec("str", nonblank=True)
"""The name a ranker reports (``"grapher-<name>"`` in events)."""


def _weights_reason(value: Any, allow_auto: bool) -> str | None:
    """Why ``value`` is not ``{kind: weight}`` / ``[(kind, weight), ...]`` with finite weights
    >= 0 (or ``"auto"`` where allowed); ``None`` when it is."""
    if isinstance(value, str):
        return None if allow_auto and value == "auto" else "the only name allowed is 'auto'"
    pairs = list(value.items()) if isinstance(value, Mapping) else value
    if not isinstance(pairs, (list, tuple)):
        return "expected {kind: weight} or [[kind, weight], ...]"
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not isinstance(pair[0], str):
            return f"{pair!r:.60} is not a (kind, weight) pair"
        weight = pair[1]
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            return f"the weight of {pair[0]!r} is not a number"
        try:
            finite = math.isfinite(float(weight))
        except OverflowError:
            finite = False
        if not finite or weight < 0:
            return f"the weight of {pair[0]!r} must be finite and >= 0"
    return None


def kind_weights_spec(*, allow_auto: bool = False) -> Spec:
    """Per-kind weights: ``{kind: weight}`` or ``(kind, weight)`` pairs, finite and >= 0
    (``"auto"`` too when ``allow_auto``)."""
    return Spec("rule", rule=lambda value: _weights_reason(value, allow_auto))


@dataclass(frozen=True)
class RankContext:
    """What a ranker may need beyond the graph and seeds (learned rankers use the vectors)."""

    candidates: Sequence[Candidate]
    query: str | None = None
    query_embedding: np.ndarray | None = None


@runtime_checkable
class Ranker(Protocol):
    """Scores candidates from their graph and seed scores; higher is better.

    A ranker that reads embeddings (``candidate.embedding``, ``context.query_embedding``)
    declares it with a class attribute ``needs_embeddings = True`` (optional, default False;
    read by :func:`needs_embeddings`), so wrappers embed only when something uses the vectors.
    A ranker that builds its own graph from the candidates (G-RAG's concept graph) declares
    ``builds_own_graph = True`` (read by :func:`builds_own_graph`), so an empty proximity graph
    is not reported as "the order is the retriever's". A ranker that reads the seeds as the
    retriever's *scores* (a learned model trained on them, a score fusion) declares
    ``reads_scores = True`` (read by :func:`reads_scores`): its default seed policy is then
    ``"auto"`` instead of ``"rank"`` (see :mod:`grapher_core.ranking.seeds`).
    """

    @property
    def name(self) -> str: ...

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        """Return one finite score per candidate, in the candidates' order."""
        ...


def needs_embeddings(component: object) -> bool:
    """Whether a ranker or proximity declared that it reads embeddings (``needs_embeddings``
    attribute, default False)."""
    return bool(getattr(component, "needs_embeddings", False))


def builds_own_graph(component: object) -> bool:
    """Whether a ranker declared that it builds its own graph (``builds_own_graph`` attribute,
    default False): the proximities' graph is then not all it sees."""
    return bool(getattr(component, "builds_own_graph", False))


def reads_scores(component: object) -> bool:
    """Whether a ranker declared that it reads the seeds as retriever scores (``reads_scores``
    attribute, default False)."""
    return bool(getattr(component, "reads_scores", False))


@dataclass(frozen=True)
class BaselineRanker(DeclaredFields):
    """The base retriever's order, unchanged: the comparison every graph ranker must beat."""

    FIELDS: ClassVar[Schema] = {"name": RANKER_NAME}
    name: str = "baseline"

    def __post_init__(self) -> None:
        check_fields(self)

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        return np.array(seeds, dtype=np.float64)


def check_alpha(alpha: object) -> float:
    """``alpha`` as a float, refused (naming the value) unless a real number in (0, 1)."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise ConfigError(f"alpha must be a number in (0, 1), got {alpha!r}")
    value = float(alpha)
    if not (0.0 < value < 1.0):
        raise ConfigError(f"alpha must be in (0, 1), got {alpha!r}")
    return value
