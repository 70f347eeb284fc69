"""Zero-config chunk order from what real splitters write: ``source`` + ``start_index``
(LangChain ``add_start_index=True``) read as spans that meet, and the exact fix named when
chunks carry no order at all."""

from __future__ import annotations

from itertools import pairwise

import pytest

from grapher_core import AdjacentChunks, Candidate
from grapher_core.edges.detect import (
    ADJACENT_FIELD,
    describe,
    detect_proximities,
    missing_order_hint,
)
from grapher_core.errors import ConfigError, InputTypeError


def chunk(name: str, source: str | None, start: int | None, length: int = 100) -> Candidate:
    metadata: dict[str, object] = {}
    if source is not None:
        metadata["source"] = source
    if start is not None:
        metadata["start_index"] = start
    return Candidate(name, "x" * length, None, metadata)


def edges(proximity: AdjacentChunks, candidates: list[Candidate]) -> set[tuple[str, str]]:
    matrix = proximity.adjacency(candidates).tocoo()
    return {
        (candidates[i].id, candidates[j].id)
        for i, j in zip(matrix.row, matrix.col, strict=True)
        if i < j
    }


OFFSET = AdjacentChunks(doc_field="source", index_field="start_index", order="offset")


def test_source_and_start_index_detect_offset_order() -> None:
    found = detect_proximities([chunk("a", "guide.md", 0), chunk("b", "guide.md", 100)])
    assert found == [OFFSET]
    assert describe(found) == "AdjacentChunks('source', by offset start_index)"


def test_chunk_index_wins_over_offsets_and_doc_id_over_source() -> None:
    candidates = [
        Candidate("a", "t", None, {"doc_id": "d", "source": "s", "chunk_index": 0}),
        Candidate("b", "t", None, {"doc_id": "d", "source": "s", "chunk_index": 1}),
    ]
    assert detect_proximities(candidates) == [AdjacentChunks()]
    by_source = [Candidate("a", "t", None, {"source": "s", "chunk_index": 0, "start_index": 0})]
    assert detect_proximities(by_source) == [AdjacentChunks(doc_field="source")]


def test_relationships_state_the_order_once() -> None:
    candidates = [
        Candidate("a", "t", None, {"source": "s", "start_index": 0, ADJACENT_FIELD: ["b"]}),
        Candidate("b", "t", None, {"source": "s", "start_index": 5, ADJACENT_FIELD: ["a"]}),
    ]
    found = detect_proximities(candidates)
    assert [type(p).__name__ for p in found] == ["ForeignKeys"]


def test_spans_that_meet_are_linked_overlap_and_stripped_whitespace() -> None:
    candidates = [
        chunk("c0", "d", 0),  # 0..100
        chunk("c1", "d", 80),  # overlaps c0 by 20 (chunk_overlap)
        chunk("c2", "d", 190),  # 10 characters of stripped whitespace after c1 (80..180)
        chunk("e0", "e", 100),  # another document: never linked to d
    ]
    assert edges(OFFSET, candidates) == {("c0", "c1"), ("c1", "c2")}


def test_a_chunk_missing_from_the_pool_leaves_its_neighbours_apart() -> None:
    # c1 (100..200) was not retrieved: c0 and c2 are consecutive in the pool, not in the text.
    candidates = [chunk("c2", "d", 200), chunk("c0", "d", 0), chunk("c5", "d", 500)]
    assert edges(OFFSET, candidates) == set()


def test_only_the_next_pooled_chunk_is_linked_and_duplicates_are_not() -> None:
    candidates = [
        chunk("a", "d", 0, length=300),
        chunk("b", "d", 100),  # inside a's span: a's next chunk (100..200)
        chunk("c", "d", 210),  # inside a's span too, but b comes first: linked to b only
    ]
    assert edges(OFFSET, candidates) == {("a", "b"), ("b", "c")}
    twice = [chunk("a", "d", 0), chunk("a2", "d", 0)]  # one start twice: not neighbours
    assert edges(OFFSET, twice) == set()


def test_max_gap_bounds_the_whitespace_allowed() -> None:
    candidates = [chunk("a", "d", 0), chunk("b", "d", 140)]
    assert edges(OFFSET, candidates) == set()
    wider = AdjacentChunks(
        doc_field="source", index_field="start_index", order="offset", max_gap=40
    )
    assert edges(wider, candidates) == {("a", "b")}


def test_bad_order_options_are_refused() -> None:
    with pytest.raises(ConfigError):
        AdjacentChunks(order="rank")
    with pytest.raises(ConfigError):
        AdjacentChunks(order="offset", max_gap=-1)
    with pytest.raises(InputTypeError):
        AdjacentChunks(order="offset", max_gap=1.5)  # type: ignore[arg-type]


def test_offset_order_gives_no_expansion_keys() -> None:
    assert OFFSET.link_keys(chunk("a", "d", 0)) == []
    assert OFFSET.own_keys(chunk("a", "d", 0)) == []
    assert AdjacentChunks().link_keys(Candidate("a", "t", None, {"doc_id": "d", "chunk_index": 1}))


def test_hint_names_the_fix_when_sources_repeat_without_order() -> None:
    candidates = [chunk("a", "guide.md", None), chunk("b", "guide.md", None), chunk("c", "x", None)]
    assert detect_proximities(candidates) == []
    hint = missing_order_hint(candidates)
    assert hint is not None
    assert "2 of the 3 candidates share their 'source'" in hint
    assert "RecursiveCharacterTextSplitter(add_start_index=True)" in hint
    assert "ChunkLinkTransformer()" in hint
    assert "SentenceSplitter" in hint
    assert "AdjacentChunks(doc_field='source'" in hint


def test_hint_for_an_order_without_a_document() -> None:
    hint = missing_order_hint([chunk("a", None, 0), chunk("b", None, 90)])
    assert hint is not None
    assert "'start_index' but no document field" in hint
    assert "order='offset'" in hint


def test_no_hint_when_order_is_readable_or_nothing_repeats() -> None:
    assert missing_order_hint([chunk("a", "d", 0), chunk("b", "d", 100)]) is None
    assert missing_order_hint([chunk("a", "d", None), chunk("b", "e", None)]) is None
    linked = [Candidate("a", "t", None, {"source": "d", ADJACENT_FIELD: ["b"]})] * 2
    assert missing_order_hint(linked) is None
    assert missing_order_hint([]) is None


def test_real_langchain_splitter_output_links_consecutive_chunks() -> None:
    splitters = pytest.importorskip("langchain_text_splitters")
    paragraphs = [
        f"Paragraph {i}: " + " ".join(f"word{i}_{k}" for k in range(30)) for i in range(8)
    ]
    text = "\n\n".join(paragraphs)
    splitter = splitters.RecursiveCharacterTextSplitter(
        chunk_size=300, chunk_overlap=60, add_start_index=True
    )
    documents = splitter.create_documents(
        [text, text], metadatas=[{"source": "a"}, {"source": "b"}]
    )
    candidates = [
        Candidate(f"{d.metadata['source']}{n}", d.page_content, None, d.metadata)
        for n, d in enumerate(documents)
    ]
    (found,) = detect_proximities(candidates)
    assert found == OFFSET
    by_doc: dict[str, list[str]] = {}
    for c in candidates:
        by_doc.setdefault(str(c.metadata["source"]), []).append(c.id)
    expected = {pair for ids in by_doc.values() for pair in pairwise(ids)}
    assert len(expected) >= 6
    assert edges(found, candidates) == expected
    # Every other chunk retrieved: no edge, though they are consecutive in the pool.
    assert edges(found, candidates[::2]) == set()
