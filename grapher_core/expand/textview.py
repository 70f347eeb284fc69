"""Graph-shaped context for the prompt: GRAG's "text view" of the retrieved subgraph.

The final objects are rendered as a hierarchy -- a breadth-first tree grown from the seeds (the
best-ranked objects), each child indented under the object that links to it -- followed by the
links the tree does not show ("extra edges"), so the conversion loses no edge (GRAG paper A.1)::

    [1] Inception (film)
        Inception is a 2010 film directed by Christopher Nolan...
      [1.1] Christopher Nolan  <- structural
          Christopher Nolan is a British-American film director...
    [2] ...
    Other links:
    - [1.1] -- [2] (structural)

Objects that no seed reaches become roots of their own, in rank order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import scipy.sparse as sp

from grapher_core.candidates import Candidate, RankedCandidate
from grapher_core.edges.base import Proximity
from grapher_core.edges.graph import CandidateGraph, build_graph
from grapher_core.errors import InputError
from grapher_core.request.validation import validate_candidates

__all__ = ["TextView", "TextViewNode", "format_graph_context", "text_view"]


@dataclass(frozen=True)
class TextViewNode:
    """One object in the tree: its label (``"1.2"``), depth, parent label and edge kinds."""

    label: str
    candidate: Candidate
    depth: int
    parent: str | None
    kinds: tuple[str, ...]


@dataclass(frozen=True)
class TextView:
    """The tree (pre-order) and the edges left out of it (label pairs with their kinds)."""

    nodes: tuple[TextViewNode, ...]
    extra_edges: tuple[tuple[str, str, tuple[str, ...]], ...]

    def render(
        self,
        *,
        max_chars: int | None = 400,
        indent: str = "  ",
        title: Callable[[Candidate], str] | None = None,
    ) -> str:
        """The hierarchical description as text; ``max_chars`` truncates each object's text."""
        name = title or _title
        lines: list[str] = []
        for node in self.nodes:
            pad = indent * node.depth
            via = f"  <- {', '.join(node.kinds)}" if node.parent is not None else ""
            lines.append(f"{pad}[{node.label}] {name(node.candidate)}{via}")
            text = " ".join(node.candidate.text.split())
            if max_chars is not None and len(text) > max_chars:
                text = text[: max(max_chars - 1, 0)].rstrip() + "…"
            if text:
                lines.append(f"{pad}{indent}{indent}{text}")
        if self.extra_edges:
            lines.append("Other links:")
            lines.extend(
                f"- [{a}] -- [{b}] ({', '.join(kinds)})" for a, b, kinds in self.extra_edges
            )
        return "\n".join(lines)


def view_inputs(
    objects: Sequence[Candidate | RankedCandidate],
    proximities: Sequence[Proximity],
    seeds: int | Sequence[str],
) -> tuple[list[Candidate], list[int], CandidateGraph, sp.csr_matrix]:
    """What every text view starts from: the objects (checked), the positions of the seeds
    (the first ``seeds`` objects, or the given ids), their graph and its undirected form (a link
    either way connects two objects in a prompt)."""
    items = validate_candidates(
        [o.candidate if isinstance(o, RankedCandidate) else o for o in objects]
    )
    position = {c.id: i for i, c in enumerate(items)}
    if isinstance(seeds, int):
        if seeds < 0:
            raise InputError(f"seeds must be >= 0, got {seeds}")
        roots = list(range(min(seeds, len(items))))
    else:
        unknown = [s for s in seeds if s not in position]
        if unknown:
            raise InputError(f"seed ids not among the objects: {unknown[:5]}")
        roots = [position[s] for s in dict.fromkeys(seeds)]
    graph = build_graph(items, proximities)
    return items, roots, graph, (graph.adjacency + graph.adjacency.T).tocsr()


def text_view(
    objects: Sequence[Candidate | RankedCandidate],
    proximities: Sequence[Proximity],
    *,
    seeds: int | Sequence[str] = 3,
    max_depth: int | None = None,
) -> TextView:
    """Split the objects' graph into a BFS tree from the seeds plus the remaining edges.

    ``objects`` are in rank order (best first); ``seeds`` is how many of the first ones root
    the tree, or their ids. Edges are taken undirected (a link either way connects two
    objects in the prompt). ``max_depth`` caps the tree depth; deeper objects become roots.
    """
    items, roots, graph, undirected = view_inputs(objects, proximities, seeds)
    n = len(items)
    kinds_of = {kind: (m + m.T).tocsr() for kind, m in graph.by_kind.items()}

    def kinds(i: int, j: int) -> tuple[str, ...]:
        return tuple(k for k, m in kinds_of.items() if m[i, j] > 0)

    parent: dict[int, int | None] = {}
    depth: dict[int, int] = {}
    children: dict[int, list[int]] = {}
    order_roots: list[int] = []

    def grow(root: int) -> None:
        parent[root], depth[root] = None, 0
        order_roots.append(root)
        queue = deque([root])
        while queue:
            i = queue.popleft()
            if max_depth is not None and depth[i] >= max_depth:
                continue
            for j in _neighbours(undirected, i):
                if j not in parent:
                    parent[j], depth[j] = i, depth[i] + 1
                    children.setdefault(i, []).append(j)
                    queue.append(j)

    for root in roots:
        if root not in parent:
            grow(root)
    for i in range(n):  # objects no seed reaches: their own trees, in rank order
        if i not in parent:
            grow(i)
    labels: dict[int, str] = {}
    nodes: list[TextViewNode] = []

    def visit(i: int, label: str) -> None:  # pre-order traversal
        labels[i] = label
        up = parent[i]
        nodes.append(
            TextViewNode(
                label,
                items[i],
                depth[i],
                None if up is None else labels[up],
                () if up is None else kinds(up, i),
            )
        )
        for number, j in enumerate(children.get(i, []), start=1):
            visit(j, f"{label}.{number}")

    for number, root in enumerate(order_roots, start=1):
        visit(root, str(number))
    coo = sp.triu(undirected, k=1).tocoo()
    extra = sorted(
        (labels[int(i)], labels[int(j)], kinds(int(i), int(j)))
        for i, j in zip(coo.row, coo.col, strict=True)
        if parent.get(int(j)) != int(i) and parent.get(int(i)) != int(j)
    )
    return TextView(tuple(nodes), tuple(extra))


def format_graph_context(
    objects: Sequence[Candidate | RankedCandidate],
    proximities: Sequence[Proximity],
    *,
    seeds: int | Sequence[str] = 3,
    max_chars: int | None = 400,
    max_depth: int | None = None,
) -> str:
    """:func:`text_view` rendered as text, ready for a prompt."""
    return text_view(objects, proximities, seeds=seeds, max_depth=max_depth).render(
        max_chars=max_chars
    )


def _neighbours(matrix: sp.csr_matrix, i: int) -> list[int]:
    start, end = matrix.indptr[i], matrix.indptr[i + 1]
    return sorted(int(j) for j in matrix.indices[start:end])


def _title(candidate: Candidate) -> str:
    for key in ("title", "table", "name"):
        value = candidate.metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return candidate.id
