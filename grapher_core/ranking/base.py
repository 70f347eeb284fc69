"""What a ranker is: the :class:`Ranker` protocol, its declared capabilities, what it is
given (:class:`RankContext`) and the do-nothing baseline every graph ranker must beat."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

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
from grapher_core.ranking.options import RANKER_NAME
from grapher_core.schema import Schema, check_fields


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
class BaselineRanker:
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
