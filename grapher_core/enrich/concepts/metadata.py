"""How a concept graph lives in metadata: the store-safe list form written and read, and the
reader that picks the list form or PENMAN by the field's format.

A concept graph is a store-safe list of strings (Chroma, Qdrant, JSON, delimited): a node is its
concept, an edge is ``"<source> :<role> <target>"``. The parser's concepts are lower-cased,
whitespace-collapsed and free of list delimiters; any other character the list form would change
is escaped (:mod:`~grapher_core.enrich.concepts.escape`), so every graph whose edge ends and
roots are among its nodes comes back exactly, in every list shape.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from grapher_core.enrich.concepts.escape import escape, unescape
from grapher_core.enrich.concepts.graph import ConceptGraph
from grapher_core.enrich.concepts.penman import penman_to_graph
from grapher_core.errors import InputError
from grapher_core.metadata import read_list

CONCEPT_FORMATS: tuple[str, ...] = ("concepts", "penman")
"""How a concept graph can be stored in metadata: this module's list form, or AMR in PENMAN."""
_EDGE = re.compile(r"^(.+?) :(\S+) (.+)$")


def encode_graph(graph: ConceptGraph) -> list[str]:
    """The store-safe list form: nodes first (roots marked ``"<concept> :root"``), then edges.

    Roots are marked in place when they come in node order (what the parser writes), else
    listed after the nodes, so :func:`decode_graph` gives back the same roots in the same
    order. Concepts and roles are escaped where the list form would change them (module
    docstring); an empty concept or role has no list form and is refused.
    """
    root_set = set(graph.roots)
    in_order = [n for n in graph.nodes if n in root_set]
    in_place = list(graph.roots) == in_order
    marked = root_set if in_place else set()
    out = [f"{escape(n)} :root" if n in marked else escape(n) for n in graph.nodes]
    if not in_place:
        out += [f"{escape(r)} :root" for r in dict.fromkeys(graph.roots)]
    out += [f"{escape(s)} :{escape(r, role=True)} {escape(t)}" for s, r, t in graph.edges]
    return out


def decode_graph(values: Iterable[str]) -> ConceptGraph:
    """Inverse of :func:`encode_graph`; edge endpoints missing from the nodes are added."""
    nodes: dict[str, None] = {}
    edges: dict[tuple[str, str, str], None] = {}
    roots: dict[str, None] = {}
    for value in values:
        if value.endswith(" :root"):
            concept = unescape(value[: -len(" :root")])
            nodes.setdefault(concept, None)
            roots.setdefault(concept, None)
            continue
        match = _EDGE.match(value)
        if match is None:
            nodes.setdefault(unescape(value), None)
            continue
        source, role, target = (unescape(part) for part in match.groups())
        nodes.setdefault(source, None)
        nodes.setdefault(target, None)
        edges[(source, role, target)] = None
    return ConceptGraph(tuple(nodes), tuple(edges), tuple(roots))


def read_graph(value: Any, fmt: str = "concepts") -> ConceptGraph:
    """A concept graph from a metadata value: ``fmt="concepts"`` (any list shape written by
    :func:`encode_graph`) or ``"penman"`` (AMR in PENMAN notation). Missing gives an empty graph;
    malformed PENMAN raises ``ValueError`` naming the problem."""
    if fmt == "penman":
        if value is None or (isinstance(value, str) and not value.strip()):
            return ConceptGraph()
        if not isinstance(value, str):
            raise InputError(f"a PENMAN field must be a string, got {type(value).__name__}")
        return penman_to_graph(value)
    if fmt != "concepts":
        raise InputError(f"concept graph format must be one of {CONCEPT_FORMATS}, got {fmt!r}")
    return decode_graph(read_list(value, delimiters="|;\n"))
