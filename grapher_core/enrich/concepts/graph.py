"""The concept graph value: labelled concepts and edges, unions of graphs, G-RAG's ``G_qp``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

QUESTION_NODE = "question"

_DELIMITERS = re.compile(r"[|;,\n\t]+")


def normalise_concept(text: str) -> str:
    """Lower-case, collapse whitespace, drop list delimiters (they would split a stored value)."""
    return " ".join(_DELIMITERS.sub(" ", text).split()).casefold()


@dataclass(frozen=True)
class ConceptGraph:
    """Concepts (distinct labels) and labelled directed edges ``(source, role, target)``.

    ``roots``: the concepts a ``question`` node links to (the root concepts of each sentence).
    Identity is by label, as G-RAG counts "common nodes" between two graphs by concept.
    """

    nodes: tuple[str, ...] = ()
    edges: tuple[tuple[str, str, str], ...] = ()
    roots: tuple[str, ...] = ()

    def node_set(self) -> frozenset[str]:
        return frozenset(self.nodes)

    def edge_set(self) -> frozenset[tuple[str, str]]:
        """Edges as unordered concept pairs: what "common edges" compares (roles differ
        between parsers and directions between sentences, the connection is the same)."""
        return frozenset((a, b) if a <= b else (b, a) for a, _, b in self.edges)

    def union(self, other: ConceptGraph) -> ConceptGraph:
        nodes = dict.fromkeys(self.nodes + other.nodes)
        edges = dict.fromkeys(self.edges + other.edges)
        return ConceptGraph(
            tuple(nodes), tuple(edges), tuple(dict.fromkeys(self.roots + other.roots))
        )


def united(graphs: Sequence[ConceptGraph]) -> ConceptGraph:
    """One graph holding every graph's nodes, edges and roots, each once, in first-seen order:
    how pieces of one text, or the AMRs of one PENMAN string, become one graph."""
    if len(graphs) == 1:
        return graphs[0]
    nodes: dict[str, None] = {}
    edges: dict[tuple[str, str, str], None] = {}
    roots: dict[str, None] = {}
    for graph in graphs:
        nodes.update(dict.fromkeys(graph.nodes))
        edges.update(dict.fromkeys(graph.edges))
        roots.update(dict.fromkeys(graph.roots))
    return ConceptGraph(tuple(nodes), tuple(edges), tuple(roots))


def question_graph(question: ConceptGraph, document: ConceptGraph) -> ConceptGraph:
    """G-RAG's ``G_qp`` as the union of the two parses, with a ``question`` node linked to the
    question's root concepts (its concepts when it has no root)."""
    anchors = question.roots or question.nodes
    link = tuple((QUESTION_NODE, "question", a) for a in anchors)
    merged = question.union(document)
    return ConceptGraph((QUESTION_NODE, *merged.nodes), link + merged.edges, (QUESTION_NODE,))
