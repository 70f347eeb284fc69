"""The candidate-graph picture (``Reranking.draw``) at its trust boundary.

Ids are data: mathtext (``$x$``), TeX, control characters and lone surrogates must reach the
font code as plain, safe text. The picture is bounded by ``top_k``, not by the pool (5 000
candidates once took 251 s and 1.66 GB), sizes are validated (``dpi=100000`` was a bare
``bad_alloc``), and the top labels never collide, on real Spider pools too.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("networkx", reason="needs the draw extra (networkx)")
pytest.importorskip("matplotlib", reason="needs the draw extra (matplotlib)")

from matplotlib.backends.backend_agg import FigureCanvasAgg

from grapher_core import Candidate, ForeignKeys, GraphReranker, SharedEntities
from grapher_core.errors import ConfigError, GraphERError
from grapher_core.picture import MAX_TOP_K, draw

PNG = b"\x89PNG\r\n\x1a\n"


def _pool(ids: list[str], top_n: int | None = 5):  # type: ignore[no-untyped-def]
    """``ids`` in the retriever's order; the sixth is linked to the first three, so it moves
    up into the top 5 with the first as the neighbour that lifted it."""
    links = {ids[5]: ids[:3], ids[0]: [ids[5]], ids[1]: [ids[5]], ids[2]: [ids[5]]}
    candidates = [
        Candidate(c, f"text {i}", 1.0 - i / len(ids), {"foreign_keys": links.get(c, [])})
        for i, c in enumerate(ids)
    ]
    reranker = GraphReranker([ForeignKeys()], alpha=0.1, seed_transform="auto")
    return reranker.run(candidates, top_n=top_n)


def _renderer(figure: Any) -> Any:
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    return canvas.get_renderer()


def _overlaps(figure: Any) -> list[tuple[str, str]]:
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


def _all_text(figure: Any) -> list[str]:
    ax = figure.axes[0]
    out = [t.get_text() for t in [*ax.texts, ax.title, *figure.texts]]
    return out + [t.get_text() for legend in figure.legends for t in legend.get_texts()]


HOSTILE_IDS = {
    "mathtext": "$x$",
    "lone dollar": "price in $",
    "two dollars": "a$b$c",
    "tex command": r"$\frac{1}{0}$",
    "escaped dollar": r"\$5",
    "tex specials": "^_{}%#&~",
    "tab": "tab\there",
    "nul": "nul\x00id",
    "newline": "new\nline",
    "carriage return": "car\rriage",
    "lone surrogate": "lone \ud800 surrogate",
    "trailing surrogate": "\udfffend",
    "bidi override": "bidi \u202e txt.exe",
    "zero width": "zero\u200bwidth",
    "unassigned": "odd \uffff",
    "very long": "x" * 10_000,
}


@pytest.mark.parametrize("hostile", list(HOSTILE_IDS.values()), ids=list(HOSTILE_IDS))
@pytest.mark.parametrize("where", ["newcomer", "lifting neighbour"])
def test_hostile_ids_draw_as_plain_text(hostile: str, where: str, tmp_path: Path) -> None:
    ids = [f"t{i}" for i in range(12)]
    ids[5 if where == "newcomer" else 0] = hostile
    result = _pool(ids)
    path = tmp_path / "graph.png"
    figure = result.draw(path, title=f"question {hostile}")
    assert path.read_bytes().startswith(PNG)
    texts = _all_text(figure)
    assert all(
        unicodedata.category(ch) not in {"Cc", "Cs", "Cf", "Cn"}
        for text in texts
        for ch in text
        if ch != "\n"
    )
    labels = [t for t in figure.axes[0].texts if t.get_gid() == "label"]
    assert all(not t.get_usetex() and not t._parse_math for t in labels)
    assert any("(was 6)" in t.get_text() for t in labels)
    if "$" in hostile and len(hostile) < 40:
        assert any(hostile in t.get_text() for t in labels)  # drawn as typed, not as math
    assert not _overlaps(figure)


def test_tex_in_the_settings_is_not_used_for_data(tmp_path: Path) -> None:
    """``text.usetex`` set by the user must not send ids to a TeX run (none is installed here,
    and an id would be TeX source)."""
    import matplotlib

    result = _pool(["$x$", r"\input{/etc/passwd}", *(f"t{i}" for i in range(2, 12))])
    with matplotlib.rc_context({"text.usetex": True}):
        result.draw(tmp_path / "graph.png")
    assert (tmp_path / "graph.png").read_bytes().startswith(PNG)


def _big_pool(n: int, top_n: int | None):  # type: ignore[no-untyped-def]
    import random

    rng = random.Random(0)
    candidates = [
        Candidate(
            f"doc{i}",
            f"text {i}",
            1.0 - i / n,
            {
                "entities": [f"e{rng.randrange(400)}" for _ in range(5)],
                "foreign_keys": [f"doc{rng.randrange(n)}"],
            },
        )
        for i in range(n)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the hub entities ignored (said once per process)
        return GraphReranker([SharedEntities(), ForeignKeys()]).run(candidates, top_n=top_n)


def test_a_3000_candidate_pool_draws_its_top_k_bounded(tmp_path: Path) -> None:
    result = _big_pool(3000, top_n=None)
    start = time.monotonic()
    figure = result.draw(tmp_path / "graph.png")
    elapsed = time.monotonic() - start
    assert elapsed < 30, f"drawing 3000 candidates took {elapsed:.1f} s"
    labels = [t.get_text() for t in figure.axes[0].texts if t.get_gid() == "label"]
    assert 10 <= len(labels) <= 20  # the top 10 and at most one neighbour each
    (summary,) = [t.get_text() for t in figure.texts if t.get_gid() == "summary"]
    assert re.fullmatch(r"\+ \d+ candidates not drawn.*", summary)
    assert (tmp_path / "graph.png").stat().st_size < 300_000


def test_a_3000_candidate_top_is_refused_saying_how_to_draw_a_subset(tmp_path: Path) -> None:
    result = _big_pool(3000, top_n=3000)
    start = time.monotonic()
    with pytest.raises(ConfigError, match=r"top_k=.*top_k=10"):
        result.draw(tmp_path / "graph.png")
    with pytest.raises(ConfigError, match=rf"at most {MAX_TOP_K}.*top_k="):
        draw(result, top_k=3000)
    assert time.monotonic() - start < 30
    assert not (tmp_path / "graph.png").exists()
    figure = result.draw(top_k=MAX_TOP_K)  # the largest subset draws, legibly
    assert not _overlaps(figure)


BAD_OPTIONS = {
    "dpi huge": ({"dpi": 100_000}, "dpi"),
    "dpi nan": ({"dpi": float("nan")}, "dpi"),
    "dpi inf": ({"dpi": float("inf")}, "dpi"),
    "dpi zero": ({"dpi": 0}, "dpi"),
    "dpi text": ({"dpi": "300"}, "dpi"),
    "dpi bool": ({"dpi": True}, "dpi"),
    "figsize huge": ({"figsize": (1e6, 1e6)}, "figsize width"),
    "figsize nan": ({"figsize": (10.0, float("nan"))}, "figsize height"),
    "figsize negative": ({"figsize": (-5, 5)}, "figsize width"),
    "figsize canvas": ({"figsize": (60, 60), "dpi": 600}, "figsize × dpi"),
    "figsize text": ({"figsize": "big"}, "figsize"),
    "figsize one": ({"figsize": (5,)}, "figsize"),
    "figsize too short": ({"figsize": (10, 2.5), "top_k": 20}, "figsize height"),
    "label_chars zero": ({"label_chars": 0}, "label_chars"),
    "label_chars huge": ({"label_chars": 10**9}, "label_chars"),
    "label_chars float": ({"label_chars": 2.5}, "label_chars"),
    "top_k negative": ({"top_k": -1}, "top_k"),
    "top_k float": ({"top_k": 1.5}, "top_k"),
    "top_k huge": ({"top_k": 10**6}, "top_k"),
    "title not text": ({"title": 123}, "title"),
    "seed not int": ({"seed": "x"}, "seed"),
    "path not a path": ({"path": 42}, "path"),
}


@pytest.mark.parametrize(("options", "named"), list(BAD_OPTIONS.values()), ids=list(BAD_OPTIONS))
def test_sizes_and_options_are_validated_naming_the_option(
    options: dict[str, Any], named: str, tmp_path: Path
) -> None:
    result = _pool([f"t{i}" for i in range(30)], top_n=None)
    options = dict(options)
    path = options.pop("path", tmp_path / "graph.png")
    start = time.monotonic()
    with pytest.raises(GraphERError, match=re.escape(named)):
        draw(result, path, **options)
    assert time.monotonic() - start < 10
    assert not (tmp_path / "graph.png").exists()


# Legibility: the labels of the top 5 never collide.


def _chained_pool(n: int):  # type: ignore[no-untyped-def]
    """Long Spider-like ids; two candidates below the top 5 linked to all five, so they
    move up into it with a two-line label each; the rest have no edges."""
    ids = [f"student_transcripts_tracking_{i}.Student_Enrolment_Courses_{i}" for i in range(n)]
    links: dict[str, list[str]] = {c: [] for c in ids}
    for i in (6, 8):
        for j in range(5):
            links[ids[i]].append(ids[j])
            links[ids[j]].append(ids[i])
    candidates = [
        Candidate(c, f"text {i}", 1.0 - i / n, {"foreign_keys": links[c]})
        for i, c in enumerate(ids)
    ]
    return GraphReranker([ForeignKeys()], alpha=0.1, seed_transform="auto").run(candidates, top_n=5)


@pytest.mark.parametrize("n", [20, 50])
def test_top_5_labels_do_not_overlap_on_a_synthetic_pool(n: int) -> None:
    figure = _chained_pool(n).draw(label_chars=200)
    labels = [t.get_text() for t in figure.axes[0].texts if t.get_gid() == "label"]
    assert len(labels) == 5 and sum("\nvia " in label for label in labels) >= 2
    assert not _overlaps(figure)


def _spider_pool(root: Path, question_id: str, n: int):  # type: ignore[no-untyped-def]
    """A real pool: spider_dev's 876 pooled tables, the ``n`` sharing most words with the
    question (a dependency-free stand-in for the benchmark's retriever), reranked with the
    default GraphReranker (foreign keys detected from the metadata)."""
    folder = root / "spider_dev"
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(line) for line in (folder / "queries.jsonl").open(encoding="utf-8")]
    (question,) = [q["text"] for q in queries if q["id"] == question_id]

    def words(text: str) -> set[str]:
        return {w.rstrip("s") for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2}

    asked = words(question)
    scored = sorted(
        ((len(asked & words(o["text"])) / 10 + 1.0 / (i + 2), i) for i, o in enumerate(corpus)),
        reverse=True,
    )[:n]
    candidates = [
        Candidate(corpus[i]["id"], corpus[i]["text"], score, corpus[i]["metadata"])
        for score, i in scored
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # links to tables outside the pool: said, not tested here
        result = GraphReranker().run(candidates, top_n=5)
    return question, result


@pytest.mark.parametrize("n", [20, 50])
@pytest.mark.parametrize("question_id", ["spider_dev_0059", "spider_dev_0048", "spider_dev_0006"])
def test_top_5_labels_do_not_overlap_on_a_spider_pool(
    benchmarks_dir: Path, question_id: str, n: int
) -> None:
    question, result = _spider_pool(benchmarks_dir, question_id, n)
    figure = result.draw(title=question)
    labels = [t.get_text() for t in figure.axes[0].texts if t.get_gid() == "label"]
    assert [label.split(".")[0] for label in labels[:5]] == ["1", "2", "3", "4", "5"]
    assert not _overlaps(figure)
    (summary,) = [t.get_text() for t in figure.texts if t.get_gid() == "summary"]
    assert summary.startswith("+ ") and "not drawn" in summary
