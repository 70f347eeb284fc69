"""A picture of one reranking: the top k, who moved into it, and the neighbours that lifted them.

>>> result = reranker.run(candidates, query=question, top_n=5)
>>> draw(result, "graph.png")          # or fig = draw(result); result.draw("graph.png")

The top k after reranking stand in one column in rank order, each labelled beside its node
(``"4. pets_1.Student (was 12)"``); a candidate that moved up says which neighbour lifted it
and by how much (``"via pets_1.Has_Pet (structural), seed 0.41 → score 0.55"``). The
neighbours that lifted them from outside the top k come next, under the column, and links are
arcs to the left of it, so no node sits on an edge and no label can cover another. The
candidates that entered the top k are orange and ringed; the others are coloured by how they
moved. Every other candidate is summarised in one line of text: a picture of 50 candidates
with 35 edgeless ones explains less than its top 5 with the links that moved them.

Candidate ids are data, not markup: control characters, lone surrogates and invisible format
characters are shown as ``�``, and no text goes through mathtext or TeX (an id such as
``"$x$"`` is drawn as typed). Sizes are validated before anything is drawn, and what is
drawn is bounded by ``top_k`` (at most :data:`MAX_TOP_K`), not by the pool: only reading the
graph (``to_networkx``) is linear in it (5 000 candidates with 100 000 edges: under 2 s).

Needs the ``draw`` extra (``matplotlib``, ``networkx``), imported only when drawing. It draws
on a bare ``matplotlib.figure.Figure`` (no pyplot, no GUI backend, no global figure state), so
it works headless, in threads and in notebooks alike.
"""

from __future__ import annotations

import math
import numbers
import textwrap
import unicodedata
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from grapher_core.errors import (
    ConfigError,
    InputFileNotFoundError,
    InputTypeError,
    MissingDependencyError,
)

__all__ = [
    "EDGE_STYLES",
    "MAX_PIXELS",
    "MAX_TOP_K",
    "MOVE_COLOURS",
    "NEWCOMER_COLOUR",
    "Drawable",
    "clean_label",
    "draw",
]

MOVE_COLOURS: Mapping[str, str] = {"up": "#2e7d32", "down": "#c62828", "same": "#9e9e9e"}
"""Node colour by ``moved`` (see :meth:`grapher_core.rerank.Reranking.to_networkx`)."""
NEWCOMER_COLOUR = "#f9a825"
"""Candidates that entered the top k (orange, black ring, labelled with why)."""
EDGE_STYLES: Mapping[str, tuple[str, str]] = {
    "structural": ("#212121", "solid"),
    "conceptual": ("#6a1b9a", "dashed"),
    "contextual": ("#1565c0", "dotted"),
    "semantic": ("#00838f", "dashdot"),
}
"""(colour, line style) by edge kind; other kinds and pairs linked by several: brown, solid."""
MAX_TOP_K = 40
"""The most ranked candidates one picture shows (with at most as many neighbours): beyond
that a column of labels is no longer read, and the cost would grow with the pool."""
MAX_PIXELS = 40_000_000
"""The largest canvas (width × height in pixels, 160 MB of RGBA) ``figsize`` × ``dpi`` may ask."""
_MAX_SIDE_PIXELS = 12_000
_DPI_RANGE = (20.0, 600.0)
_FIGSIZE_RANGE = (2.0, 60.0)  # inches per side
_LABEL_CHARS_RANGE = (4, 200)
_TITLE_CHARS = 300
_TITLE_LINES = 3
_OTHER_EDGE = ("#8d6e63", "solid")
_MOVE_LABELS = {"up": "moved up", "down": "moved down", "same": "same rank"}
_SHOWN = "\ufffd"  # what a character that must not reach the font code is drawn as
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cs", "Cf", "Co", "Cn", "Zl", "Zp"})
# Layout, in inches: the default width, the row pitch, the tallest automatic height.
_WIDTH = 10.0
_PITCH = 0.46
_MIN_PITCH = 0.2  # 4.6 pt type: below it two-line labels would touch
_MAX_AUTO_HEIGHT = 30.0


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


def clean_label(text: object, limit: int | None = None, *, keep_newlines: bool = False) -> str:
    """``text`` as safe plain text for a label: ids are data, so control characters (NUL, tabs,
    newlines), lone surrogates, invisible format and unassigned characters become ``�`` (the
    font code crashes on some, and two ids differing by an invisible one would look alike);
    cut in the middle to ``limit`` characters, which keeps the end of ``db.table``-like ids."""
    shown = "".join(
        char
        if (keep_newlines and char == "\n") or unicodedata.category(char) not in _HIDDEN_CATEGORIES
        else _SHOWN
        for char in str(text)
    )
    if limit is None or len(shown) <= limit:
        return shown
    head = max((limit - 1) * 2 // 5, 1)
    tail = max(limit - 1 - head, 1)
    return shown[:head] + "…" + shown[-tail:]


def _real(value: object, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputTypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    number = float(value)
    if not math.isfinite(number) or not low <= number <= high:
        raise ConfigError(f"{name} must be a finite number from {low:g} to {high:g}, got {value!r}")
    return number


def _figsize(value: object) -> tuple[float, float] | None:
    if value is None:
        return None
    try:
        items = [] if isinstance(value, (str, bytes)) else list(cast(Any, value))
    except TypeError:
        items = []
    if len(items) != 2:
        raise InputTypeError(
            f"figsize must be (width, height) in inches, two numbers, got {value!r}"
        )
    low, high = _FIGSIZE_RANGE
    width = _real(items[0], "figsize width (inches)", low, high)
    height = _real(items[1], "figsize height (inches)", low, high)
    return width, height


def _check_canvas(width: float, height: float, dpi: float) -> None:
    across, down = width * dpi, height * dpi
    if max(across, down) > _MAX_SIDE_PIXELS or across * down > MAX_PIXELS:
        raise ConfigError(
            f"figsize × dpi asks for a {across:.0f} × {down:.0f} pixel canvas; at most "
            f"{_MAX_SIDE_PIXELS} pixels a side and {MAX_PIXELS:,} in all: lower dpi or figsize"
        )


@dataclass(frozen=True)
class _Options:
    label_chars: int
    dpi: float
    figsize: tuple[float, float] | None
    title: str | None


def _options(
    path: object,
    top_k: object,
    title: object,
    label_chars: object,
    label_all: object,
    seed: object,
    figsize: object,
    dpi: object,
) -> _Options:
    """Every option checked before anything is drawn, each error naming the option."""
    if path is not None and not isinstance(path, (str, Path)):
        raise InputTypeError(f"path must be a str or Path (or None), got {type(path).__name__}")
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
            raise ConfigError(f"top_k must be a non-negative integer or None, got {top_k!r}")
        if top_k > MAX_TOP_K:
            raise ConfigError(_too_many(top_k, None))
    if title is not None and not isinstance(title, str):
        raise InputTypeError(f"title must be a str or None, got {type(title).__name__}")
    low, high = _LABEL_CHARS_RANGE
    if isinstance(label_chars, bool) or not isinstance(label_chars, int):
        raise InputTypeError(f"label_chars must be an integer, got {label_chars!r}")
    if not low <= label_chars <= high:
        raise ConfigError(f"label_chars must be from {low} to {high}, got {label_chars!r}")
    if label_all is not None and not isinstance(label_all, bool):
        raise InputTypeError(f"label_all must be True, False or None, got {label_all!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputTypeError(f"seed must be an integer, got {seed!r}")
    if label_all is not None:
        warnings.warn(
            "draw(label_all=...) has no effect any more: every node drawn (the top k and the "
            "neighbours that lifted them) is labelled, the other candidates are summarised",
            DeprecationWarning,
            stacklevel=3,
        )
    size = _figsize(figsize)
    resolution = _real(dpi, "dpi", *_DPI_RANGE)
    if size is not None:
        _check_canvas(size[0], size[1], resolution)
    return _Options(label_chars, resolution, size, title)


def _too_many(k: int, n: int | None) -> str:
    pool = "" if n is None else f" of {n}"
    return (
        f"draw pictures at most {MAX_TOP_K} ranked candidates and the neighbours that lifted "
        f"them, not a top {k}{pool}: draw a subset with top_k=, e.g. draw(result, path, "
        f"top_k=10) or result.draw(path, top_k=10)"
    )


@dataclass(frozen=True)
class _Row:
    node: Any
    label: str
    colour: str
    ring: str
    ring_width: float
    size: float
    fontsize_scale: float
    text_colour: str
    bold: bool


def draw(
    reranking: Drawable,
    path: str | Path | None = None,
    *,
    top_k: int | None = None,
    title: str | None = None,
    label_chars: int = 40,
    label_all: bool | None = None,
    seed: int = 0,
    figsize: tuple[float, float] | None = None,
    dpi: float = 110,
) -> Any:
    """Draw the top k of ``reranking`` and the neighbours that moved them; save a PNG at ``path``.

    Returns the ``matplotlib.figure.Figure``. ``top_k``: how many ranked candidates to show
    (default: the call's ``top_n``, else 10; at most :data:`MAX_TOP_K`, a larger top is
    refused with a :class:`~grapher_core.errors.ConfigError` that says to pass ``top_k=``).
    Ids are cut in the middle to ``label_chars`` (4 to 200). ``figsize`` (inches, 2 to 60 a
    side) defaults to 10 wide and as tall as the rows need; ``dpi`` is 20 to 600, and the
    canvas at most :data:`MAX_PIXELS`. The layout is deterministic: ``seed`` is kept so older
    calls work and has no effect; ``label_all`` likewise (it warns), every drawn node is
    labelled.
    """
    _require("networkx")
    _require("matplotlib")
    from matplotlib.figure import Figure

    options = _options(path, top_k, title, label_chars, label_all, seed, figsize, dpi)
    graph = reranking.to_networkx(top_k)
    n = graph.number_of_nodes()
    k = int(graph.graph.get("top_k", 0))
    if k > MAX_TOP_K:
        raise ConfigError(_too_many(k, n))
    plan = _plan(graph, k, options.label_chars)
    width, height = options.figsize or (_WIDTH, 0.0)
    header_lines = _title_lines(options.title, k, n, width)
    header = 0.35 + 0.22 * len(header_lines)
    columns = min(len(plan.legend), max(int(width // 1.6), 1)) or 1
    footer = 0.45 + 0.2 * math.ceil(len(plan.legend) / columns)
    units = max(plan.units, 1.0)
    if options.figsize is None:
        height = min(max(header + footer + units * _PITCH + 0.3, 2.5), _MAX_AUTO_HEIGHT)
        _check_canvas(width, height, options.dpi)
    pitch = (height - header - footer - 0.3) / units
    if pitch < _MIN_PITCH:
        need = header + footer + 0.3 + units * _MIN_PITCH
        raise ConfigError(
            f"figsize height {height:g} in cannot hold {len(plan.rows)} labelled rows and the "
            f"title; it needs at least {need:.1f} in: leave figsize out (the height then follows "
            "the rows), give a taller one, or draw fewer with top_k="
        )
    fontsize = min(pitch * 72.0 / 3.1, 10.5)

    figure = Figure(figsize=(width, height), dpi=options.dpi)
    body = height - header - footer
    ax = figure.add_axes((0.0, footer / height, 1.0, body / height))
    ax.set_axis_off()
    ax.set_xticks([])  # no tick labels: none must go through the user's text.usetex
    ax.set_yticks([])
    ax.set_xlim(0.0, width)
    ax.set_ylim(-body, 0.0)
    ax.set_title("\n".join(header_lines), fontsize=11, pad=6, parse_math=False, usetex=False)
    if plan.rows:
        ys = _row_positions(plan, pitch)
        column = _column_x(ys, width)
        _draw_links(ax, plan, ys, column)
        _draw_rows(ax, plan, ys, column, fontsize, pitch)
    else:
        message = "no candidates" if n == 0 else f"top_k={k}: no ranked candidate to draw"
        ax.text(
            width / 2, -body / 2, message, ha="center", va="center", parse_math=False, usetex=False
        )
    _footer(figure, plan, n, height, footer, columns)
    _save(figure, path)
    return figure


@dataclass(frozen=True)
class _Entry:
    """One legend entry: a node colour (``marker``) or a line style, and its neutral words."""

    label: str
    colour: str
    line_style: str = ""
    marker: bool = False
    ring: bool = False
    width: float = 1.2


@dataclass(frozen=True)
class _Plan:
    rows: list[_Row]
    top: int  # the first ``top`` rows are the top k, the rest their supporting neighbours
    lifts: set[frozenset[Any]]  # the pairs (mover, the neighbour that lifted it)
    drawn: set[Any]
    isolated: int
    units: float  # rows plus the gap before the neighbours, in pitches
    caption: str
    links: list[tuple[Any, Any, tuple[str, str], bool]]  # u, v, (colour, style), lifted
    legend: list[_Entry]


def _plan(graph: Any, k: int, label_chars: int) -> _Plan:
    """Which nodes are drawn and what each says: the top k in rank order, then the neighbours
    outside it that lifted a mover (the one with the largest share of its smoothing term)."""
    nodes = graph.nodes
    top = sorted(
        (v for v, d in nodes(data=True) if d["in_top_k"]), key=lambda v: nodes[v]["rank_after"]
    )
    lifted_by: dict[Any, list[int]] = {}
    lifts: set[frozenset[Any]] = set()
    for node in top:
        data = nodes[node]
        if data["shift"] > 0 and data["why"] is not None and data["why"] in nodes:
            lifts.add(frozenset((node, data["why"])))
            if not nodes[data["why"]]["in_top_k"]:
                lifted_by.setdefault(data["why"], []).append(data["rank_after"])
    support = sorted(lifted_by, key=lambda v: nodes[v]["rank_after"])
    rows = [_top_row(v, nodes[v], label_chars) for v in top]
    for node in support:
        data = nodes[node]
        lifted = ", ".join(str(r) for r in sorted(lifted_by[node]))
        rows.append(
            _Row(
                node=node,
                label=f"{_name(node, data, label_chars)}, lifted {lifted}",
                colour=MOVE_COLOURS[data["moved"]],
                ring="#ffffff",
                ring_width=0.6,
                size=0.55,
                fontsize_scale=0.9,
                text_colour="#424242",
                bold=False,
            )
        )
    drawn = set(top) | set(support)
    isolated = sum(1 for v in nodes if v not in drawn and graph.degree(v) == 0)
    caption = f"outside the top {k}, the neighbours that lifted them:"
    units = len(top) + (len(support) + 1.0 if support else 0.0)
    links = _links(graph, drawn, lifts)
    legend = _legend(rows, k, links)
    return _Plan(rows, len(top), lifts, drawn, isolated, units, caption, links, legend)


def _links(
    graph: Any, drawn: set[Any], lifts: set[frozenset[Any]]
) -> list[tuple[Any, Any, tuple[str, str], bool]]:
    """The links among the drawn nodes, one per linked pair (a symmetric link once)."""
    out = []
    done: set[frozenset[Any]] = set()
    for u, v, data in graph.subgraph(drawn).edges(data=True):
        pair = frozenset((u, v))
        if pair in done or u == v:
            continue
        done.add(pair)
        out.append((u, v, EDGE_STYLES.get(str(data["kind"]), _OTHER_EDGE), pair in lifts))
    return out


def _legend(
    rows: list[_Row], k: int, links: list[tuple[Any, Any, tuple[str, str], bool]]
) -> list[_Entry]:
    """What the colours and lines mean, in neutral words, for what this picture shows."""
    colours = {row.colour for row in rows}
    out = []
    if NEWCOMER_COLOUR in colours:
        out.append(_Entry(f"new in the top {k}", NEWCOMER_COLOUR, marker=True, ring=True))
    out += [
        _Entry(_MOVE_LABELS[move], colour, marker=True)
        for move, colour in MOVE_COLOURS.items()
        if colour in colours
    ]
    styles = {style for _u, _v, style, _lifted in links}
    out += [
        _Entry(f"{kind} link", colour, line_style)
        for kind, (colour, line_style) in EDGE_STYLES.items()
        if (colour, line_style) in styles
    ]
    if _OTHER_EDGE in styles:
        out.append(_Entry("link of several or other kinds", *_OTHER_EDGE))
    if any(lifted for _u, _v, _style, lifted in links):
        out.append(_Entry("thick: the link that lifted it", "#212121", "solid", width=2.6))
    return out


def _name(node: Any, data: Mapping[str, Any], label_chars: int) -> str:
    label = f"{data['rank_after']}. {clean_label(node, label_chars)}"
    if data["rank_before"] != data["rank_after"]:
        label += f" (was {data['rank_before']})"
    return label


def _top_row(node: Any, data: Mapping[str, Any], label_chars: int) -> _Row:
    label = _name(node, data, label_chars)
    if data["shift"] > 0 and data["why"] is not None:
        kinds = "+".join(clean_label(kind, 30) for kind in data["why_kinds"]) or "link"
        label += (
            f"\nvia {clean_label(data['why'], label_chars)} ({kinds}), "
            f"seed {_number(data['seed'])} → score {_number(data['score'])}"
        )
    newcomer = bool(data["newcomer"])
    return _Row(
        node=node,
        label=label,
        colour=NEWCOMER_COLOUR if newcomer else MOVE_COLOURS[data["moved"]],
        ring="#000000",
        ring_width=2.2 if newcomer else 0.8,
        size=1.0,
        fontsize_scale=1.0,
        text_colour="#000000",
        bold=newcomer,
    )


def _number(value: float) -> str:
    return f"{value:.3f}" if abs(value) < 1000 else f"{value:.4g}"


def _title_lines(title: str | None, k: int, n: int, width: float) -> list[str]:
    if title is None:
        title = f"Top {k} of {n} candidates after reranking, and the neighbours that lifted them"
    text = clean_label(title, _TITLE_CHARS, keep_newlines=True)
    chars = max(int(width * 72.0 / (11 * 0.6)), 20)
    lines = [
        line for paragraph in text.split("\n") for line in (textwrap.wrap(paragraph, chars) or [""])
    ]
    if len(lines) > _TITLE_LINES:
        lines = [*lines[: _TITLE_LINES - 1], clean_label(lines[_TITLE_LINES - 1], chars - 1) + "…"]
    return lines


def _row_positions(plan: _Plan, pitch: float) -> list[float]:
    """Row centres in inches below the top of the drawing band; one pitch of gap (with its
    caption) between the top k and their neighbours."""
    out = []
    for index in range(len(plan.rows)):
        gap = 1.0 if index >= plan.top else 0.0
        out.append(-(index + 0.5 + gap) * pitch)
    return out


def _arc_radius(span: float) -> float:
    return 0.12 + 0.3 * span


def _column_x(ys: list[float], width: float) -> float:
    """Where the column stands: far enough right for the widest arc, at most a quarter in."""
    span = (ys[0] - ys[-1]) if len(ys) > 1 else 0.0
    return min(max(_arc_radius(span) + 0.3, 0.6), width * 0.25)


def _arc(y_a: float, y_b: float, column: float) -> list[tuple[float, float]]:
    """Half an ellipse from one row to another, bulging left of the column: it meets the
    column only at its two ends, so no node between them is drawn over it."""
    radius = min(_arc_radius(abs(y_a - y_b)), column - 0.15)
    middle, half = (y_a + y_b) / 2, (y_a - y_b) / 2
    steps = 24
    return [
        (
            column - radius * math.sin(math.pi * s / steps),
            middle + half * math.cos(math.pi * s / steps),
        )
        for s in range(steps + 1)
    ]


def _draw_links(ax: Any, plan: _Plan, ys: list[float], column: float) -> None:
    """Links among the drawn nodes as arcs, styled by kind; the links that lifted a mover
    thick and on top, the others thin."""
    from matplotlib.collections import LineCollection

    where = {row.node: y for row, y in zip(plan.rows, ys, strict=True)}
    segments: dict[tuple[tuple[str, str], bool], list[Any]] = {}
    for u, v, style, lifted in plan.links:
        segments.setdefault((style, lifted), []).append(_arc(where[u], where[v], column))
    for ((colour, line_style), lifted), lines in sorted(segments.items(), key=lambda s: s[0][1]):
        collection = LineCollection(
            lines,
            colors=colour,
            linestyles=line_style,
            linewidths=2.6 if lifted else 0.9,
            alpha=0.95 if lifted else 0.4,
            zorder=1.5 if lifted else 1,
        )
        collection.set_gid("lifting-links" if lifted else "links")
        ax.add_collection(collection)


def _draw_rows(
    ax: Any, plan: _Plan, ys: list[float], column: float, fontsize: float, pitch: float
) -> None:
    area = (min(pitch * 72.0 * 0.42, 9.0)) ** 2
    nodes = ax.scatter(
        [column] * len(plan.rows),
        ys,
        s=[area * row.size for row in plan.rows],
        c=[row.colour for row in plan.rows],
        edgecolors=[row.ring for row in plan.rows],
        linewidths=[row.ring_width for row in plan.rows],
        zorder=2,
    )
    nodes.set_gid("nodes")
    offset = 0.12 + math.sqrt(area) / 144.0
    for row, y in zip(plan.rows, ys, strict=True):
        text = ax.text(
            column + offset,
            y,
            row.label,
            ha="left",
            va="center",
            fontsize=fontsize * row.fontsize_scale,
            fontweight="bold" if row.bold else "normal",
            color=row.text_colour,
            linespacing=1.15,
            parse_math=False,
            usetex=False,
            zorder=3,
        )
        text.set_gid("label")
    if len(plan.rows) > plan.top:
        caption = ax.text(
            column + offset,
            (ys[plan.top - 1] + ys[plan.top]) / 2 if plan.top else ys[0] + pitch,
            plan.caption,
            ha="left",
            va="center",
            fontsize=fontsize * 0.85,
            style="italic",
            color="#616161",
            parse_math=False,
            usetex=False,
        )
        caption.set_gid("caption")


def _footer(figure: Any, plan: _Plan, n: int, height: float, footer: float, columns: int) -> None:
    """One line for what is not drawn, and under it the legend."""
    from matplotlib.lines import Line2D

    rest = n - len(plan.drawn)
    if rest <= 0:
        summary = f"all {n} candidates drawn" if n else ""
    elif plan.isolated == rest:
        summary = f"+ {rest} candidates without edges, not drawn"
    elif plan.isolated:
        summary = f"+ {rest} candidates not drawn ({plan.isolated} of them without edges)"
    else:
        summary = f"+ {rest} candidates not drawn"
    if summary:
        text = figure.text(
            0.02,
            (footer - 0.3) / height,
            summary,
            fontsize=9,
            color="#424242",
            parse_math=False,
            usetex=False,
        )
        text.set_gid("summary")
    if not plan.legend:
        return
    handles = [
        Line2D(
            [],
            [],
            marker="o" if entry.marker else "",
            linestyle="" if entry.marker else cast(Any, entry.line_style),
            color=entry.colour,
            markeredgecolor="black" if entry.ring else entry.colour,
            markeredgewidth=1.8 if entry.ring else 0.0,
            linewidth=entry.width,
            label=entry.label,
        )
        for entry in plan.legend
    ]
    legend = figure.legend(
        handles=handles,
        loc="lower left",
        bbox_to_anchor=(0.01, 0.0),
        ncol=columns,
        fontsize=8,
        frameon=False,
        handlelength=1.8,
        columnspacing=1.2,
        borderaxespad=0.2,
    )
    for text in legend.get_texts():
        text.set_parse_math(False)
        text.set_usetex(False)


def _save(figure: Any, path: str | Path | None) -> None:
    if path is None:
        return
    target = Path(path)
    if not target.parent.is_dir():
        raise InputFileNotFoundError(
            f"cannot save the picture at {str(target)!r}: folder {str(target.parent)!r} "
            "does not exist"
        )
    figure.savefig(target, format="png", bbox_inches="tight", pad_inches=0.15)
