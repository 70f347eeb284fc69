"""G-RAG's inputs for one question: node texts (3.2.1) and normalised edge features (3.2.2).

Numpy and scipy only, shared by the ranker (query time) and the training tooling, so both
compute exactly the same features.

* Node text, ``text="concepts"``: ``document text + "\\n" + a_i`` where ``a_i`` is the concept
  text of :func:`grapher_core.enrich.concepts.path_text` over ``G_qp`` (eq. 2); ``"plain"``: the
  document text (eq. 1, the MLP/GCN baselines); ``"fast"``: no per-query encoding -- the cached
  document vector plus the mean of per-concept vectors along the paths (see the ranker).
* Edge features, ``graph="question"``: common nodes / common edges of ``G_qp_i`` and ``G_qp_j``
  (every pair shares the question's concepts: a complete graph); ``graph="documents"``: the
  same counts on the document graphs alone (pairs sharing no concept are not linked). Each of
  the two features is divided by its maximum over the question's edges, so both lie in (0, 1]
  whatever the passage length ("normalised on the first and second dimension respectively").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from grapher_core.enrich.concepts import (
    QUESTION_NODE,
    ConceptGraph,
    concept_overlaps,
    question_graph,
    shortest_paths,
)
from grapher_core.errors import InputError

__all__ = [
    "GRAPH_MODES",
    "PATH_MODES",
    "TEXT_MODES",
    "EdgeArrays",
    "edge_arrays",
    "node_texts",
    "path_concepts",
]

TEXT_MODES: tuple[str, ...] = ("concepts", "plain", "fast")
GRAPH_MODES: tuple[str, ...] = ("question", "documents")
#: which concepts of the paths make ``a_i``: ``"all"`` (the paper's) or ``"document"`` (the
#: question's own concepts left out: ~80% of ``a_i`` is otherwise the same question words for
#: every candidate, which pulls all node vectors towards the question; docs/grag.md)
PATH_MODES: tuple[str, ...] = ("all", "document")
CONCEPT_KINDS: tuple[str, str] = ("concept_nodes", "concept_edges")


def path_concepts(question: ConceptGraph, document: ConceptGraph, paths: str = "all") -> list[str]:
    """The concepts of ``a_i`` in order (the ``question`` node itself included, as in the
    paper's example); ``paths="document"`` leaves out the question's own concepts."""
    if paths not in PATH_MODES:
        raise InputError(f"paths must be one of {PATH_MODES}, got {paths!r}")
    seen: dict[str, None] = {}
    for path in shortest_paths(question_graph(question, document), QUESTION_NODE):
        for concept in path:
            seen.setdefault(concept, None)
    if paths == "document":
        own = set(question.nodes) | {QUESTION_NODE}
        return [c for c in seen if c not in own]
    return list(seen)


def node_texts(
    texts: Sequence[str],
    documents: Sequence[ConceptGraph],
    question: ConceptGraph,
    paths: str = "all",
) -> list[str]:
    """``concat(p_i, a_i)`` for every candidate (eq. 2)."""
    return [
        f"{text}\n{' '.join(path_concepts(question, doc, paths))}"
        for text, doc in zip(texts, documents, strict=True)
    ]


@dataclass(frozen=True)
class EdgeArrays:
    edge_index: np.ndarray  # (2, E) int64: source, target (both directions present)
    edge_weight: np.ndarray  # (E, 2) float32: normalised common nodes, common edges


def _normalised(matrix: sp.csr_matrix) -> sp.csr_matrix:
    out = sp.csr_matrix(matrix, dtype=np.float64)
    if out.nnz:
        top = float(out.data.max())
        if top > 0:
            out.data /= top
    return out


def edge_arrays(
    n: int,
    documents: Sequence[ConceptGraph] | None = None,
    question: ConceptGraph | None = None,
    graph: str = "question",
    by_kind: Mapping[str, sp.csr_matrix] | None = None,
) -> EdgeArrays:
    """Edges and their two normalised features. ``graph="documents"`` reads the counts from
    ``by_kind`` (the ``SharedConcepts`` proximities) when both kinds are there, else computes
    them from ``documents``; ``"question"`` always computes them (it needs the question)."""
    if graph not in GRAPH_MODES:
        raise InputError(f"graph must be one of {GRAPH_MODES}, got {graph!r}")
    if graph == "documents" and by_kind is not None and all(k in by_kind for k in CONCEPT_KINDS):
        nodes, edges = (sp.csr_matrix(by_kind[k]) for k in CONCEPT_KINDS)
    else:
        if documents is None or len(documents) != n:
            raise InputError(f"need {n} document concept graphs to build G-RAG's edges")
        if graph == "question" and question is None:
            raise InputError("graph='question' needs the question's concept graph")
        nodes, edges = concept_overlaps(documents, question if graph == "question" else None)
    nodes, edges = _normalised(nodes), _normalised(edges)
    pattern = (nodes + edges).tocoo()
    pattern.sum_duplicates()
    keep = pattern.row != pattern.col
    rows, cols = pattern.row[keep].astype(np.int64), pattern.col[keep].astype(np.int64)
    weight = np.zeros((rows.size, 2), dtype=np.float32)
    if rows.size:
        weight[:, 0] = np.asarray(nodes[rows, cols]).ravel()
        weight[:, 1] = np.asarray(edges[rows, cols]).ravel()
    # A[i, j] links i and j; the message goes j -> i (symmetric anyway)
    return EdgeArrays(np.stack([cols, rows]), weight)
