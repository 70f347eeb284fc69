"""ChunkLinks: links between chunked pages land on one chunk; zero-config detection picks it for
``links`` on chunks and leaves one-object-per-target pools exactly as they were."""

from __future__ import annotations

import json

import numpy as np
import pytest

from grapher_core import AdjacentChunks, Candidate, ForeignKeys, GraphReranker, SharedEntities
from grapher_core.edges import ChunkLinks
from grapher_core.edges.detect import describe, detect_proximities
from grapher_core.edges.links import anchor_key, heading_keys, page_key, slugify, split_link
from grapher_core.edges.serialise import proximity_from_dict, proximity_to_dict
from grapher_core.expand.source import InMemorySource
from grapher_core.testing import check_proximity, sample_candidates

SECTIONS = ["requirements", "linux", "macos", "windows"]
BODIES = [
    "You need Python and a C compiler for the optional speedups.",
    "On Linux install the libfoo development headers with apt, then pip install widget.",
    "On macOS use Homebrew to install foo, then pip install widget in a virtualenv.",
    "On Windows run the installer and add widget to the PATH variable.",
]


def manual(link: str, *, anchors: bool = True, **linking: object) -> list[Candidate]:
    """A linking chunk of guide.html (best score) and the four chunks of install.html."""
    pool = [
        Candidate(
            "guide.html#000",
            "A build that fails on a missing libfoo header needs the development headers.",
            0.9,
            {"source": "guide.html", "doc_id": "guide.html", "chunk_index": 0, "links": [link]}
            | dict(linking),
        )
    ]
    for k, (anchor, body) in enumerate(zip(SECTIONS, BODIES, strict=True)):
        metadata: dict[str, object] = {
            "source": "install.html",
            "doc_id": "install.html",
            "chunk_index": k,
            "n_chunks_in_doc": len(SECTIONS),
            "title": "Installing",
            "heading": anchor.capitalize(),
        }
        if anchors:
            metadata["anchors"] = [anchor, f"{anchor}-notes"]
        pool.append(Candidate(f"install.html#{k:03d}", body, 0.5 - k / 100, metadata))
    return pool


def targets(proximity: ChunkLinks, pool: list[Candidate], row: int = 0) -> list[str]:
    matrix = proximity.adjacency(pool).toarray()
    return [pool[j].id for j in np.flatnonzero(matrix[row])]


def test_keeps_the_proximity_contract() -> None:
    check_proximity(ChunkLinks())
    check_proximity(ChunkLinks(), manual("install.html"))
    check_proximity(ChunkLinks(embed=True, symmetric=False), manual("install.html#linux"))
    assert ChunkLinks().adjacency(sample_candidates()).nnz > 0  # id links, as ForeignKeys


def test_an_anchor_lands_on_the_chunk_holding_it_and_nowhere_else() -> None:
    pool = manual("install.html#linux")
    matrix = ChunkLinks().adjacency(pool).toarray()
    assert targets(ChunkLinks(), pool) == ["install.html#001"]
    assert matrix[2, 0] == 1  # symmetric, weight 1
    assert matrix.sum() == 2  # one link, one edge each way: the siblings get nothing
    # ForeignKeys on the page field gave every chunk of the page the same edge (the bug).
    sprayed = ForeignKeys("links", target_field="source").adjacency(manual("install.html"))
    assert sprayed.toarray()[0, 1:].tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        ("install.html#MacOS", "install.html#002"),  # case and punctuation: by key
        ("install.html#windows_notes", "install.html#003"),
        ("install.html#mac%20os", "install.html#002"),  # percent-decoded
        ("install.html/#linux", "install.html#001"),  # trailing slash
    ],
)
def test_anchors_match_whatever_the_slug_convention(link: str, expected: str) -> None:
    assert targets(ChunkLinks(), manual(link)) == [expected]


def test_headings_stand_in_for_missing_anchor_lists() -> None:
    pool = manual("install.html#windows", anchors=False)
    assert targets(ChunkLinks(), pool) == ["install.html#003"]  # metadata["heading"]
    splitter_style = (
        pool[:1]
        + [  # LangChain's MarkdownHeaderTextSplitter names
            Candidate(
                c.id,
                c.text,
                c.score,
                {
                    **{k: v for k, v in c.metadata.items() if k != "heading"},
                    "Header 2": c.metadata["heading"],
                },
            )
            for c in pool[1:]
        ]
    )
    assert targets(ChunkLinks(), splitter_style) == ["install.html#003"]
    llama = [
        Candidate(c.id, c.text, c.score, {**c.metadata, "header_path": "/Installing/Windows/"})
        if c.id.endswith("3")
        else c
        for c in splitter_style
    ]
    assert targets(ChunkLinks(heading_fields=("header_path",)), llama) == ["install.html#003"]


def test_a_section_over_several_chunks_is_entered_at_its_start() -> None:
    pool = manual("install.html#install", anchors=False)
    pool = [pool[0]] + [
        Candidate(c.id, c.text, c.score, {**c.metadata, "heading": "Install"}) for c in pool[1:]
    ]
    shuffled = [pool[0], pool[3], pool[1], pool[4], pool[2]]
    assert targets(ChunkLinks(), shuffled) == ["install.html#000"]  # lowest chunk_index


def test_an_anchor_declared_by_no_pooled_chunk_gives_no_edge() -> None:
    """The anchored chunk was not retrieved: no sibling is lifted in its place."""
    assert ChunkLinks().adjacency(manual("install.html#uninstalling")).nnz == 0


def test_without_anchor_lists_an_unknown_anchor_is_a_whole_page_link() -> None:
    pool = manual("install.html#unknown-anchor", anchors=False)
    assert targets(ChunkLinks(), pool) == ["install.html#001"]  # the most similar chunk


def test_a_whole_page_link_goes_to_the_most_similar_chunk_by_text() -> None:
    """No vectors: TF-IDF overlap with the linking chunk (libfoo, headers) picks Linux."""
    assert targets(ChunkLinks(), manual("install.html")) == ["install.html#001"]


def test_a_whole_page_link_goes_to_the_most_similar_chunk_by_vectors() -> None:
    pool = manual("install.html")
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(pool), 8))
    vectors[4] = vectors[0] + 0.01 * rng.normal(size=8)  # windows is the linking chunk's twin
    with_vectors = [
        Candidate(c.id, c.text, c.score, c.metadata, v) for c, v in zip(pool, vectors, strict=True)
    ]
    assert targets(ChunkLinks(embed=True), with_vectors) == ["install.html#003"]
    # Without embed=True the vectors are not read: the texts choose, as in a door without them.
    assert targets(ChunkLinks(), with_vectors) == targets(ChunkLinks(), pool)
    # One chunk of the page without a vector: the text decides for that link.
    partial = [*with_vectors[:2], pool[2], *with_vectors[3:]]
    assert targets(ChunkLinks(embed=True), partial) == ["install.html#001"]
    # A NaN vector does not break the ranking: that link falls back to text.
    broken = list(with_vectors)
    broken[4] = Candidate(pool[4].id, pool[4].text, 0.1, pool[4].metadata, np.full(8, np.nan))
    assert targets(ChunkLinks(embed=True), broken) == ["install.html#001"]


def test_no_overlap_goes_to_the_page_s_first_chunk() -> None:
    pool = manual("install.html")
    pool[0] = Candidate(pool[0].id, "zzz qqq", 0.9, pool[0].metadata)
    reordered = [pool[0], pool[3], pool[2], pool[4], pool[1]]
    assert targets(ChunkLinks(), reordered) == ["install.html#000"]


def test_a_link_is_evidence_for_the_chunk_holding_it_only() -> None:
    """A link in chunk 3 of page A: an edge from chunk 3, none from its siblings."""
    a = [Candidate(f"a#{k}", f"text {k}", 0.9, {"source": "a", "chunk_index": k}) for k in range(4)]
    a[3] = Candidate("a#3", "text 3", 0.9, {"source": "a", "chunk_index": 3, "links": ["b"]})
    b = Candidate("b", "other page", 0.1, {"source": "b"})
    matrix = ChunkLinks(symmetric=False).adjacency([*a, b]).toarray()
    assert matrix[:, 4].tolist() == [0, 0, 0, 1, 0]


def test_links_to_its_own_page_and_to_itself() -> None:
    pool = manual("install.html")
    pool[2] = Candidate(
        pool[2].id,
        pool[2].text,
        pool[2].score,
        {**pool[2].metadata, "links": ["install.html", "install.html#linux", "install.html#macos"]},
    )
    # Whole-page link to its own page (navigation) and an anchor it holds itself: no edge; an
    # anchor of another chunk of its own page: an edge.
    assert targets(ChunkLinks(symmetric=False), pool, row=2) == ["install.html#002"]


def test_ids_and_one_object_pages_link_as_foreign_keys_do() -> None:
    """One object per target: exactly ForeignKeys' matrix (ids, and a page field)."""
    tables = [
        Candidate(f"t{i}", metadata={"foreign_keys": [f"t{(i + 1) % 5}"], "source": f"p{i}"})
        for i in range(5)
    ]
    ids = ChunkLinks("foreign_keys").adjacency(tables).toarray()
    assert np.array_equal(ids, ForeignKeys().adjacency(tables).toarray())
    pages = [
        Candidate(f"n{i}", metadata={"links": [f"p{(i + 2) % 5}"], "source": f"p{i}"})
        for i in range(5)
    ]
    assert np.array_equal(
        ChunkLinks().adjacency(pages).toarray(),
        ForeignKeys("links", target_field="source").adjacency(pages).toarray(),
    )


def test_lists_in_every_store_shape() -> None:
    pool = manual("install.html#linux")
    as_json = [
        Candidate(
            c.id,
            c.text,
            c.score,
            {k: json.dumps(v) if isinstance(v, list) else v for k, v in c.metadata.items()},
        )
        for c in pool
    ]
    assert targets(ChunkLinks(), as_json) == ["install.html#001"]


def test_helpers() -> None:
    assert split_link("a.html#caf%C3%A9") == ("a.html", "café")
    assert split_link("a.html") == ("a.html", None) == split_link("a.html#")
    assert page_key(" docs/a%20b/ ") == "docs/a b"
    assert anchor_key("Install on Linux!") == anchor_key("install-on-linux") == "installonlinux"
    assert slugify("Install on Linux!") == "install-on-linux"
    assert heading_keys({"heading": "A/B", "Header 2": ["Setup"]}) == {"ab", "a", "b", "setup"}


def test_serialises_by_name_and_back_from_json() -> None:
    proximity = ChunkLinks(target_field="url", heading_fields=("heading",), embed=True)
    data = json.loads(json.dumps(proximity_to_dict(proximity)))
    assert data["class"] == "ChunkLinks"
    again = proximity_from_dict(data)
    assert again == proximity and hash(again) == hash(proximity)  # a list back as a tuple
    with pytest.raises(ValueError, match="heading_fields"):
        ChunkLinks(heading_fields=(1,))  # type: ignore[arg-type]


def test_embed_declares_needs_embeddings() -> None:
    assert not ChunkLinks().needs_embeddings
    assert GraphReranker([ChunkLinks(embed=True)]).needs_embeddings
    assert not GraphReranker([ChunkLinks()]).needs_embeddings


def test_expansion_keys() -> None:
    chunk = manual("install.html#linux")[0]
    proximity = ChunkLinks()
    assert proximity.link_keys(chunk) == [
        ((None, "install.html#linux"),),
        (("source", "install.html"), ("anchors", "linux")),
    ]
    corpus = manual("install.html")[1:]
    source = InMemorySource(corpus)
    found = source.fetch([proximity.link_keys(chunk)[1]])
    assert [c.id for c in found] == ["install.html#001"]
    assert (("source", "install.html"),) in proximity.own_keys(corpus[0])


# -- zero-config detection ---------------------------------------------------------------------


def test_detection_picks_chunk_links_for_chunks() -> None:
    found = detect_proximities(manual("install.html#linux"))
    assert found == [ChunkLinks("links", target_field="source"), AdjacentChunks()]
    assert describe(found) == "ChunkLinks('links' -> 'source'), AdjacentChunks('doc_id')"


def test_detection_on_anchors_or_repeated_pages_without_chunk_keys() -> None:
    anchored = [
        Candidate("x", metadata={"links": ["b.html#part"], "url": "a.html"}),
        Candidate("y", metadata={"url": "b.html"}),
    ]
    assert detect_proximities(anchored) == [ChunkLinks("links", target_field="url")]
    repeated = [
        Candidate("x", metadata={"links": ["b.html"], "url": "a.html"}),
        Candidate("y1", metadata={"url": "b.html"}),
        Candidate("y2", metadata={"url": "b.html/"}),  # the same page
    ]
    assert detect_proximities(repeated) == [ChunkLinks("links", target_field="url")]


def test_detection_leaves_one_object_per_target_pools_as_they_were() -> None:
    tables = [
        Candidate(f"9f-{i}", metadata={"table_id": f"db.t{i}", "foreign_keys": [f"db.t{i + 1}"]})
        for i in range(4)
    ]
    assert detect_proximities(tables) == [ForeignKeys("foreign_keys", target_field="table_id")]
    passages = [
        Candidate("p1", metadata={"title": "Ada", "links": ["Babbage"], "entities": ["x"]}),
        Candidate("p2", metadata={"title": "Babbage"}),
    ]
    assert detect_proximities(passages) == [
        ForeignKeys("links", target_field="title"),
        SharedEntities("entities"),
    ]
    # Sentences of one title repeat it, but mentions keep ForeignKeys (the benchmarks' graph).
    sentences = [
        Candidate(
            f"Ada#{k}",
            metadata={"title": "Ada", "doc_id": "Ada", "chunk_index": k, "mentions": ["Babbage"]},
        )
        for k in range(2)
    ] + [
        Candidate(
            f"Babbage#{k}", metadata={"title": "Babbage", "doc_id": "Babbage", "chunk_index": k}
        )
        for k in range(2)
    ]
    assert detect_proximities(sentences) == [
        ForeignKeys("mentions", target_field="title"),
        AdjacentChunks(),
    ]


@pytest.mark.parametrize("seeds", [None, "rank"])
def test_zero_config_lifts_the_anchored_chunk_above_its_siblings(seeds: str | None) -> None:
    """The retriever's order: the linking chunk, chunks of other pages, then the install
    chunks with Windows last (as in a pool of 50, where a page's chunks are spread over the
    middle ranks); whatever the seed policy, Windows comes first of its page."""
    guide, *install = manual("install.html#windows")
    faq = [
        Candidate(f"faq.html#00{k}", "Frequently asked", 0.6 - k / 100, {"source": "faq.html"})
        for k in range(8)
    ]
    pool = [guide, *faq, *install]
    before = [c.id for c in pool if c.id.startswith("install")]
    assert before.index("install.html#003") == 3  # last of its page
    ranked = GraphReranker(strict=True, seed_transform=seeds).rerank(pool)
    after = [r.id for r in ranked if r.id.startswith("install")]
    assert after[0] == "install.html#003", after
    lifted = next(r for r in ranked if r.id == "install.html#003")
    assert lifted.explanation[0].neighbour_id == "guide.html#000"
    assert lifted.explanation[0].kinds == ("structural",)


def test_links_between_chunks_without_order_name_the_fix(caplog: pytest.LogCaptureFixture) -> None:
    """Chunked pages with links but no chunk order: said once, with the fix; with an order
    (doc_id + chunk_index) nothing is said."""
    import logging

    def pool(ordered: bool) -> list[Candidate]:
        out = []
        for i in range(5):
            metadata: dict[str, object] = {"source": "p.md"}
            if ordered:
                metadata.update(doc_id="p.md", chunk_index=i)
            out.append(Candidate(f"p{i}", f"chunk {i} of p", metadata=metadata))
        out.append(Candidate("q0", "see p", metadata={"source": "q.md", "links": ["p.md"]}))
        out.append(Candidate("q1", "more of q", metadata={"source": "q.md"}))
        return out

    with caplog.at_level(logging.INFO, logger="grapher"):
        reranker = GraphReranker()
        reranker.rerank(pool(ordered=False))
        reranker.rerank(pool(ordered=False))
    said = [r.message for r in caplog.records if "no chunk order" in r.message]
    assert len(said) == 1 and "ChunkLinkTransformer()" in said[0]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="grapher"):
        GraphReranker().rerank(pool(ordered=True))
    assert not [r for r in caplog.records if "links between chunked pages" in r.message]
