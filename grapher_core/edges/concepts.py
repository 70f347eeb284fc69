"""``SharedConcepts``: G-RAG's document graph (the G-RAG paper 3.1, eq. 3) as proximities.

Two documents are linked when their concept graphs share a concept; the edge carries the number
of common concepts (kind ``concept_nodes``) or of common concept pairs (kind ``concept_edges``).
The two kinds stay separate in ``CandidateGraph.by_kind`` so the ``g-rag`` ranker (and any other
learned ranker) reads them as two edge features. Use :func:`shared_concepts` for both.

These are the question-free graphs: G-RAG unites each document's AMR with the question's, and
since every ``G_qp`` then contains the question's concepts the paper's graph is near-complete;
the ``g-rag`` ranker builds that variant itself (``graph="question"``), as it has the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import scipy.sparse as sp

from grapher_core.candidates import Candidate
from grapher_core.edges.checks import FIELD_NAME, WEIGHT, check_proximity
from grapher_core.enrich.concepts import (
    CONCEPT_FORMATS,
    DEFAULT_MAX_PAIRS,
    ConceptGraph,
    concept_overlaps,
    read_graph,
    warn_once,
)
from grapher_core.utils.schema import DeclaredFields, Schema, Spec

__all__ = ["CONCEPT_KINDS", "SharedConcepts", "candidate_concepts", "shared_concepts"]

CONCEPT_KINDS: tuple[str, str] = ("concept_nodes", "concept_edges")


def candidate_concepts(
    candidates: Sequence[Candidate], field: str = "concepts", fmt: str = "concepts"
) -> list[ConceptGraph]:
    """The concept graph stored in each candidate's ``metadata[field]`` (empty when absent)."""
    return [read_graph(c.metadata.get(field), fmt) for c in candidates]


@dataclass(frozen=True)
class SharedConcepts(DeclaredFields):
    """Edges weighted by common concepts (``count="nodes"``) or common concept pairs
    (``count="edges"``) between the candidates' stored concept graphs (raw counts; the ranker
    normalises them per query). ``fmt``: ``"concepts"`` (written by the concept enrichment) or
    ``"penman"`` (AMR). ``max_pairs``: the most candidate pairs sharing a concept (counted once
    per shared concept) the graph may store, checked before they are allocated
    (:data:`~grapher_core.enrich.concepts.DEFAULT_MAX_PAIRS`; ``None``: no bound)."""

    FIELDS: ClassVar[Schema] = {
        "field": FIELD_NAME,
        "count": Spec("str", choices=("nodes", "edges")),
        "fmt": Spec("str", choices=tuple(CONCEPT_FORMATS)),
        "weight": WEIGHT,
        "max_pairs": Spec("int", optional=True, low=1),
    }
    field: str = "concepts"
    count: str = "nodes"
    fmt: str = "concepts"
    weight: float = 1.0
    max_pairs: int | None = DEFAULT_MAX_PAIRS

    def __post_init__(self) -> None:
        check_proximity(self)

    @property
    def kind(self) -> str:
        return CONCEPT_KINDS[0] if self.count == "nodes" else CONCEPT_KINDS[1]

    def adjacency(self, candidates: Sequence[Candidate]) -> sp.csr_matrix:
        graphs = candidate_concepts(candidates, self.field, self.fmt)
        if candidates and not any(g.nodes for g in graphs):
            warn_once(
                f"SharedConcepts: no candidate has a concept graph in metadata "
                f"{self.field!r} (run the concept enrichment); the graph has no edges"
            )
        nodes, edges = concept_overlaps(graphs, max_pairs=self.max_pairs)
        return nodes if self.count == "nodes" else edges


def shared_concepts(
    field: str = "concepts", fmt: str = "concepts", weight: float = 1.0
) -> list[SharedConcepts]:
    """Both G-RAG edge features as two proximities (common nodes, common edges)."""
    return [
        SharedConcepts(field, "nodes", fmt, weight),
        SharedConcepts(field, "edges", fmt, weight),
    ]
