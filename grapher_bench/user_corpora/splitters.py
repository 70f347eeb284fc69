"""Chunk order as the frameworks' own splitters write it: zero-config GraphER in both wrappers.

``python -m grapher_bench.user_corpora.splitters [--links] [--out docs/user_corpora.md]``

The pages of the two documentation corpora (Python-Markdown's ``docs/`` and pygame's HTML
reference, as ``build`` extracted them: a page is its chunks joined by blank lines) are split
again, as a user would split them, by

* LangChain ``RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=150,
  add_start_index=True)`` over documents whose ``source`` is the page path (what a loader
  writes): each chunk carries ``source`` + ``start_index`` and nothing else;
* LlamaIndex ``SentenceSplitter(chunk_size=256, chunk_overlap=32)`` over documents whose
  ``doc_id`` is the page path and whose metadata is ``file_name``: each node carries the
  ``SOURCE`` / ``PREVIOUS`` / ``NEXT`` relationships the parser sets.

Each split is then handed to *both* wrappers, so that the two can be compared on the same
chunks: a LangChain split goes to LlamaIndex as ``TextNode``s with the same metadata (no
relationships), a LlamaIndex split goes to LangChain as ``Document``s carrying what a LangChain
splitter would have written (``source`` = ``ref_doc_id``, ``start_index`` = ``start_char_idx``).
Zero-config detection reads ``source`` + ``start_index`` as spans that meet
(``AdjacentChunks(order="offset")``) and the relationships as ``ForeignKeys`` over the
neighbours' ids; the two give the same graph, which the "same ranking" column checks per
question.

The questions (:data:`QUESTIONS`) are hand-written: each names a page and two verbatim passages
of it, about one chunk apart, that the answer needs. Gold, per split, is the first chunk holding
the first passage and the last chunk holding the second; a question counts for a split when
those are two consecutive chunks of the page (the others are reported, not scored). Metrics as
in ``run``: gold@5, PR@5, PR@10 of the packaged MiniLM retriever (``k=20``) and of
``GraphERReranker(top_n=10)`` / ``GraphERPostprocessor(top_n=10)``, zero config.

``--links`` measures the same splits with the manuals' hyperlinks kept (:func:`measure_links`,
its own section between :data:`LINK_MARKERS`). The corpora's text has its markup stripped, so
each original chunk's ``links`` (``page#anchor``) and ``anchors`` are carried onto the re-split
chunk overlapping it most (anchors: the chunk where the section starts) and every wrapper reads
them with its own extractor, as a user would: LangChain ``ChunkLinkTransformer()`` then
``LinkTransformer()``, LlamaIndex ``GraphERLinkExtractor()``, each over a copy of the chunk
whose text ends with the links as relative Markdown links (``[link](../ref/surface.html#x)``);
what they write is copied onto the chunk with its plain text, so the text embedded is the
text's. LlamaIndex nodes keep every metadata key out of the embedded text (the extractor hides
its own, the pipeline the rest); ablations on the LlamaIndex split show the postprocessor with
relationships only, links only and both, and the same with the metadata embedded in the node
text (``excluded_embed_metadata_keys=[]``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from grapher_bench.sections import write_section
from grapher_bench.user_corpora import HERE
from grapher_bench.user_corpora.run import Score, _run_system, score

__all__ = ["LINK_MARKERS", "MARKERS", "QUESTIONS", "Question", "main", "measure_links"]

MARKERS = ("<!-- user-splitters:start -->", "<!-- user-splitters:end -->")
LINK_MARKERS = ("<!-- user-splitters-links:start -->", "<!-- user-splitters-links:end -->")
FETCH_K = 20
TOP_N = 10


@dataclass(frozen=True)
class Question:
    """A question whose answer needs two passages of one page, about a chunk apart."""

    id: str
    page: str
    text: str
    first: str
    second: str


def _q(corpus: str, n: int, page: str, text: str, first: str, second: str) -> Question:
    return Question(f"{corpus}-{n:02d}", page, text, first, second)


QUESTIONS: dict[str, tuple[Question, ...]] = {
    "markdown_docs": (
        _q("md", 1, "extensions/toc.md",
           "Where does the toc extension put the Table of Contents, and how do I get it as a "
           "nested list of tokens?",
           "Place a marker in the document where you would like the Table of Contents",
           "The toc_tokens attribute is also available on the Markdown class"),
        _q("md", 2, "extensions/toc.md",
           "Which toc options set the marker text and make leading permanent links?",
           "* marker: Text to find and replace with the Table of Contents",
           "* permalink_leading: Set to True if the extension should generate leading"),
        _q("md", 3, "extensions/toc.md",
           "How do I shift header levels with baselevel in toc, and is there a Unicode slugify?",
           "The baselevel setting allows the header levels to be automatically adjusted",
           "An alternate version of the default callable supporting Unicode strings"),
        _q("md", 4, "extensions/footnotes.md",
           "How is a footnote definition written, and how do I choose where footnotes render?",
           "A footnote definition must start with the corresponding footnote reference",
           "* PLACE_MARKER: A text string used to mark the position where the footnotes"),
        _q("md", 5, "extensions/footnotes.md",
           "How are footnotes ordered, and how do I clear footnote definitions between runs?",
           "* USE_DEFINITION_ORDER: Order footnotes by definition order",
           "However, if needed, the definitions can be cleared between runs by calling reset"),
        _q("md", 6, "extensions/wikilinks.md",
           "What counts as a WikiLink, and how can I customise how its URL is built?",
           "A [[bracketed]] word is any combination of upper or lower case letters",
           "* build_url: Callable which formats the URL from its parts."),
        _q("md", 7, "extensions/wikilinks.md",
           "How do I make wiki links point to /wiki/ with .html, and can page meta-data "
           "override that?",
           "For an example, let us suppose links should always point to the sub-directory",
           "The WikiLink extension also supports the Meta-Data extension"),
        _q("md", 8, "extensions/code_hilite.md",
           "How do I generate the CSS for CodeHilite, and how do I tell it a block's language?",
           "pygmentize -S default -f html -a .codehilite > styles.css",
           "The CodeHilite extension follows the same syntax as regular (indented) Markdown"),
        _q("md", 9, "extensions/code_hilite.md",
           "What does a shebang line do in a CodeHilite block, and what happens to a block "
           "with no language?",
           "If the first line of the code block contains a shebang",
           "CodeHilite is completely backwards compatible so that if a code block"),
        _q("md", 10, "extensions/code_hilite.md",
           "Which CodeHilite options control line numbers and whether Pygments is used at all?",
           "* linenums: An alias to Pygments' linenos formatter option.",
           "* use_pygments: Specifies the use of Pygments in generating the output."),
        _q("md", 11, "extensions/meta_data.md",
           "What may a meta-data keyword consist of, and does the meta-data reach the HTML?",
           "The keywords are case-insensitive and may consist of letters",
           "All meta-data is stripped from the document prior to any further processing"),
        _q("md", 12, "extensions/meta_data.md",
           "Where do I find the parsed meta-data in Python, and which extensions read it?",
           "The meta-data is made available as a python Dict in the Meta attribute",
           "The following extensions are currently known to work with the Meta-Data"),
    ),
    "pygame_docs": (
        _q("pg", 1, "tut/newbieguide.html",
           "What format does convert() change, and when should I not call convert()?",
           "The 'format' that convert() refers to isn't the file format",
           "The only times you don't want to use convert() is when"),
        _q("pg", 2, "tut/newbieguide.html",
           "How does dirty rect updating work instead of display.flip(), step by step?",
           "Generally this entails calling pygame.display.update() (with a list of rects)",
           "Append the sprite's current location rectangle to a list called dirty_rects."),
        _q("pg", 3, "tut/newbieguide.html",
           "What should I check first for performance problems, and do HWSURFACE or "
           "DOUBLEBUF make pygame faster?",
           "If you are having performance problems, first make sure you aren't loading files",
           "DOUBLEBUF still has some use"),
        _q("pg", 4, "tut/newbieguide.html",
           "How do I find the sprites under a point with rects, and how is pixel-perfect "
           "collision checked?",
           "For example, suppose I'd like to get a list of all the sprites that contain a point",
           "Check to see if the rects are in collision. If they aren't, ignore them."),
        _q("pg", 5, "tut/newbieguide.html",
           "What are pygame's two ways of reading input, and what is the weakness of checking "
           "the device state?",
           "The first is by directly checking the state of the device.",
           "The state system has one great weakness"),
        _q("pg", 6, "tut/newbieguide.html",
           "What is the difference between colorkey blitting, image alpha and per-pixel alpha?",
           "'Colorkey blitting' involves telling pygame",
           "'Per-pixel alpha' is the other flavor of alpha"),
        _q("pg", 7, "ref/mixer.html",
           "What extra conditions apply to initialising the mixer, and what does the size "
           "argument of mixer.init() mean?",
           "The mixer module must be initialized like other pygame modules, but it has some",
           "The size argument represents how many bits are used for each audio sample"),
        _q("pg", 8, "ref/mixer.html",
           "How many mixer channels are there by default, can I reserve some, and how do I "
           "get a free channel?",
           "Sets the number of available channels for the mixer. The default value is 8.",
           "This will find and return an inactive Channel object."),
        _q("pg", 9, "ref/mixer.html",
           "How do I loop a Sound a number of times, and how do I set its volume?",
           "The loops argument controls how many times the sample will be repeated",
           "This will set the playback volume (loudness) for this Sound."),
        _q("pg", 10, "ref/mixer.html",
           "How do I queue a sound on a channel and get an event when playback finishes?",
           "When a Sound is queued on a Channel, it will begin playing immediately after",
           "When an endevent is set for a channel"),
        _q("pg", 11, "ref/time.html",
           "What is the difference between time.wait and time.delay, and how do I post an "
           "event on a timer?",
           "Will pause for a given number of milliseconds. This function sleeps the process",
           "Set an event to appear on the event queue every given number of milliseconds"),
        _q("pg", 12, "ref/time.html",
           "How does Clock.tick limit the frame rate, and how does tick_busy_loop differ?",
           "Creates a new Clock object that can be used to track an amount of time",
           "Note that this function uses pygame.time.delay(), which uses lots of CPU"),
    ),
}  # fmt: skip
"""Hand-written, by reading the pages: two passages about one chunk apart, both needed."""

SPLITS: tuple[str, ...] = ("LangChain splitter", "LlamaIndex splitter")


@dataclass
class Chunk:
    """One chunk as both wrappers receive it."""

    id: str
    text: str
    page: str
    langchain_metadata: dict[str, Any]
    node: Any


def pages(corpus: str) -> dict[str, str]:
    """The corpus's pages as text: each page's chunks, in order, joined by blank lines."""
    parts: dict[str, list[tuple[int, str]]] = {}
    with (HERE / corpus / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            meta = obj["metadata"]
            parts.setdefault(str(meta["doc_id"]), []).append(
                (int(meta["chunk_index"]), obj["text"])
            )
    return {page: "\n\n".join(t for _i, t in sorted(chunks)) for page, chunks in parts.items()}


def split_langchain(texts: dict[str, str]) -> list[Chunk]:
    """``RecursiveCharacterTextSplitter(add_start_index=True)`` over loader-like documents."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from llama_index.core.schema import TextNode

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=1000, chunk_overlap=150, add_start_index=True
    )
    names = sorted(texts)
    documents = splitter.create_documents(
        [texts[n] for n in names], metadatas=[{"source": n} for n in names]
    )
    out = []
    for n, document in enumerate(documents):
        metadata = dict(document.metadata)
        chunk_id = f"lc:{metadata['source']}:{n:05d}"
        node = TextNode(
            id_=chunk_id,
            text=document.page_content,
            metadata=dict(metadata),
            excluded_embed_metadata_keys=list(metadata),
            excluded_llm_metadata_keys=list(metadata),
        )
        out.append(Chunk(chunk_id, document.page_content, metadata["source"], metadata, node))
    return out


def split_llamaindex(texts: dict[str, str], key: str = "file_name") -> list[Chunk]:
    """``SentenceSplitter`` over documents with the page as ``doc_id``, relationships kept;
    ``key``: the metadata key naming the page (a reader's ``file_name``, or ``source``)."""
    from llama_index.core import Document as LlamaDocument
    from llama_index.core.node_parser import SentenceSplitter

    parser = SentenceSplitter(
        chunk_size=256, chunk_overlap=32, id_func=lambda i, doc: f"li:{doc.doc_id}:{i:05d}"
    )
    documents = [
        LlamaDocument(
            text=texts[n],
            doc_id=n,
            metadata={key: n},
            excluded_embed_metadata_keys=[key],
            excluded_llm_metadata_keys=[key],
        )
        for n in sorted(texts)
    ]
    out = []
    for node in parser.get_nodes_from_documents(documents):
        metadata = {
            **node.metadata,
            "source": node.ref_doc_id,
            "start_index": getattr(node, "start_char_idx", None),
        }
        out.append(Chunk(node.node_id, node.get_content(), str(node.ref_doc_id), metadata, node))
    return out


def gold_for(question: Question, chunks: Sequence[Chunk]) -> list[str] | None:
    """The two consecutive chunks holding the question's passages, or ``None``."""
    own = [c for c in chunks if c.page == question.page]
    first = next((k for k, c in enumerate(own) if question.first in c.text), None)
    second = next((k for k in range(len(own) - 1, -1, -1) if question.second in own[k].text), None)
    if first is None or second is None:
        raise SystemExit(f"{question.id}: a passage is not in {question.page}")
    if second != first + 1:
        return None
    return [own[first].id, own[second].id]


def _langchain(chunks: Sequence[Chunk], embedder: Any) -> dict[str, Callable[[str], list[str]]]:
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_grapher import GraphEREmbeddings, GraphERReranker

    store = InMemoryVectorStore(GraphEREmbeddings(embedder))
    documents = [
        Document(id=c.id, page_content=c.text, metadata=c.langchain_metadata) for c in chunks
    ]
    store.add_documents(documents, ids=[c.id for c in chunks])
    retriever = store.as_retriever(search_kwargs={"k": FETCH_K})
    reranker = GraphERReranker(top_n=TOP_N)

    def plain(text: str) -> list[str]:
        return [str(d.id) for d in retriever.invoke(text)]

    def reranked(text: str) -> list[str]:
        return [str(d.id) for d in reranker.compress_documents(retriever.invoke(text), text)]

    return {"LangChain retriever": plain, "LangChain GraphERReranker()": reranked}


def _llamaindex(chunks: Sequence[Chunk], embedder: Any) -> dict[str, Callable[[str], list[str]]]:
    return _llamaindex_nodes([c.node for c in chunks], embedder, "")


@dataclass
class Cell:
    """One corpus x split: the scores per system, the agreement, what GraphER said."""

    chunks: int
    scored: int
    skipped: list[str]
    scores: dict[str, Score]
    same: int
    said: list[str]


def measure(corpus: str, split: str, embedder: Any) -> Cell:
    """Every system on one corpus split one way."""
    from types import SimpleNamespace

    texts = pages(corpus)
    chunks = split_langchain(texts) if split == SPLITS[0] else split_llamaindex(texts)
    embedder.embed_documents([c.text for c in chunks], desc=f"{corpus} / {split}")
    gold: dict[str, list[str]] = {}
    skipped = []
    for question in QUESTIONS[corpus]:
        found = gold_for(question, chunks)
        if found is None:
            skipped.append(question.id)
        else:
            gold[question.id] = found
    queries = [SimpleNamespace(id=q.id, text=q.text) for q in QUESTIONS[corpus] if q.id in gold]
    systems = {**_langchain(chunks, embedder), **_llamaindex(chunks, embedder)}
    scores: dict[str, Score] = {}
    rankings: dict[str, dict[str, list[str]]] = {}
    said: list[str] = []
    for name, search in systems.items():
        rankings[name], messages = _run_system(search, queries)
        scores[name] = score(rankings[name], gold)
        said += [m for m in messages if m not in said]
    lc, li = rankings["LangChain GraphERReranker()"], rankings["LlamaIndex GraphERPostprocessor()"]
    same = sum(lc[q] == li[q] for q in gold)
    return Cell(len(chunks), len(gold), skipped, scores, same, said)


_COMPARED = ("LangChain GraphERReranker()", "LlamaIndex GraphERPostprocessor()")


def _table(cells: dict[tuple[str, str], Cell]) -> str:
    lines = [
        "| corpus | split (chunks) | system | gold@5 | PR@5 | PR@10 | same ranking |",
        "|---|---|---|---|---|---|---|",
    ]
    for (corpus, split), cell in cells.items():
        for system, s in cell.scores.items():
            same = f"{cell.same}/{cell.scored}" if system in _COMPARED else ""
            lines.append(
                f"| {corpus} ({cell.scored} q) | {split} ({cell.chunks}) | {system} | "
                f"{s.gold_at_5}/{s.gold_total} | {100 * s.pr5:.1f} | {100 * s.pr10:.1f} | {same} |"
            )
    return "\n".join(lines)


# --- the hyperlinked variant (``--links``) -------------------------------------------------


@dataclass(frozen=True)
class _Section:
    """One chunk of the built corpus, as a span of its page's text, with its links."""

    start: int
    end: int
    anchors: tuple[str, ...]
    links: tuple[str, ...]


def page_sections(corpus: str) -> dict[str, list[_Section]]:
    """Per page, the built chunks as spans of :func:`pages`' text, with anchors and links."""
    from grapher_core.metadata import read_list

    parts: dict[str, list[tuple[int, str, tuple[str, ...], tuple[str, ...]]]] = {}
    with (HERE / corpus / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            obj = json.loads(line)
            meta = obj["metadata"]
            parts.setdefault(str(meta["doc_id"]), []).append(
                (
                    int(meta["chunk_index"]),
                    obj["text"],
                    tuple(read_list(meta.get("anchors"))),
                    tuple(read_list(meta.get("links"))),
                )
            )
    out: dict[str, list[_Section]] = {}
    for page, chunks in parts.items():
        at = 0
        spans = []
        for _i, text, anchors, links in sorted(chunks):
            spans.append(_Section(at, at + len(text), anchors, links))
            at += len(text) + 2
        out[page] = spans
    return out


def _span(chunk: Chunk) -> tuple[int, int]:
    """The chunk's characters in its page (LangChain ``start_index``, LlamaIndex char idx)."""
    start = chunk.langchain_metadata.get("start_index")
    if start is None:
        raise SystemExit(f"{chunk.id}: no start offset")
    end = getattr(chunk.node, "end_char_idx", None)
    return int(start), int(end) if end is not None else int(start) + len(chunk.text)


def carry_links(
    chunks: Sequence[Chunk], sections: dict[str, list[_Section]]
) -> dict[str, tuple[list[str], list[str]]]:
    """Chunk id -> (anchors, link targets) carried over from the built corpus's chunks."""
    by_page: dict[str, list[tuple[Chunk, int, int]]] = {}
    for chunk in chunks:
        by_page.setdefault(chunk.page, []).append((chunk, *_span(chunk)))
    out: dict[str, tuple[list[str], list[str]]] = {c.id: ([], []) for c in chunks}
    for page, own in by_page.items():
        for section in sections.get(page, []):
            holding = [c for c, s, e in own if s <= section.start < e]
            home = max(holding, key=lambda c: _span(c)[0]) if holding else None
            if home is None:  # the section starts in stripped whitespace: the next chunk
                later = [c for c, s, _e in own if s >= section.start]
                home = min(later, key=lambda c: _span(c)[0]) if later else own[-1][0]
            out[home.id][0].extend(a for a in section.anchors if a not in out[home.id][0])
            overlap = [(min(e, section.end) - max(s, section.start), -s, c) for c, s, e in own]
            best = max(overlap, key=lambda t: (t[0], t[1]))[2]
            out[best.id][1].extend(t for t in section.links if t not in out[best.id][1])
    return out


def _markup(page: str, targets: Sequence[str]) -> str:
    """The link targets as a user's page writes them: relative Markdown links."""
    import posixpath

    here = posixpath.dirname(page) or "."
    hrefs = []
    for target in targets:
        path, _hash, anchor = target.partition("#")
        href = posixpath.relpath(path, here)
        hrefs.append(f"[link]({href}#{anchor})" if anchor else f"[link]({href})")
    return " ".join(hrefs)


LINK_KEYS = ("links", "anchors")
"""What the link extractors write (and the carried anchors they read)."""


def _langchain_links(
    chunks: Sequence[Chunk], carried: dict[str, tuple[list[str], list[str]]]
) -> dict[str, dict[str, Any]]:
    """Chunk id -> metadata after ``ChunkLinkTransformer()`` + ``LinkTransformer()``."""
    from langchain_core.documents import Document

    from langchain_grapher.transformers import ChunkLinkTransformer, LinkTransformer

    documents = []
    for c in chunks:
        anchors, links = carried[c.id]
        metadata: dict[str, Any] = {"source": c.page, "start_index": _span(c)[0]}
        if anchors:
            metadata["anchors"] = list(anchors)
        text = c.text + ("\n\n" + _markup(c.page, links) if links else "")
        documents.append(Document(id=c.id, page_content=text, metadata=metadata))
    documents = list(ChunkLinkTransformer().transform_documents(documents))
    documents = list(LinkTransformer(fmt="markdown").transform_documents(documents))
    return {str(d.id): dict(d.metadata) for d in documents}


def _llamaindex_links(
    chunks: Sequence[Chunk],
    carried: dict[str, tuple[list[str], list[str]]],
    *,
    relationships: bool,
) -> list[Any]:
    """Plain-text nodes carrying what ``GraphERLinkExtractor()`` wrote on their linked copies;
    without ``relationships`` the PREVIOUS / NEXT ones are dropped (SOURCE kept)."""
    from llama_index.core.schema import NodeRelationship, TextNode

    from llama_index_grapher.extractors import GraphERLinkExtractor

    plain: list[Any] = []
    marked: list[Any] = []
    for c in chunks:
        anchors, links = carried[c.id]
        metadata: dict[str, Any] = {"source": c.page}
        if c.node.relationships:  # a node parser's node: what the reader wrote
            metadata.update(c.node.metadata)
        else:  # a LangChain chunk: what its splitter wrote
            metadata["start_index"] = _span(c)[0]
        if anchors:
            metadata["anchors"] = list(anchors)
        rel = {
            k: v
            for k, v in c.node.relationships.items()
            if relationships or k not in (NodeRelationship.PREVIOUS, NodeRelationship.NEXT)
        }
        keys = [k for k in metadata if k not in LINK_KEYS]
        for text, into in (
            (c.text, plain),
            (c.text + ("\n\n" + _markup(c.page, links) if links else ""), marked),
        ):
            node = TextNode(
                id_=c.id,
                text=text,
                metadata=dict(metadata),
                relationships=dict(rel),
                excluded_embed_metadata_keys=list(keys),
                excluded_llm_metadata_keys=list(keys),
            )
            into.append(node)
    extracted = GraphERLinkExtractor(fmt="markdown").process_nodes(marked)
    for node, done in zip(plain, extracted, strict=True):
        node.metadata = dict(done.metadata)
        node.excluded_embed_metadata_keys = list(done.excluded_embed_metadata_keys)
        node.excluded_llm_metadata_keys = list(done.excluded_llm_metadata_keys)
    return plain


def _without_links(nodes: Sequence[Any]) -> list[Any]:
    out = []
    for node in nodes:
        copy = node.model_copy(deep=True)
        copy.metadata = {k: v for k, v in copy.metadata.items() if k not in LINK_KEYS}
        out.append(copy)
    return out


def _embedded(nodes: Sequence[Any]) -> list[Any]:
    """The same nodes with their whole metadata in the embedded text (none excluded)."""
    out = []
    for node in nodes:
        copy = node.model_copy(deep=True)
        copy.excluded_embed_metadata_keys = []
        out.append(copy)
    return out


def _llamaindex_nodes(
    nodes: Sequence[Any], embedder: Any, label: str
) -> dict[str, Callable[[str], list[str]]]:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import MetadataMode, QueryBundle

    from llama_index_grapher import GraphERLlamaEmbedding, GraphERPostprocessor

    embedder.embed_documents(
        [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes], desc=label
    )
    index = VectorStoreIndex(
        list(nodes), embed_model=GraphERLlamaEmbedding(embedder), show_progress=False
    )
    retriever = index.as_retriever(similarity_top_k=FETCH_K)
    post = GraphERPostprocessor(top_n=TOP_N)

    def plain(text: str) -> list[str]:
        return [n.node.node_id for n in retriever.retrieve(text)]

    def reranked(text: str) -> list[str]:
        bundle = QueryBundle(text)
        found = post.postprocess_nodes(retriever.retrieve(bundle), query_bundle=bundle)
        return [n.node.node_id for n in found]

    return {
        f"LlamaIndex retriever{label}": plain,
        f"LlamaIndex GraphERPostprocessor(){label}": reranked,
    }


def measure_links(corpus: str, split: str, embedder: Any, *, ablate: bool) -> Cell:
    """Every system on one corpus split one way, hyperlinks kept; ``ablate``: the LlamaIndex
    ablations too (relationships only, links only; metadata embedded or not)."""
    from types import SimpleNamespace

    texts = pages(corpus)
    chunks = split_langchain(texts) if split == SPLITS[0] else split_llamaindex(texts, key="source")
    carried = carry_links(chunks, page_sections(corpus))
    gold: dict[str, list[str]] = {}
    skipped = []
    for question in QUESTIONS[corpus]:
        found = gold_for(question, chunks)
        if found is None:
            skipped.append(question.id)
        else:
            gold[question.id] = found
    queries = [SimpleNamespace(id=q.id, text=q.text) for q in QUESTIONS[corpus] if q.id in gold]
    lc_meta = _langchain_links(chunks, carried)
    linked = [Chunk(c.id, c.text, c.page, lc_meta[c.id], c.node) for c in chunks]
    embedder.embed_documents([c.text for c in chunks], desc=f"{corpus} / {split}")
    both = _llamaindex_links(chunks, carried, relationships=True)
    systems = {**_langchain(linked, embedder), **_llamaindex_nodes(both, embedder, "")}
    if ablate:
        links_only = _llamaindex_links(chunks, carried, relationships=False)
        rels_only = _without_links(both)
        variants = {
            ", relationships only": rels_only,
            ", links only": links_only,
            ", metadata embedded": _embedded(both),
            ", relationships only, metadata embedded": _embedded(rels_only),
            ", links only, metadata embedded": _embedded(links_only),
        }
        for label, nodes in variants.items():
            found_systems = _llamaindex_nodes(nodes, embedder, label)
            if "relationships only" in label or "links only" in label:
                found_systems = {k: v for k, v in found_systems.items() if "GraphER" in k}
            systems.update(found_systems)
    scores: dict[str, Score] = {}
    rankings: dict[str, dict[str, list[str]]] = {}
    said: list[str] = []
    for name, search in systems.items():
        rankings[name], messages = _run_system(search, queries)
        scores[name] = score(rankings[name], gold)
        said += [f"{name}: {m}" for m in messages if f"{name}: {m}" not in said]
    lc, li = rankings["LangChain GraphERReranker()"], rankings["LlamaIndex GraphERPostprocessor()"]
    same = sum(lc[q] == li[q] for q in gold)
    return Cell(len(chunks), len(gold), skipped, scores, same, said)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grapher_bench.user_corpora.splitters",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", default=None, help="markdown file to write the section into")
    parser.add_argument(
        "--links",
        action="store_true",
        help="the hyperlinked variant (links kept, LlamaIndex ablations) into its own section",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    from pathlib import Path

    from grapher_bench.cache import CachedEmbedder, EmbeddingCache
    from grapher_core.embeddings import default_embedder

    embedder = CachedEmbedder(default_embedder(), EmbeddingCache(), progress=False)
    if args.links:
        cells = {
            (corpus, split): measure_links(corpus, split, embedder, ablate=split == SPLITS[1])
            for corpus in QUESTIONS
            for split in SPLITS
        }
    else:
        cells = {
            (corpus, split): measure(corpus, split, embedder)
            for corpus in QUESTIONS
            for split in SPLITS
        }
    elapsed = time.perf_counter() - started
    command = "python -m grapher_bench.user_corpora.splitters " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    notes = [
        f"Command: `{command.strip()}` ({elapsed:.0f} s wall time; retrieve top {FETCH_K}, "
        f"rerankers return {TOP_N}, zero config).",
        "",
        _table(cells),
        "",
    ]
    for (corpus, split), cell in cells.items():
        if cell.skipped:
            notes.append(
                f"* {corpus} / {split}: not two consecutive chunks in this split, not scored: "
                + ", ".join(cell.skipped)
            )
        for message in cell.said:
            notes.append(f"* {corpus} / {split}, GraphER said: {message}")
    body = "\n".join(notes)
    print(body)
    if args.out is not None:
        write_section(Path(args.out), *(LINK_MARKERS if args.links else MARKERS), body)
        print(f"updated {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
