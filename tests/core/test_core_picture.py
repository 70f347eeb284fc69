"""A picture of one reranking: ``Reranking.to_networkx()`` and ``grapher_core.picture.draw``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from grapher_core import Candidate, ForeignKeys, GraphReranker, SharedEntities
from grapher_core.errors import MissingDependencyError

pytest.importorskip("networkx")

# d5 is linked to the three best candidates: the graph lifts it into the top 4.
LINKS = {"d0": ["d5"], "d1": ["d5"], "d2": ["d5"], "d3": [], "d4": [], "d5": [], "d6": ["d7"]}
ENTITIES = {"d3": ["x"], "d4": ["x"], "d6": ["y"], "d7": ["y"]}
SCORES = [1.0, 0.95, 0.9, 0.6, 0.58, 0.57, 0.3, 0.2]


def candidates() -> list[Candidate]:
    return [
        Candidate(
            f"d{i}",
            f"text {i}",
            SCORES[i],
            {"foreign_keys": LINKS.get(f"d{i}", []), "entities": ENTITIES.get(f"d{i}", [])},
        )
        for i in range(8)
    ]


def reranking(top_n: int | None = 4):  # type: ignore[no-untyped-def]
    reranker = GraphReranker(
        [ForeignKeys(), SharedEntities()], ranker="gcs", alpha=0.1, seed_transform="auto"
    )
    return reranker.run(candidates(), top_n=top_n)


def test_to_networkx_has_the_moves_and_the_reasons() -> None:
    result = reranking()
    graph = result.to_networkx()
    assert graph.is_directed() and graph.number_of_nodes() == 8
    assert graph.graph["top_k"] == 4 and graph.graph["edges"] == dict(result.edges)
    d5 = graph.nodes["d5"]
    assert d5["id"] == "d5" and d5["rank_before"] == 6 and d5["rank_after"] == 4
    assert d5["moved"] == "up" and d5["shift"] == 6 - d5["rank_after"]
    assert d5["newcomer"] and d5["in_top_k"] and d5["returned"] and not d5["expanded"]
    assert d5["why"] in {"d0", "d1", "d2"} and d5["why_kinds"] == ("structural",)
    assert d5["seed"] == pytest.approx(0.57) and d5["relevance"] is not None
    for _node, data in graph.nodes(data=True):  # ranks after: a permutation, top 4 returned
        assert data["returned"] == (data["rank_after"] <= 4)
        assert data["newcomer"] == (data["rank_after"] <= 4 < data["rank_before"])
        assert data["moved"] in ("up", "down", "same")
    assert sorted(d["rank_after"] for _, d in graph.nodes(data=True)) == list(range(1, 9))
    assert {r.id: r.rank for r in result.ranked} == {
        n: d["rank_after"] for n, d in graph.nodes(data=True) if d["returned"]
    }
    assert graph.nodes["d3"]["why"] == "d4"
    assert graph.nodes["d5"]["score"] == pytest.approx(
        next(r.score for r in result.ranked if r.id == "d5")
    )


def test_to_networkx_edges_carry_kind_and_weight() -> None:
    graph = reranking().to_networkx()
    fk = graph.edges["d0", "d5"]
    assert fk["kind"] == "structural" and fk["kinds"] == ("structural",)
    assert fk["weight"] == pytest.approx(1.0) and graph.has_edge("d5", "d0")  # symmetric
    shared = graph.edges["d3", "d4"]
    assert shared["kind"] == "conceptual" and shared["weight"] > 0
    assert (
        sum(1 for _u, _v, d in graph.edges(data=True) if "structural" in d["kinds"])
        == (reranking().edges["structural"])
    )
    both = graph.edges["d6", "d7"]  # a foreign key and a shared entity
    assert both["kind"] == "structural+conceptual" and set(both["weights"]) == set(both["kinds"])
    assert both["weight"] == pytest.approx(sum(both["weights"].values()))


def test_to_networkx_top_k_and_empty() -> None:
    graph = reranking(top_n=None).to_networkx(top_k=2)
    assert graph.graph["top_k"] == 2
    assert sum(d["in_top_k"] for _, d in graph.nodes(data=True)) == 2
    assert reranking(top_n=None).to_networkx().graph["top_k"] == 8  # default 10, at most n
    empty = GraphReranker([ForeignKeys()]).run([])
    assert empty.to_networkx().number_of_nodes() == 0
    with pytest.raises(ValueError, match="top_k"):
        reranking().to_networkx(top_k=-1)


def test_draw_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from grapher_core.picture import draw

    path = tmp_path / "graph.png"
    figure = draw(reranking(), path, title="eight candidates")
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5_000
    assert figure.axes[0].get_title() == "eight candidates"
    texts = [t.get_text() for t in figure.axes[0].texts]
    assert any(t.startswith("4. d5 (was 6)\nvia d") for t in texts)
    second = tmp_path / "again.png"
    reranking().draw(second)  # the method, same picture
    assert second.read_bytes()[:8] == data[:8] and second.stat().st_size > 5_000
    assert draw(GraphReranker([ForeignKeys()]).run([])) is not None  # nothing to draw: no error
    nothing = draw(reranking(), top_k=0)  # no ranked candidate asked for: said, no error
    assert [t.get_text() for t in nothing.axes[0].texts] == ["top_k=0: no ranked candidate to draw"]


def test_missing_networkx_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "networkx", None)  # import fails as if not installed
    with pytest.raises(MissingDependencyError, match=r"grapher-rerank\[draw\]"):
        reranking().to_networkx()


def test_scores_and_seeds_are_kept_for_every_candidate() -> None:
    result = reranking()
    assert result.graph is not None and result.graph.n == 8
    assert result.seeds is not None and result.scores is not None
    assert np.asarray(result.scores).shape == (8,) and len(result.ranked) == 4
    assert result.top_n == 4


# The picture: the top k in a column, the movers' neighbours under it, the rest summarised.


def _drawing():  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib", reason="needs the draw extra (matplotlib)")
    from grapher_core import picture

    return picture


class _Fake:
    """A hand-made graph in the shape ``to_networkx`` returns, for cases a ranker rarely makes."""

    def __init__(self, graph: object) -> None:
        self.graph = graph

    def to_networkx(self, top_k: int | None = None) -> object:
        return self.graph


def _fake_graph(k: int = 4):  # type: ignore[no-untyped-def]
    import networkx as nx

    graph = nx.DiGraph()
    graph.graph.update(top_k=k, edges={})

    def node(v: str, before: int, after: int, why: str | None = None) -> None:
        moved = "up" if after < before else "down" if after > before else "same"
        graph.add_node(
            v,
            id=v,
            rank_before=before,
            rank_after=after,
            seed=0.1,
            score=0.8,
            relevance=None,
            moved=moved,
            shift=before - after,
            in_top_k=after <= k,
            newcomer=after <= k < before,
            returned=after <= k,
            expanded=False,
            why=why,
            why_kinds=("structural",) if why else (),
        )

    node("a", 1, 1)
    node("b", 2, 3)
    node("c", 9, 2, why="x")  # lifted by x, which stays outside the top 4
    node("d", 12, 4, why="y")
    node("x", 3, 5, why="c")
    node("y", 6, 7, why="d")
    node("z", 4, 6)
    for i in range(8, 13):
        node(f"alone{i}", i + 1, i)
    for u, v, kind in [
        ("c", "x", "structural"),
        ("d", "y", "conceptual"),
        ("a", "b", "structural"),
    ]:
        for s, t in ((u, v), (v, u)):
            graph.add_edge(s, t, kind=kind, kinds=(kind,), weight=1.0, weights={kind: 1.0})
    graph.add_edge("z", "a", kind="semantic", kinds=("semantic",), weight=1.0, weights={})
    both = ("structural", "conceptual")
    graph.add_edge("x", "y", kind="structural+conceptual", kinds=both, weight=2.0, weights={})
    return graph


def _renderer(figure):  # type: ignore[no-untyped-def]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    return canvas.get_renderer()


def _overlapping_texts(figure) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """Pairs of visible texts (labels, caption, title, summary, legend) whose boxes overlap."""
    renderer = _renderer(figure)
    ax = figure.axes[0]
    texts = [t for t in [*ax.texts, ax.title, *figure.texts] if t.get_text()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    boxes += [("legend", legend.get_window_extent(renderer)) for legend in figure.legends]
    shrunk = [(text, box.padded(-0.5)) for text, box in boxes]
    return [
        (a, b)
        for i, (a, box_a) in enumerate(shrunk)
        for b, box_b in shrunk[i + 1 :]
        if box_a.overlaps(box_b)
    ]


def test_draw_lists_the_top_k_in_rank_order_and_summarises_the_rest() -> None:
    _drawing()
    figure = reranking().draw()
    ax = figure.axes[0]
    labels = [t.get_text() for t in ax.texts if t.get_gid() == "label"]
    assert [label.split(".")[0] for label in labels] == ["1", "2", "3", "4"]
    assert labels[3].startswith("4. d5 (was 6)\nvia d") and "seed 0.570 → score " in labels[3]
    summary = [t.get_text() for t in figure.texts if t.get_gid() == "summary"]
    assert summary == ["+ 4 candidates not drawn"]  # d3, d4, d6, d7: linked, below the top 4
    assert not _overlapping_texts(figure)


def test_the_newcomer_colour_is_named_in_neutral_words() -> None:
    picture = _drawing()
    figure = reranking().draw()
    words = [t.get_text() for legend in figure.legends for t in legend.get_texts()]
    words += [figure.axes[0].get_title(), *(t.get_text() for t in figure.texts)]
    assert "new in the top 4" in words and "thick: the link that lifted it" in words
    assert not any("gold" in w.lower() for w in words)
    assert "gold" not in (picture.NEWCOMER_COLOUR.__doc__ or "") and "gold" not in (
        picture.__doc__ or ""
    )


def test_no_node_sits_on_the_link_that_lifted_a_mover() -> None:
    _drawing()
    figure = reranking().draw()
    ax = figure.axes[0]
    (nodes,) = [c for c in ax.collections if c.get_gid() == "nodes"]
    lifting = [c for c in ax.collections if c.get_gid() == "lifting-links"]
    assert lifting
    centres = nodes.get_offsets()
    column = float(centres[0][0])
    for collection in lifting:
        for arc in collection.get_segments():
            inner = np.asarray(arc)[1:-1]
            # it leaves the column at once and comes back only at its other end
            assert (inner[:, 0] < column - 0.05).all()
            ends = {round(float(arc[0][1]), 6), round(float(arc[-1][1]), 6)}
            assert ends <= {round(float(y), 6) for y in centres[:, 1]}


def test_neighbours_outside_the_top_k_are_drawn_under_it() -> None:
    picture = _drawing()
    figure = picture.draw(_Fake(_fake_graph()))
    ax = figure.axes[0]
    labels = [t.get_text() for t in ax.texts if t.get_gid() == "label"]
    assert labels[:4] == [
        "1. a",
        "2. c (was 9)\nvia x (structural), seed 0.100 → score 0.800",
        "3. b (was 2)",
        "4. d (was 12)\nvia y (structural), seed 0.100 → score 0.800",
    ]
    assert labels[4:] == ["5. x (was 3), lifted 2", "7. y (was 6), lifted 4"]
    assert [t.get_text() for t in ax.texts if t.get_gid() == "caption"] == [
        "outside the top 4, the neighbours that lifted them:"
    ]
    summary = [t.get_text() for t in figure.texts if t.get_gid() == "summary"]
    assert summary == ["+ 6 candidates not drawn (5 of them without edges)"]
    assert not _overlapping_texts(figure)


def test_labels_do_not_cover_nodes() -> None:
    picture = _drawing()
    figure = picture.draw(_Fake(_fake_graph()))
    renderer = _renderer(figure)
    ax = figure.axes[0]
    (nodes,) = [c for c in ax.collections if c.get_gid() == "nodes"]
    centres = ax.transData.transform(nodes.get_offsets())
    radii = np.sqrt(nodes.get_sizes()) / 2 * figure.dpi / 72
    for text in ax.texts:
        box = text.get_window_extent(renderer)
        for (x, y), r in zip(centres, radii, strict=True):
            assert x + r < box.x0 or not box.y0 < y < box.y1, text.get_text()


def test_draw_keeps_its_older_options() -> None:
    picture = _drawing()
    figure = picture.draw(reranking(), figsize=(10.0, 7.5), dpi=80, seed=3, label_chars=10)
    assert tuple(figure.get_size_inches()) == (10.0, 7.5) and figure.dpi == 80
    with pytest.warns(DeprecationWarning, match="label_all"):
        picture.draw(reranking(), label_all=True)


def test_clean_label_shows_what_would_hide_or_crash() -> None:
    picture = _drawing()
    assert picture.clean_label("a\tb\x00c\ud800") == "a\ufffdb\ufffdc\ufffd"
    assert picture.clean_label("$x$") == "$x$"  # kept as typed: texts never parse math
    assert picture.clean_label("zero\u200bwidth") == "zero\ufffdwidth"
    assert picture.clean_label("line\nbreak", keep_newlines=True) == "line\nbreak"
    cut = picture.clean_label("student_transcripts_tracking.Student_Enrolment", 20)
    assert len(cut) == 20 and cut.startswith("student") and cut.endswith("Enrolment")


def test_saving_into_a_missing_folder_is_named(tmp_path: Path) -> None:
    picture = _drawing()
    from grapher_core.errors import InputFileNotFoundError

    with pytest.raises(InputFileNotFoundError, match="does not exist"):
        picture.draw(reranking(), tmp_path / "nowhere" / "graph.png")


def test_a_narrow_figure_keeps_labels_and_legend_apart() -> None:
    picture = _drawing()
    figure = picture.draw(_Fake(_fake_graph()), figsize=(4.0, 7.0))
    words = [t.get_text() for legend in figure.legends for t in legend.get_texts()]
    assert words == [
        "new in the top 4",
        "moved down",
        "same rank",
        "structural link",
        "conceptual link",
        "link of several or other kinds",
        "thick: the link that lifted it",
    ]
    assert not _overlapping_texts(figure)
