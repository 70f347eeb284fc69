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
