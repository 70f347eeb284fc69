"""GraphERLinkExtractor on split pages, and the whole LlamaIndex path with real parts: HTML and
Markdown pages -> IngestionPipeline(SentenceSplitter / MarkdownNodeParser, the extractor) ->
GraphERPostprocessor, zero config, lifting the anchored chunk above its page siblings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from llama_index.core import Document
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, TextNode

from grapher_core.metadata import read_list
from llama_index_grapher import GraphERLinkExtractor, GraphERPostprocessor

# Real parts: LlamaIndex's splitters (SentenceSplitter reads NLTK's stopwords, which the
# package's own cache holds only from some releases on).
pytestmark = pytest.mark.integration

SITE = "https://docs.example"


def section(anchor: str, title: str, body: str) -> str:
    return f'<h2 id="{anchor}">{title}</h2>\n\n<p>{body}</p>\n\n'


INSTALL = "".join(
    [
        "<h1>Installing widget</h1>\n\n",
        section(
            "requirements",
            "Requirements",
            "You need Python 3.10 or newer and a C compiler for the optional speedups, "
            "which make the parser about three times faster.",
        ),
        section(
            "linux",
            "Linux",
            "On Linux install libfoo-dev and libbar-dev with apt, then run pip install widget "
            "inside a virtual environment of your own.",
        ),
        section(
            "macos",
            "macOS",
            "On macOS use Homebrew to install foo and bar, then run pip install widget "
            "inside a virtual environment of your own.",
        ),
        section(
            "windows",
            "Windows",
            "On Windows run the installer and tick the box that adds widget to the PATH, "
            "then open a new terminal window.",
        ),
    ]
)
GUIDE = "".join(
    [
        "<h1>Troubleshooting</h1>\n\n",
        section(
            "build-errors",
            "Build errors",
            'A missing header: see <a href="/install/#linux">Linux</a>',  # MkDocs-style URLs
        ),
        section("other", "Other problems", "Open an issue with the full log attached."),
    ]
)


def html_nodes() -> Sequence[BaseNode]:
    documents = [
        Document(text=INSTALL, id_="install", metadata={"url": f"{SITE}/install/"}),
        Document(text=GUIDE, id_="guide", metadata={"url": f"{SITE}/guide/"}),
    ]
    pipeline = IngestionPipeline(
        transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0), GraphERLinkExtractor()]
    )
    return pipeline.run(documents=documents)


def fillers() -> list[NodeWithScore]:
    """Chunks of an unrelated page, ranked between the linking chunk and the linked page's
    chunks: a page's chunks spread over the middle ranks of a pool of 50."""
    return [
        NodeWithScore(
            node=TextNode(id_=f"faq-{k}", text=f"Question {k}?", metadata={"url": f"{SITE}/faq/"}),
            score=0.60 - k / 100,
        )
        for k in range(8)
    ]


def holding(nodes: Sequence[BaseNode], words: str) -> BaseNode:
    (found,) = [n for n in nodes if words in n.get_content()]
    return found


def test_links_into_a_split_page_land_on_the_anchored_node_and_anchors_are_written() -> None:
    nodes = html_nodes()
    install = [n for n in nodes if n.ref_doc_id == "install"]
    assert len(install) >= 4  # one section per chunk
    linux = holding(nodes, "libfoo-dev")
    assert read_list(linux.metadata["anchors"]) == ["linux"]
    source = holding(nodes, "missing header")
    assert read_list(source.metadata["links"]) == [linux.node_id]
    for mode in (MetadataMode.EMBED, MetadataMode.LLM):
        assert "anchors" not in linux.get_content(metadata_mode=mode)


async def test_unsplit_pages_own_pages_and_declared_anchors() -> None:
    extractor = GraphERLinkExtractor(list_format="list")
    pages = [
        TextNode(
            id_=f"a{k}",
            text=text,
            metadata={"url": f"{SITE}/a.html"},
        )
        for k, text in enumerate(
            [
                '<h2 id="one">One</h2> see [two](#two), [b](b.html#part) and [a](a.html)',
                '<h2 id="two">Two</h2> back to [one](a.html#one) and [self](a.html#two)',
            ]
        )
    ] + [TextNode(id_="b", text="page b", metadata={"url": f"{SITE}/b.html", "anchors": "x"})]
    records = await extractor.aextract(pages)
    # b.html is one node: its id; a.html is split: an anchor lands on the node holding it,
    # a whole-page link to its own page, a bare "#two" (in-page navigation, as LangChain's
    # LinkTransformer reads it) and a link to an anchor of the same chunk are dropped.
    assert records[0]["links"] == ["b"]
    assert records[1]["links"] == ["a0"]
    assert records[0]["anchors"] == ["one"] and "anchors" not in records[2]  # declared: kept


@pytest.mark.parametrize("seeds", [None, "rank"])
def test_real_parts_zero_config_lifts_the_anchored_chunk_above_its_siblings(
    seeds: str | None,
) -> None:
    nodes = html_nodes()
    linux = holding(nodes, "libfoo-dev")
    question = holding(nodes, "missing header")
    install = [n for n in nodes if n.ref_doc_id == "install"]
    # The question matches the troubleshooting chunk, then the rest of its page and chunks of
    # other pages; the install chunks score alike below (a page's chunks spread over the
    # middle of a pool of 50), the Linux one below most of its siblings.
    retrieved = [NodeWithScore(node=question, score=0.80)]
    retrieved += [
        NodeWithScore(node=n, score=0.50)
        for n in nodes
        if n.ref_doc_id == "guide" and n is not question
    ]
    retrieved += fillers()
    for k, node in enumerate(install):
        retrieved.append(NodeWithScore(node=node, score=0.41 if node is linux else 0.45 - k / 100))
    retrieved.sort(key=lambda n: -(n.score or 0.0))
    before = [n.node.node_id for n in retrieved if n.node.ref_doc_id == "install"]
    assert before.index(linux.node_id) >= 2

    out = GraphERPostprocessor(top_n=None, seed_transform=seeds).postprocess_nodes(
        retrieved, query_str="the build stops on a missing header"
    )
    after = [n.node.node_id for n in out if n.node.ref_doc_id == "install"]
    assert after[0] == linux.node_id, (before, after)


def test_markdown_pages_with_the_markdown_node_parser() -> None:
    install = (
        "# Installing\n\nIntro.\n\n## Linux setup\n\nUse apt to install libfoo.\n\n"
        "## macOS setup\n\nUse brew to install foo.\n\n## Windows setup\n\nRun the installer.\n"
    )
    guide = "# Guide\n\nHeaders missing? See [Linux](install.md#linux-setup).\n"
    documents = [
        Document(text=install, id_="install", metadata={"source": "docs/install.md"}),
        Document(text=guide, id_="guide", metadata={"source": "docs/guide.md"}),
    ]
    pipeline = IngestionPipeline(
        transformations=[MarkdownNodeParser(), GraphERLinkExtractor(list_format="list")]
    )
    nodes = pipeline.run(documents=documents)
    linux = holding(nodes, "apt")
    assert linux.metadata["anchors"] == ["linux-setup"]
    source = holding(nodes, "Headers missing")
    assert source.metadata["links"] == [linux.node_id]  # as LangChain's LinkTransformer does
    retrieved = [NodeWithScore(node=source, score=0.9), *fillers()]
    retrieved += [
        NodeWithScore(node=n, score=0.39 if n is linux else 0.4)
        for n in nodes
        if n.ref_doc_id == "install"
    ]
    retrieved.sort(key=lambda n: -(n.score or 0.0))
    out = GraphERPostprocessor(top_n=None).postprocess_nodes(retrieved, query_str="headers")
    after = [n.node.node_id for n in out if n.node.ref_doc_id == "install"]
    assert after[0] == linux.node_id


def test_a_directory_reader_s_pages_link_by_file_path(tmp_path: Path) -> None:
    """SimpleDirectoryReader writes ``file_path`` (absolute) and ``file_name``, no ``source``:
    relative Markdown links resolve against ``file_path`` and land on the anchored node, and
    the postprocessor's zero-config detection reads the same field for whole-page links."""
    from llama_index.core import SimpleDirectoryReader

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(
        "# Installing\n\nIntro.\n\n## Linux setup\n\nUse apt to install libfoo.\n\n"
        "## macOS setup\n\nUse brew to install foo.\n",
        encoding="utf-8",
    )
    (docs / "guide.md").write_text(
        "# Guide\n\nHeaders missing? See [Linux](install.md#linux-setup) and [the page]"
        "(install.md).\n",
        encoding="utf-8",
    )
    documents = SimpleDirectoryReader(str(docs)).load_data()
    assert all("source" not in d.metadata and "file_path" in d.metadata for d in documents)
    pipeline = IngestionPipeline(
        transformations=[MarkdownNodeParser(), GraphERLinkExtractor(list_format="list")]
    )
    nodes = pipeline.run(documents=documents)
    linux = holding(nodes, "apt")
    source = holding(nodes, "Headers missing")
    install_page = linux.metadata["file_path"]
    assert source.metadata["links"] == [linux.node_id, install_page]
    retrieved = [NodeWithScore(node=source, score=0.9), *fillers()]
    retrieved += [
        NodeWithScore(node=n, score=0.39 if n is linux else 0.4)
        for n in nodes
        if n.metadata.get("file_path") == install_page
    ]
    out = GraphERPostprocessor(top_n=None).postprocess_nodes(retrieved, query_str="headers")
    after = [n.node.node_id for n in out if n.node.metadata.get("file_path") == install_page]
    assert after[0] == linux.node_id
