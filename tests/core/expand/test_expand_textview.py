"""The text view: BFS tree from the seeds, extra edges listed, nothing lost."""

from __future__ import annotations

import pytest

from grapher_core import AdjacentChunks, Candidate, ForeignKeys, GraphReranker
from grapher_core.expand import format_graph_context, text_view

MENTIONS = ForeignKeys("mentions", target_field="title")


def p(title: str, mentions: list[str], text: str = "") -> Candidate:
    return Candidate(title, text or f"About {title}.", None, {"title": title, "mentions": mentions})


def test_tree_from_seed_and_extra_edges() -> None:
    # Film -> Director -> Mother; Film -> Studio; Studio -- Director is a non-tree edge.
    objects = [
        p("Film", ["Director", "Studio"]),
        p("Director", ["Mother"]),
        p("Studio", ["Director"]),
        p("Mother", []),
        p("Alone", []),
    ]
    view = text_view(objects, [MENTIONS], seeds=1)
    labels = {n.candidate.id: n.label for n in view.nodes}
    assert labels == {
        "Film": "1",
        "Director": "1.1",
        "Studio": "1.2",
        "Mother": "1.1.1",
        "Alone": "2",
    }
    parents = {n.candidate.id: n.parent for n in view.nodes}
    assert parents["Mother"] == "1.1" and parents["Film"] is None
    assert view.extra_edges == (("1.1", "1.2", ("structural",)),)
    # every edge of the graph is either a tree edge or listed: lossless
    tree_edges = sum(1 for n in view.nodes if n.parent is not None)
    assert tree_edges + len(view.extra_edges) == 4
    text = view.render(max_chars=None)
    assert text.splitlines()[0] == "[1] Film"
    assert "    [1.1.1] Mother  <- structural" in text
    assert "Other links:\n- [1.1] -- [1.2] (structural)" in text


def test_truncation_seeds_by_id_and_depth_cap() -> None:
    objects = [p("A", ["B"], "x" * 50), p("B", ["C"]), p("C", [])]
    text = format_graph_context(objects, [MENTIONS], seeds=["C"], max_chars=10)
    assert text.splitlines()[0] == "[1] C"
    assert "xxxxxxxxx…" in text and "x" * 11 not in text
    capped = text_view(objects, [MENTIONS], seeds=1, max_depth=1)
    assert [n.depth for n in capped.nodes] == [0, 1, 0]  # C is beyond depth 1: its own root
    with pytest.raises(ValueError, match="seed ids"):
        text_view(objects, [MENTIONS], seeds=["nope"])


def test_accepts_ranked_candidates_and_chunk_edges() -> None:
    chunks = [
        Candidate(f"d#{k}", f"chunk {k}", 1.0 / (k + 1), {"doc_id": "d", "chunk_index": k})
        for k in range(3)
    ]
    ranked = GraphReranker([AdjacentChunks()]).rerank(chunks)
    view = text_view(ranked, [AdjacentChunks()], seeds=1)
    assert [n.label for n in view.nodes] == ["1", "1.1", "1.1.1"]
    assert view.nodes[1].kinds == ("contextual",)
