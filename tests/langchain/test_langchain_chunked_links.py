"""LinkTransformer on split chunks, and the whole LangChain path with real splitters: chunked
HTML / Markdown pages -> ChunkLinkTransformer -> LinkTransformer -> GraphERReranker, zero
config, lifting the anchored chunk above its page siblings."""

from __future__ import annotations

import copy
import re
from typing import Literal

import pytest
from langchain_core.documents import Document

from grapher_core.edges import ChunkLinks
from grapher_core.edges.detect import detect_proximities
from grapher_core.errors import InputError
from langchain_grapher import (
    ChunkLinkTransformer,
    GraphERReranker,
    LinkTransformer,
    candidates_from_documents,
)

splitters = pytest.importorskip("langchain_text_splitters")


def section(anchor: str, title: str, body: str) -> str:
    return f'<h2 id="{anchor}">{title}</h2>\n<p>{body}</p>\n'


INSTALL = (
    "<html><body><h1>Installing widget</h1>\n"
    + section(
        "requirements",
        "Requirements",
        "You need Python 3.10 or newer and a C compiler for the optional speedups. " * 3,
    )
    + section(
        "linux",
        "Linux",
        "On Linux install the system packages libfoo-dev and libbar-dev with apt, "
        "then run pip install widget. " * 3,
    )
    + section(
        "macos",
        "macOS",
        "On macOS use Homebrew to install foo and bar, then pip install widget inside a "
        "virtual environment. " * 3,
    )
    + section(
        "windows",
        "Windows",
        "On Windows download the installer and tick the box that adds widget to PATH. " * 3,
    )
    + "</body></html>"
)
GUIDE = (
    "<html><body><h1>Troubleshooting</h1>\n"
    + section(
        "build-errors",
        "Build errors",
        "If the build stops with a missing header error, the development packages are "
        'absent: see <a href="install.html#linux">installing on Linux</a>. ' * 2,
    )
    + section(
        "other", "Other problems", "Other problems are rare; open an issue with the log. " * 3
    )
    + '<p>Back to <a href="install.html">the installation page</a>.</p>'
    + "</body></html>"
)


def html_chunks() -> list[Document]:
    """The two pages split by LangChain's HTML splitter and numbered (ids "<page>#<k>")."""
    pages = [
        Document(page_content=INSTALL, metadata={"source": "install.html"}),
        Document(page_content=GUIDE, metadata={"source": "guide.html"}),
    ]
    splitter = splitters.RecursiveCharacterTextSplitter.from_language(
        splitters.Language.HTML, chunk_size=400, chunk_overlap=0
    )
    return list(ChunkLinkTransformer(text_splitter=splitter).transform_documents(pages))


def holding(documents: list[Document], words: str) -> Document:
    (found,) = [d for d in documents if words in d.page_content]
    return found


def test_split_chunks_need_no_arguments() -> None:
    chunks = html_chunks()
    before = copy.deepcopy(chunks)
    linked = list(LinkTransformer().transform_documents(chunks))  # raised "ambiguous" before
    assert chunks == before
    linux = holding(linked, "On Linux install")
    # The splitter cut before <p>: the Linux <h2> ended the previous chunk; its anchor is the
    # next chunk's, where the section's text is.
    assert linux.metadata["anchors"] == ["linux"]
    assert holding(linked, "Requirements</h2>").metadata["anchors"] == ["requirements"]
    source = holding(linked, "missing header")
    assert source.metadata["links"] == [linux.id]  # page#anchor -> the chunk's id
    back = holding(linked, "Back to")
    assert back.metadata["links"] == ["install.html"]  # whole page -> the page, for rank time


def test_pages_claiming_one_url_say_what_to_pass() -> None:
    chunks = [
        Document(id=f"{page}#{k}", page_content="x", metadata={"source": page, "url": "u.html"})
        for page in ("a.html", "b.html")
        for k in range(2)
    ]
    with pytest.raises(InputError, match=r"'u.html' is claimed by page 'a.html'") as error:
        LinkTransformer().transform_documents(chunks)
    assert "url_keys=('source',)" in str(error.value)
    assert LinkTransformer(url_keys=("source",)).transform_documents(chunks)  # the fix said


def test_markdown_headings_give_the_anchors() -> None:
    """MarkdownHeaderTextSplitter strips the headings into "Header 2" metadata: their slugs."""
    install = (
        "# Installing\n\nIntro text.\n\n## Linux setup\n\nUse apt to install libfoo.\n\n"
        "## macOS setup\n\nUse brew to install foo.\n"
    )
    guide = "# Guide\n\nHeaders missing? See [Linux](install.md#linux-setup).\n"
    splitter = splitters.MarkdownHeaderTextSplitter([("#", "Header 1"), ("##", "Header 2")])
    chunks = []
    for page, text in (("install.md", install), ("guide.md", guide)):
        for piece in splitter.split_text(text):
            chunks.append(
                Document(
                    page_content=piece.page_content, metadata={**piece.metadata, "source": page}
                )
            )
    numbered = ChunkLinkTransformer().transform_documents(chunks)
    linked = LinkTransformer().transform_documents(numbered)
    target = holding(list(linked), "apt")
    assert target.metadata["Header 2"] == "Linux setup"
    assert holding(list(linked), "Headers missing").metadata["links"] == [target.id]


def scored(documents: list[Document], scores: dict[str, float]) -> list[Document]:
    """The retriever's view: a score per chunk, best first."""
    out = [
        Document(id=d.id, page_content=d.page_content, metadata={**d.metadata, "score": s})
        for d in documents
        if (s := scores.get(str(d.id))) is not None
    ]
    return sorted(out, key=lambda d: -d.metadata["score"])


@pytest.mark.parametrize("seeds", [None, "rank"])
def test_real_parts_zero_config_lifts_the_anchored_chunk_above_its_siblings(
    seeds: Literal["rank"] | None,
) -> None:
    linked = list(LinkTransformer().transform_documents(html_chunks()))
    linux = holding(linked, "On Linux install")
    question_chunk = holding(linked, "missing header")
    install = [d for d in linked if d.metadata["source"] == "install.html"]
    assert len(install) >= 4 and linux in install
    # The question matches the troubleshooting chunk, then the rest of its page and chunks of
    # other pages; the install chunks with text score alike below them (a page's chunks spread
    # over the middle of a pool of 50), the Linux one below most of its siblings (it shares few
    # words with the question); a chunk of bare markup ("<html>") scores low.
    others = [
        Document(id=f"faq.html#{k}", page_content=f"Question {k}?", metadata={"source": "faq.html"})
        for k in range(8)
    ]
    scores = {str(question_chunk.id): 0.80}
    scores.update({str(d.id): 0.60 - k / 100 for k, d in enumerate(others)})
    for d in linked:
        if d.metadata["source"] == "guide.html":
            scores.setdefault(str(d.id), 0.50)
    for k, d in enumerate(install):
        bare = not re.sub(r"<[^>]*>", "", d.page_content).strip()
        scores[str(d.id)] = 0.20 if bare else 0.41 if d is linux else 0.45 - k / 100
    retrieved = scored([*linked, *others], scores)
    before = [d.id for d in retrieved if d.metadata["source"] == "install.html"]
    assert before.index(linux.id) >= 2

    reranker = GraphERReranker(top_n=None, score_key="score", explain=True, seed_transform=seeds)
    out = reranker.compress_documents(retrieved, "the build stops with a missing header")
    after = [d.id for d in out if d.metadata["source"] == "install.html"]
    assert after[0] == linux.id, (before, after)
    lifted = next(d for d in out if d.id == linux.id)
    assert question_chunk.id in {c["neighbour_id"] for c in lifted.metadata["grapher_explanation"]}
    detected = detect_proximities(candidates_from_documents(retrieved, score_key="score"))
    assert ChunkLinks("links", target_field="source") in detected
