"""GRAG-style relation view: relation text from metadata, every edge rendered exactly once."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from grapher_core import AdjacentChunks, Candidate, ForeignKeys
from grapher_core.expand import fk_join, relation_text, relation_view

MENTIONS = ForeignKeys("mentions", target_field="title")
FK = ForeignKeys("foreign_keys")


def table(name: str, links: list[str], pairs: list[list[str]]) -> Candidate:
    return Candidate(
        f"db.{name}",
        f"Table: {name}\nColumns: id",
        None,
        {"table": name, "foreign_keys": [f"db.{t}" for t in links], "fk_pairs": pairs},
    )


def schema() -> list[Candidate]:
    return [
        table(
            "singer_in_concert",
            ["singer", "concert"],
            [["Singer_ID", "db.singer", "Singer_ID"], ["concert_ID", "db.concert", "concert_ID"]],
        ),
        table("singer", ["singer_in_concert"], []),
        table(
            "concert",
            ["singer_in_concert", "stadium"],
            [["Stadium_ID", "db.stadium", "Stadium_ID"]],
        ),
        table("stadium", ["concert"], []),
    ]


def test_foreign_key_relations_show_join_columns() -> None:
    t = schema()
    assert fk_join(t[0], t[1]) == "singer_in_concert.Singer_ID = singer.Singer_ID"
    # read from the other side's fk_pairs, columns kept on their own tables
    assert fk_join(t[1], t[0]) == "singer.Singer_ID = singer_in_concert.Singer_ID"
    json_pairs = Candidate(
        "db.x",
        "",
        None,
        {
            "table": "x",
            "foreign_keys": ["db.stadium"],
            "fk_pairs": '[["s", "db.stadium", "Stadium_ID"]]',
        },
    )
    assert relation_text(json_pairs, t[3], FK) == "x.s = stadium.Stadium_ID"
    assert relation_text(t[1], t[3], FK) is None  # not linked


def test_other_relation_kinds() -> None:
    a = Candidate(
        "A",
        "A text",
        None,
        {
            "title": "A",
            "mentions": ["B"],
            "doc_id": "d",
            "chunk_index": 0,
            "entities": ["Paris", "Nolan"],
        },
    )
    b = Candidate(
        "B",
        "B text",
        None,
        {"title": "B", "mentions": [], "doc_id": "d", "chunk_index": 1, "entities": ["paris"]},
    )
    from grapher_core import SharedEntities

    assert relation_text(a, b, MENTIONS) == "mentions"
    assert relation_text(b, a, MENTIONS) == "is mentioned by"
    assert relation_text(a, b, AdjacentChunks()) == "next chunk"
    assert relation_text(b, a, AdjacentChunks()) == "previous chunk"
    assert relation_text(a, b, SharedEntities()) == "shares Paris"


def test_every_edge_appears_exactly_once() -> None:
    t = [*schema(), table("unrelated", [], [])]
    view = relation_view(t, [FK], seeds=1)
    text = view.render()
    lines = text.splitlines()
    assert lines[0] == "[ROOT] singer_in_concert."
    assert "singer_in_concert is connected to:" in lines
    assert "  1.1 singer via singer_in_concert.Singer_ID = singer.Singer_ID." in lines
    assert "    1.2.1 stadium via concert.Stadium_ID = stadium.Stadium_ID." in lines
    assert "[ROOT] unrelated." in lines
    # the rendered subgraph's edges, each once (tree or "other"), none invented
    truth = {
        frozenset((a.id, b.id)) for a, b in itertools.combinations(t, 2) if relation_text(a, b, FK)
    }
    shown = [frozenset((a, b)) for a, b, _rel, _where in view.edges]
    assert len(shown) == len(set(shown)) and set(shown) == truth
    for a, b, rel, _where in view.edges:
        assert (
            sum(
                rel in line and (a.split(".")[1] in line or b.split(".")[1] in line)
                for line in lines
            )
            >= 1
        )


def test_cycle_edges_listed_once_and_children_by_query_similarity() -> None:
    def p(title: str, mentions: list[str], vector: list[float]) -> Candidate:
        return Candidate(
            title, f"{title} text", None, {"title": title, "mentions": mentions}, np.asarray(vector)
        )

    objs = [p("Root", ["Near", "Far"], [1, 0]), p("Far", ["Near"], [0, 1]), p("Near", [], [1, 0.1])]
    view = relation_view(objs, [MENTIONS], seeds=1, query_embedding=np.asarray([1.0, 0.0]))
    lines = view.render().splitlines()
    assert lines.index("  1.1 Near via mentions.") < lines.index("  1.2 Far via mentions.")
    assert "Other connections:" in lines
    assert sum("Far -- Near" in line or "Near -- Far" in line for line in lines) == 1
    assert [w for *_x, w in view.edges].count("other") == 1
    capped = relation_view(
        objs, [MENTIONS], seeds=1, max_children=1, query_embedding=np.asarray([1.0, 0.0])
    )
    assert len({frozenset(e[:2]) for e in capped.edges}) == len(capped.edges) == 3
    with pytest.raises(ValueError, match="max_children"):
        relation_view(objs, [MENTIONS], max_children=-1)
