"""grapher_core.enrich.links and grapher_core.enrich.chunks: helpers behind the link and chunk
transformers."""

from __future__ import annotations

import pytest

from grapher_core import Candidate, ForeignKeys
from grapher_core.enrich.chunks import chunk_metadata, chunk_positions, document_id, stable_id
from grapher_core.enrich.links import (
    build_target_index,
    extract_links,
    normalise_target,
    resolve_links,
)
from grapher_core.metadata import encode_list, read_list

MARKDOWN = """# Rome
See [Paris](https://x.org/wiki/Paris "the capital") and ![map](img/map.png).
A [reference link][Lyon] and a shortcut [nice], <https://x.org/wiki/Milan>, [[Turin|the city]].
Inline code `[not](code.md)` is skipped, and so is fenced code:
```
[not](fence.md)
```
A [wiki link](https://en.wikipedia.org/wiki/Mercury_(planet)), a [mail](mailto:a@b.c),
an [anchor](#history) and a repeat of [Paris](https://x.org/wiki/Paris).

[lyon]: ./lyon.md
[Nice]: <nice city.md> "title"
"""


def test_markdown_links_in_order_without_code_anchors_or_mail() -> None:
    assert extract_links(MARKDOWN, "markdown") == [
        "https://x.org/wiki/Paris",
        "img/map.png",
        "./lyon.md",
        "nice city.md",
        "https://x.org/wiki/Milan",
        "Turin",
        "https://en.wikipedia.org/wiki/Mercury_(planet)",
    ]


def test_html_links_unescaped_and_auto_mixes_both_in_text_order() -> None:
    html = '<p><a href="/a?x=1&amp;y=2">a</a> <area href="b.html"/> <a name="x">no href</a>'
    assert extract_links(html, "html") == ["/a?x=1&y=2", "b.html"]
    mixed = '[first](one.md)\n<a href="two.html">2</a> [third](three.md)'
    assert extract_links(mixed) == ["one.md", "two.html", "three.md"]
    assert extract_links(mixed, "markdown") == ["one.md", "three.md"]


def test_extract_links_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="fmt"):
        extract_links("x", "rst")
    with pytest.raises(TypeError, match="str"):
        extract_links(None)  # type: ignore[arg-type]


def test_resolve_links_relative_fragments_trailing_slash_and_self() -> None:
    index = build_target_index(
        {
            "https://x.org/wiki/Paris": "paris",
            "https://x.org/wiki/Rome": "rome",
            "https://x.org/wiki/Nice/": "nice",
        }
    )
    targets = ["Paris#History", "/wiki/Nice", "https://x.org/wiki/Rome", "Unknown", "Paris"]
    assert resolve_links(targets, index, base="https://x.org/wiki/Rome", self_id="rome") == [
        "paris",
        "nice",
    ]
    assert normalise_target("a%20b.md#top", "https://h/d/") == "https://h/d/a b.md"


def test_build_target_index_names_ambiguous_targets() -> None:
    with pytest.raises(ValueError, match="Paris"):
        build_target_index([("https://x.org/Paris", "a"), ("https://x.org/Paris/", "b")])
    with pytest.raises(TypeError):
        resolve_links("one-string", {})


def test_resolved_links_become_structural_edges() -> None:
    index = build_target_index([("a.md", "A"), ("b.md", "B")])
    links = resolve_links(extract_links("[b](b.md)"), index, self_id="A")
    candidates = [
        Candidate("A", metadata={"links": encode_list(links, "json")}),
        Candidate("B"),
        Candidate("C"),
    ]
    matrix = ForeignKeys(field="links").adjacency(candidates).toarray()
    assert matrix[0, 1] == 1 and matrix[1, 0] == 1 and matrix[:, 2].sum() == 0


def test_chunk_positions_use_offsets_when_complete_else_order() -> None:
    positions = chunk_positions(["a", "b", "a", "b"], starts=[50, None, 0, 10])
    assert [(p.doc_id, p.chunk_index, p.n_chunks) for p in positions] == [
        ("a", 1, 2),
        ("b", 0, 2),
        ("a", 0, 2),
        ("b", 1, 2),
    ]
    assert chunk_metadata("d", 2)[1] == {"doc_id": "d", "chunk_index": 1, "n_chunks_in_doc": 2}
    with pytest.raises(ValueError, match="chunk 1"):
        chunk_positions(["a", ""])
    with pytest.raises(ValueError, match="offsets"):
        chunk_positions(["a"], starts=[1, 2])


def test_document_id_and_stable_id() -> None:
    assert document_id({"source": "s.md"}) == "s.md"
    assert document_id({}, object_id="x") == "x"
    assert document_id({}, text="hello") == "doc-" + stable_id("hello")
    assert document_id({}) is None
    assert stable_id("a", "b") != stable_id("ab") and len(stable_id("a")) == 16


@pytest.mark.parametrize("fmt", ["list", "json", "delimited"])
def test_encode_list_round_trips_through_read_list(fmt: str) -> None:
    values = ["Barack Obama", "New York"]
    assert read_list(encode_list(values, fmt)) == values
    with pytest.raises(ValueError):
        encode_list(["a|b", "c"], "delimited")
    assert encode_list([], "list") is None
    assert encode_list([["a", "b"], ["c"]], "list") == '[["a", "b"], ["c"]]'  # Chroma: flat only
