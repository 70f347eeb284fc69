"""A picture of one reranking: the candidate graph, who moved, and why the newcomers came up.

>>> result = reranker.run(candidates, query=question, top_n=5)
>>> draw(result, "graph.png")          # or fig = draw(result); result.draw("graph.png")

Nodes are coloured by how they moved between the retriever's order and the reranked one
(up, down, unchanged); the candidates that entered the top k are gold, ringed and labelled
with their strongest neighbour (the largest share of the smoothing term, as in the
explanations). Edges are styled by kind (structural, conceptual, contextual, semantic).

Needs the ``draw`` extra (``matplotlib``, ``networkx``), imported only when drawing. It draws
on a bare ``matplotlib.figure.Figure`` (no pyplot, no GUI backend, no global figure state), so
it works headless, in threads and in notebooks alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, cast

from grapher_core.errors import InputError, MissingDependencyError

__all__ = ["EDGE_STYLES", "MOVE_COLOURS", "NEWCOMER_COLOUR", "Drawable", "draw"]

MOVE_COLOURS: Mapping[str, str] = {"up": "#2e7d32", "down": "#c62828", "same": "#9e9e9e"}
"""Node colour by ``moved`` (see :meth:`grapher_core.rerank.Reranking.to_networkx`)."""
NEWCOMER_COLOUR = "#f9a825"
"""Candidates that entered the top k (gold, black ring, labelled with why)."""
EDGE_STYLES: Mapping[str, tuple[str, str]] = {
    "structural": ("#212121", "solid"),
    "conceptual": ("#6a1b9a", "dashed"),
    "contextual": ("#1565c0", "dotted"),
    "semantic": ("#00838f", "dashdot"),
}
"""(colour, line style) by edge kind; other kinds and pairs linked by several: brown, solid."""
_OTHER_EDGE = ("#8d6e63", "solid")
_MOVE_LABELS = {"up": "moved up", "down": "moved down", "same": "same rank"}


class Drawable(Protocol):
    """What :func:`draw` reads: a :class:`grapher_core.rerank.Reranking` (not imported here, so
    the reranker can offer ``.draw()`` without an import circle)."""

    def to_networkx(self, top_k: int | None = None) -> Any: ...


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingDependencyError(
            f"drawing a reranking needs {module.split('.')[0]}: pip install 'grapher-rerank[draw]'"
        ) from error


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 1)] + "…"


def draw(
    reranking: Drawable,
    path: str | Path | None = None,
    *,
    top_k: int | None = None,
    title: str | None = None,
    label_chars: int = 28,
    label_all: bool | None = None,
    seed: int = 0,
    figsize: tuple[float, float] = (10.0, 7.5),
    dpi: int = 110,
) -> Any:
    """Draw the candidate graph of ``reranking``; save it as a PNG at ``path`` when given.

    Returns the ``matplotlib.figure.Figure``. ``top_k``: which top counts for "newcomer"
    (default: the call's ``top_n``, else 10); the top-k candidates are labelled with their id
    (cut to ``label_chars``), newcomers also with ``via <neighbour> (<kinds>)``; the others too,
    in small grey, when ``label_all`` (default: for 30 candidates or fewer). Node size follows
    the new rank. ``seed`` fixes the spring layout, so the same call draws the same
    picture.
    """
    nx = _require("networkx")
    _require("matplotlib")
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    if isinstance(label_chars, bool) or not isinstance(label_chars, int) or label_chars < 4:
        raise InputError(f"label_chars must be an integer >= 4, got {label_chars!r}")
    graph = reranking.to_networkx(top_k)
    k = int(graph.graph.get("top_k", 0))
    figure = Figure(figsize=figsize, dpi=dpi)
    ax = figure.add_subplot()
    ax.set_axis_off()
    n = graph.number_of_nodes()
    if title is None:
        title = (
            f"{n} candidates, {graph.number_of_edges()} directed edges; "
            f"top {k} after reranking (gold: new in the top {k})"
        )
    ax.set_title(title, fontsize=10)
    if n == 0:
        ax.text(0.5, 0.5, "no candidates", ha="center", va="center", transform=ax.transAxes)
        _save(figure, path)
        return figure
    position = nx.spring_layout(
        graph.to_undirected(as_view=True), seed=seed, weight="weight", k=1.5 / max(n, 1) ** 0.5
    )

    # Edges: one line per linked pair (a symmetric link drawn once), styled by kind.
    segments: dict[tuple[str, str], list[Any]] = {}
    kinds_seen: dict[str, tuple[str, str]] = {}
    done: set[frozenset[str]] = set()
    for u, v, data in graph.edges(data=True):
        pair = frozenset((u, v))
        if pair in done:
            continue
        done.add(pair)
        style = EDGE_STYLES.get(data["kind"], _OTHER_EDGE)
        kinds_seen[data["kind"] if data["kind"] in EDGE_STYLES else "other/several"] = style
        segments.setdefault(style, []).append((position[u], position[v]))
    for (colour, line_style), lines in segments.items():
        ax.add_collection(
            LineCollection(
                lines, colors=colour, linestyles=line_style, linewidths=1.3, alpha=0.7, zorder=1
            )
        )

    # Nodes: colour by move, gold for newcomers, ring for the top k, size by the new rank.
    nodes = list(graph.nodes(data=True))
    xs = [position[node][0] for node, _ in nodes]
    ys = [position[node][1] for node, _ in nodes]
    colours = [
        NEWCOMER_COLOUR if data["newcomer"] else MOVE_COLOURS[data["moved"]] for _, data in nodes
    ]
    sizes = [60.0 + 340.0 * (1.0 - (data["rank_after"] - 1) / max(n - 1, 1)) for _, data in nodes]
    rings = ["#000000" if data["in_top_k"] else "#ffffff" for _, data in nodes]
    widths = [2.0 if data["newcomer"] else 1.2 if data["in_top_k"] else 0.5 for _, data in nodes]
    ax.scatter(xs, ys, s=sizes, c=colours, edgecolors=rings, linewidths=widths, zorder=2)

    # Labels: the top k by id and new rank; newcomers say which neighbour lifted them.
    every = n <= 30 if label_all is None else label_all
    for node, data in nodes:
        if not data["in_top_k"]:
            if every:
                x, y = position[node]
                ax.annotate(
                    f"{data['rank_after']}. {_short(str(node), label_chars)}",
                    (x, y),
                    xytext=(5, -9),
                    textcoords="offset points",
                    fontsize=7,
                    color="#616161",
                    zorder=3,
                )
            continue
        label = f"{data['rank_after']}. {_short(str(node), label_chars)}"
        if data["newcomer"]:
            label += f" (was {data['rank_before']})"
            if data["why"] is not None:
                kinds = "+".join(data["why_kinds"]) or "link"
                label += f"\nvia {_short(str(data['why']), label_chars)} ({kinds})"
        x, y = position[node]
        ax.annotate(
            label,
            (x, y),
            xytext=(6, 6),
            textcoords="offset points",
            fontsize=8,
            fontweight="bold" if data["newcomer"] else "normal",
            zorder=3,
        )

    handles = [
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            color=NEWCOMER_COLOUR,
            markeredgecolor="black",
            label=f"new in top {k}",
        ),
        *(
            Line2D([], [], marker="o", linestyle="", color=colour, label=_MOVE_LABELS[move])
            for move, colour in MOVE_COLOURS.items()
        ),
        *(
            Line2D([], [], color=colour, linestyle=cast(Any, line_style), label=f"{kind} edges")
            for kind, (colour, line_style) in sorted(kinds_seen.items())
        ),
    ]
    ax.legend(handles=handles, loc="lower left", fontsize=8, frameon=False)
    ax.autoscale_view()
    ax.margins(0.12)
    _save(figure, path)
    return figure


def _save(figure: Any, path: str | Path | None) -> None:
    if path is not None:
        figure.savefig(Path(path), format="png", bbox_inches="tight")
