"""GRAG's hierarchical description with relation text on every edge (GRAG paper 4.2, A.1).

One ego-graph per seed (the best-ranked objects), rendered by pre-order traversal of its BFS
tree; each edge carries the phrase of the metadata that made it
(:mod:`grapher_core.expand.relations`: join columns for foreign keys, "mentions", "next
chunk")::

    [ROOT] concert.
    Columns: concert_ID, concert_Name, Stadium_ID, Year
    concert is connected to:
      1.1 stadium via concert.Stadium_ID = stadium.Stadium_ID.
      Columns: Stadium_ID, Location, Name, Capacity
    Other connections:
      - singer_in_concert -- singer via singer_in_concert.Singer_ID = singer.Singer_ID.

Children are ordered by query similarity when a query embedding is given (GRAG keeps the top
nodes and edges per ego-graph), and ``max_children`` keeps that many per node. Edges among the
rendered objects that the trees do not use are listed under "Other connections", so every edge
of the rendered subgraph appears exactly once (:attr:`RelationView.edges` lists them).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from grapher_core.candidates import Candidate, RankedCandidate
from grapher_core.edges.base import Proximity
from grapher_core.errors import InputError
from grapher_core.expand.relations import relations_between
from grapher_core.expand.textview import view_inputs

__all__ = ["RelationView", "format_relation_context", "relation_view"]


@dataclass(frozen=True)
class RelationView:
    """Rendered lines plus the edges they show: ``(a_id, b_id, relation, "tree"|"other")``."""

    lines: tuple[str, ...]
    edges: tuple[tuple[str, str, str, str], ...]
    roots: tuple[str, ...]

    def render(self) -> str:
        return "\n".join(self.lines)


def relation_view(
    objects: Sequence[Candidate | RankedCandidate],
    proximities: Sequence[Proximity],
    *,
    seeds: int | Sequence[str] = 3,
    query_embedding: np.ndarray | None = None,
    max_children: int | None = None,
    max_chars: int | None = 300,
    title: Callable[[Candidate], str] | None = None,
) -> RelationView:
    """Ego-graph trees from the seeds with relation text; objects no seed reaches (or beyond
    ``max_children``) become roots of their own, in rank order."""
    if max_children is not None and max_children < 0:
        raise InputError(f"max_children must be >= 0, got {max_children}")
    items, roots, _, undirected = view_inputs(objects, proximities, seeds)
    n = len(items)
    name = title or _title
    similarity = _similarities(items, query_embedding)

    def neighbours(i: int) -> list[int]:
        found = [
            int(j)
            for j in undirected.indices[undirected.indptr[i] : undirected.indptr[i + 1]]
            if int(j) != i
        ]
        return sorted(found, key=lambda j: (-similarity[j], j))

    def relation(i: int, j: int) -> str:
        return "; ".join(relations_between(items[i], items[j], proximities)) or "linked to"

    parent: dict[int, int | None] = {}
    children: dict[int, list[int]] = {}
    order: list[int] = []

    def grow(root: int) -> None:
        parent[root] = None
        order.append(root)
        queue = deque([root])
        while queue:
            i = queue.popleft()
            for j in neighbours(i):
                if j in parent:
                    continue
                if max_children is not None and len(children.get(i, [])) >= max_children:
                    break
                parent[j] = i
                children.setdefault(i, []).append(j)
                queue.append(j)

    for root in roots:
        if root not in parent:
            grow(root)
    for i in range(n):
        if i not in parent:
            grow(i)
    lines: list[str] = []
    edges: list[tuple[str, str, str, str]] = []

    def text_of(i: int) -> str:
        text = " ".join(items[i].text.split())
        first = name(items[i])
        if text.startswith(first):
            text = text[len(first) :].lstrip(" .:-")
        if max_chars is not None and len(text) > max_chars:
            text = text[: max(max_chars - 1, 0)].rstrip() + "…"
        return text

    def visit(i: int, label: str, depth: int) -> None:
        pad = "  " * depth
        if children.get(i):
            lines.append(f"{pad}{name(items[i])} is connected to:")
        for number, j in enumerate(children.get(i, []), start=1):
            child = f"{label}.{number}"
            rel = relation(i, j)
            edges.append((items[i].id, items[j].id, rel, "tree"))
            lines.append(f"{pad}  {child} {name(items[j])} via {rel}.")
            body = text_of(j)
            if body:
                lines.append(f"{pad}  {body}")
            visit(j, child, depth + 1)

    root_ids: list[str] = []
    for number, root in enumerate(order, start=1):
        root_ids.append(items[root].id)
        lines.append(f"[ROOT] {name(items[root])}.")
        body = text_of(root)
        if body:
            lines.append(body)
        visit(root, str(number), 0)
    coo = undirected.tocoo()
    other = sorted(
        {
            (min(int(a), int(b)), max(int(a), int(b)))
            for a, b in zip(coo.row, coo.col, strict=True)
            if a != b
        }
        - {(min(i, p), max(i, p)) for i, p in parent.items() if p is not None}
    )
    if other:
        lines.append("Other connections:")
        for a, b in other:
            rel = relation(a, b)
            edges.append((items[a].id, items[b].id, rel, "other"))
            lines.append(f"  - {name(items[a])} -- {name(items[b])} via {rel}.")
    return RelationView(tuple(lines), tuple(edges), tuple(root_ids))


def format_relation_context(
    objects: Sequence[Candidate | RankedCandidate],
    proximities: Sequence[Proximity],
    *,
    seeds: int | Sequence[str] = 3,
    query_embedding: np.ndarray | None = None,
    max_children: int | None = None,
    max_chars: int | None = 300,
) -> str:
    """:func:`relation_view` rendered as text, ready for a prompt."""
    return relation_view(
        objects,
        proximities,
        seeds=seeds,
        query_embedding=query_embedding,
        max_children=max_children,
        max_chars=max_chars,
    ).render()


def _similarities(items: Sequence[Candidate], query: np.ndarray | None) -> np.ndarray:
    """Query cosine per object (0 where a vector is missing), for ordering children."""
    out = np.zeros(len(items))
    if query is None:
        return out
    q = np.asarray(query, dtype=np.float64).ravel()
    norm = float(np.linalg.norm(q))
    if norm == 0:
        return out
    for i, c in enumerate(items):
        if c.embedding is not None:
            v = np.asarray(c.embedding, dtype=np.float64).ravel()
            if v.shape == q.shape and np.linalg.norm(v) > 0:
                out[i] = float(v @ q / (norm * np.linalg.norm(v)))
    return out


def _title(candidate: Candidate) -> str:
    for key in ("table", "title", "name"):
        value = candidate.metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return candidate.id
