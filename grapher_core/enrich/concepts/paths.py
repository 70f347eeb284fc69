"""G-RAG's node text (eq. 2): the concepts along the shortest paths from the question node."""

from __future__ import annotations

from collections import deque

from grapher_core.enrich.concepts.graph import QUESTION_NODE, ConceptGraph


def shortest_paths(graph: ConceptGraph, source: str = QUESTION_NODE) -> list[list[str]]:
    """Single-source shortest paths (BFS over undirected edges, neighbours in edge order) that
    are not a prefix -- hence not a subset -- of another kept path: one path per BFS-tree leaf.
    Empty when ``source`` is not in the graph."""
    neighbours: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for s, _, t in graph.edges:
        neighbours.setdefault(s, []).append(t)
        neighbours.setdefault(t, []).append(s)
    if source not in neighbours:
        return []
    parent: dict[str, str | None] = {source: None}
    order = [source]
    queue = deque([source])
    children: dict[str, int] = {source: 0}
    while queue:
        node = queue.popleft()
        for other in neighbours[node]:
            if other not in parent:
                parent[other] = node
                children[other] = 0
                children[node] += 1
                order.append(other)
                queue.append(other)
    paths = []
    for node in order:
        if children[node] or (node == source and len(order) > 1):
            continue
        path: list[str] = []
        walk: str | None = node
        while walk is not None:
            path.append(walk)
            walk = parent[walk]
        paths.append(path[::-1])
    return paths


def path_text(graph: ConceptGraph, source: str = QUESTION_NODE) -> str:
    """G-RAG's ``a_i``: the concepts along the kept shortest paths, in order, de-duplicated."""
    seen: dict[str, None] = {}
    for path in shortest_paths(graph, source):
        for concept in path:
            seen.setdefault(concept, None)
    return " ".join(seen)
