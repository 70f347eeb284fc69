"""grapher_core.enrich.links on split chunks: LinkIndex, anchors, and the errors that say what to
pass (the single-object behaviour is in tests/langchain/test_langchain_core_links_chunks.py)."""

from __future__ import annotations

import pytest

from grapher_core import Candidate
from grapher_core.edges import ChunkLinks
from grapher_core.enrich.links import (
    LinkIndex,
    LinkTarget,
    build_target_index,
    extract_anchors,
    link_target,
    opening_anchors,
    resolve_links,
    section_anchors,
)
from grapher_core.errors import InputError, InputTypeError


def chunks() -> list[LinkTarget]:
    """install.html in three chunks (one id-less), guide.html in two, one whole page."""
    return [
        LinkTarget("install#0", "https://d.org/install.html", anchors=("requirements",), order=0),
        LinkTarget("install#1", "https://d.org/install.html", anchors=("linux",), order=1),
        LinkTarget(None, "https://d.org/install.html", headings=("macOS setup",), order=2),
        LinkTarget("guide#0", "https://d.org/guide.html", order=0),
        LinkTarget("guide#1", "https://d.org/guide.html", order=1),
        LinkTarget("faq", "https://d.org/faq.html", aliases=("faq",)),
    ]


def test_chunks_sharing_a_page_are_one_page_not_a_clash() -> None:
    index = LinkIndex(chunks())
    source = chunks()[3]
    links = [
        "install.html#linux",  # anchor -> the chunk id
        "install.html#macos-setup",  # heading slug, chunk without id -> page#anchor
        "install.html",  # whole page -> the page, as the chunks' metadata writes it
        "install.html#nowhere",  # unknown anchor -> kept for rank time
        "faq.html#q1",  # one object: its id, as before
        "guide.html",  # its own page: dropped
        "guide.html#top",  # its own page, an anchor nobody holds: dropped
        "elsewhere.html",  # outside the index: dropped
        "install.html#linux",  # once
    ]
    assert index.resolve(links, base="https://d.org/guide.html", source=source) == [
        "install#1",
        "https://d.org/install.html#macos-setup",
        "https://d.org/install.html",
        "https://d.org/install.html#nowhere",
        "faq",
    ]
    assert index.resolve(["guide#1", "guide#0"], source=source) == ["guide#1"]  # ids as given
    # From a chunk of install.html: its own anchor dropped, its page's other chunks kept.
    own = ["install.html#requirements", "install.html#linux", "install.html#macos-setup"]
    assert index.resolve(own, base="https://d.org/", source=chunks()[0]) == [
        "install#1",
        "https://d.org/install.html#macos-setup",
    ]
    assert index.resolve(["https://d.org/guide.html"]) == ["https://d.org/guide.html"]


def test_several_holders_give_the_first_chunk_of_the_page() -> None:
    shared = [LinkTarget(f"c{k}", "p.html", headings=("Setup",), order=k) for k in (2, 0, 1)]
    assert LinkIndex(shared).resolve(["p.html#setup"]) == ["c0"]


def test_different_pages_claiming_one_url_say_what_to_pass() -> None:
    clash = [
        LinkTarget("a#0", "a.html", aliases=("https://d.org/shared",)),
        LinkTarget("a#1", "a.html", aliases=("https://d.org/shared",)),
        LinkTarget("b#0", "b.html", aliases=("https://d.org/shared",)),
    ]
    with pytest.raises(InputError) as error:
        LinkIndex(clash)
    message = str(error.value)
    for needed in ("https://d.org/shared", "'a.html'", "'b.html'", "'a#0'", "'b#0'"):
        assert needed in message
    assert "url_keys=('source',)" in message and "id_by_target=" in message
    with pytest.raises(InputTypeError):
        LinkIndex(["a.html"])  # type: ignore[list-item]
    with pytest.raises(InputTypeError):
        LinkIndex(chunks()).resolve("install.html")


def test_build_target_index_takes_pages_and_names_what_to_pass() -> None:
    triples = [
        ("install.html", "install#0", "install.html"),
        ("install.html", "install#1", "install.html"),
    ]
    index = build_target_index([*triples, ("faq.html", "faq")])
    assert index == {"install.html": "install.html", "faq.html": "faq"}
    assert resolve_links(["install.html#linux", "faq.html"], index) == ["install.html", "faq"]
    with pytest.raises(InputError) as error:
        build_target_index([("install.html", "install#0"), ("install.html", "install#1")])
    message = str(error.value)
    assert "one target, several ids" in message and "'install#0', 'install#1'" in message
    assert "(target, id, page) triples" in message and "without id_by_target" in message
    with pytest.raises(InputTypeError, match="triples"):
        build_target_index([("a", "x", 3)])  # type: ignore[list-item]


def test_extract_anchors_from_html_and_markdown() -> None:
    html = '<h2 id="linux">Linux</h2><a name="old"></a><p id=x>t</p><a href="#y">no</a>'
    assert extract_anchors(html) == ["linux", "old", "x"]
    markdown = (
        "# Install on Linux!\n```\n# not a heading\n```\n## Config {#cfg}\n### C# basics ##\n"
    )
    assert extract_anchors(markdown) == ["install-on-linux", "cfg", "c-basics"]
    assert extract_anchors(markdown, "html") == []
    with pytest.raises(InputError, match="fmt"):
        extract_anchors("x", "rst")
    with pytest.raises(InputTypeError):
        extract_anchors(None)  # type: ignore[arg-type]


def test_a_heading_left_at_a_chunk_s_end_belongs_to_the_next_chunk() -> None:
    """LangChain's HTML splitter cuts before <p>: the <h2> of a section ends the chunk before."""
    first = "<p>" + "Requirements text goes here. " * 5 + '</p>\n<h2 id="linux">Linux</h2>'
    second = "<p>On Linux install the headers with apt.</p>"
    assert opening_anchors(first) == ["linux"] and opening_anchors(second) == []
    targets = [
        link_target("p#0", {"source": "p.html", "chunk_index": 0}, first),
        link_target("p#1", {"source": "p.html", "chunk_index": 1}, second),
    ]
    assert section_anchors(targets) == [(), ("linux",)]
    assert LinkIndex(targets).resolve(["p.html#linux"]) == ["p#1"]
    # Not the page's next chunk (chunk 1 is missing): the anchor stays where it was found.
    gap = [targets[0], link_target("p#2", {"source": "p.html", "chunk_index": 2}, second)]
    assert section_anchors(gap) == [("linux",), ()]


def test_link_target_reads_metadata_and_text() -> None:
    target = link_target(
        "c1",
        {
            "source": "docs/a.html",
            "url": "https://d.org/docs/a.html",
            "anchors": '["declared"]',
            "Header 2": "Usage",
            "chunk_index": "3",
        },
        '<h3 id="found">Found</h3> and more words after the heading to keep it inside.',
    )
    assert target == LinkTarget(
        "c1",
        "docs/a.html",
        aliases=("https://d.org/docs/a.html",),
        anchors=("declared", "found"),
        headings=("Usage",),
        order=3,
    )


def test_what_the_index_writes_is_what_chunk_links_reads() -> None:
    """Enrichment and rank time agree: the page value and page#anchor meet the chunks."""
    metadata = [{"source": "install.html", "chunk_index": k} for k in range(3)]
    texts = ["Requirements: Python.", '<h2 id="linux">Linux</h2> apt install', "macOS: brew"]
    targets = [
        link_target(None, m, t) for m, t in zip(metadata, texts, strict=True)
    ]  # id-less chunks: links cannot name them, ChunkLinks finds them
    anchors = section_anchors(targets)
    written = LinkIndex(targets).resolve(["install.html#linux", "install.html"])
    assert written == ["install.html#linux", "install.html"]
    pool = [
        Candidate("guide", "apt install fails", 0.9, {"source": "guide.html", "links": written})
    ] + [
        Candidate(f"x{k}", t, 0.5, {**m, "anchors": list(a)})
        for k, (m, t, a) in enumerate(zip(metadata, texts, anchors, strict=True))
    ]
    matrix = ChunkLinks(symmetric=False).adjacency(pool).toarray()
    assert matrix[0].tolist() == [0, 0, 1, 0]  # both links land on the Linux chunk
