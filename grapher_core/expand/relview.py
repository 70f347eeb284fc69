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
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

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
    similarity = _similarities(items, query_embedding)
    forest = _grow_forest(
        len(items),
        roots,
        lambda i: _neighbours_by_similarity(undirected, i, similarity),
        max_children,
    )
    writer = _ViewWriter(items, proximities, title or _title, max_chars)
    for number, root in enumerate(forest.order, start=1):
        writer.write_tree(root, str(number), forest.children)
    writer.write_other_connections(_edges_off_the_trees(undirected, forest.parent))
    return writer.view(forest.order)


@dataclass
class _Forest:
    """BFS trees over the objects: each one's parent (``None`` for roots), the children in
    visiting order and the roots in the order they were grown."""

    parent: dict[int, int | None] = field(default_factory=dict)
    children: dict[int, list[int]] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)


def _grow_forest(
    n: int,
    roots: Sequence[int],
    neighbours: Callable[[int], list[int]],
    max_children: int | None,
) -> _Forest:
    """Trees from the seeds first, then from every object still unreached, in rank order, so
    each object is rendered exactly once."""
    forest = _Forest()
    for root in [*roots, *range(n)]:
        if root not in forest.parent:
            _grow_tree(forest, root, neighbours, max_children)
    return forest


def _grow_tree(
    forest: _Forest,
    root: int,
    neighbours: Callable[[int], list[int]],
    max_children: int | None,
) -> None:
    """Breadth-first from ``root`` over objects no tree holds yet, at most ``max_children``
    children per node."""
    forest.parent[root] = None
    forest.order.append(root)
    queue = deque([root])
    while queue:
        i = queue.popleft()
        for j in neighbours(i):
            if j in forest.parent:
                continue
            if max_children is not None and len(forest.children.get(i, [])) >= max_children:
                break
            forest.parent[j] = i
            forest.children.setdefault(i, []).append(j)
            queue.append(j)


def _neighbours_by_similarity(
    undirected: sp.csr_matrix, i: int, similarity: np.ndarray
) -> list[int]:
    """The objects linked to ``i``, most query-similar first (GRAG keeps the top ones)."""
    found = [
        int(j)
        for j in undirected.indices[undirected.indptr[i] : undirected.indptr[i + 1]]
        if int(j) != i
    ]
    return sorted(found, key=lambda j: (-similarity[j], j))


def _edges_off_the_trees(
    undirected: sp.csr_matrix, parent: dict[int, int | None]
) -> list[tuple[int, int]]:
    """The links the trees do not show, as sorted ``(low, high)`` pairs, so none is lost."""
    coo = undirected.tocoo()
    linked = {
        (min(int(a), int(b)), max(int(a), int(b)))
        for a, b in zip(coo.row, coo.col, strict=True)
        if a != b
    }
    in_trees = {(min(i, p), max(i, p)) for i, p in parent.items() if p is not None}
    return sorted(linked - in_trees)


class _ViewWriter:
    """Collects the rendered lines and the edges they show while the trees are walked."""

    def __init__(
        self,
        items: Sequence[Candidate],
        proximities: Sequence[Proximity],
        name: Callable[[Candidate], str],
        max_chars: int | None,
    ) -> None:
        self.items = items
        self.proximities = proximities
        self.name = name
        self.max_chars = max_chars
        self.lines: list[str] = []
        self.edges: list[tuple[str, str, str, str]] = []

    def write_tree(self, root: int, label: str, children: dict[int, list[int]]) -> None:
        """One root: its title, its text, then its subtree."""
        self.lines.append(f"[ROOT] {self.name(self.items[root])}.")
        body = self._body(root)
        if body:
            self.lines.append(body)
        self._write_children(root, label, 0, children)

    def write_other_connections(self, pairs: Sequence[tuple[int, int]]) -> None:
        """The links no tree shows, each with its relation text."""
        if not pairs:
            return
        self.lines.append("Other connections:")
        for a, b in pairs:
            rel = self._relation(a, b)
            self.edges.append((self.items[a].id, self.items[b].id, rel, "other"))
            self.lines.append(
                f"  - {self.name(self.items[a])} -- {self.name(self.items[b])} via {rel}."
            )

    def view(self, order: Sequence[int]) -> RelationView:
        return RelationView(
            tuple(self.lines), tuple(self.edges), tuple(self.items[i].id for i in order)
        )

    def _write_children(
        self, i: int, label: str, depth: int, children: dict[int, list[int]]
    ) -> None:
        """Pre-order: each child with the relation that links it, then its own children."""
        pad = "  " * depth
        if children.get(i):
            self.lines.append(f"{pad}{self.name(self.items[i])} is connected to:")
        for number, j in enumerate(children.get(i, []), start=1):
            child = f"{label}.{number}"
            rel = self._relation(i, j)
            self.edges.append((self.items[i].id, self.items[j].id, rel, "tree"))
            self.lines.append(f"{pad}  {child} {self.name(self.items[j])} via {rel}.")
            body = self._body(j)
            if body:
                self.lines.append(f"{pad}  {body}")
            self._write_children(j, child, depth + 1, children)

    def _relation(self, i: int, j: int) -> str:
        found = relations_between(self.items[i], self.items[j], self.proximities)
        return "; ".join(found) or "linked to"

    def _body(self, i: int) -> str:
        """The object's text on one line, its title not repeated, cut to ``max_chars``."""
        text = " ".join(self.items[i].text.split())
        first = self.name(self.items[i])
        if text.startswith(first):
            text = text[len(first) :].lstrip(" .:-")
        if self.max_chars is not None and len(text) > self.max_chars:
            text = text[: max(self.max_chars - 1, 0)].rstrip() + "…"
        return text


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
