"""One link resolution for both link writers: LangChain's ``LinkTransformer`` and LlamaIndex's
``GraphERLinkExtractor`` write the same links and anchors for the same chunks, with and without
an ``id_by_target`` map and with anchors not written back (``anchor_field=None``); the one
documented difference is the extractor keeping links to pages outside its call.

Each case here once came out differently in the two frameworks: the extractor looked a map up
with its keys as given (a key with a trailing slash missed its link), skipped the anchors in a
node's text when none were to be written (a ``page#anchor`` link then fell back to the whole
page), and dropped links to a node's own page only when the node had no id of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="needs the langchain extra (langchain-core)")
pytest.importorskip("llama_index.core", reason="needs the llamaindex extra (llama-index-core)")

from langchain_core.documents import Document
from llama_index.core.schema import TextNode

from grapher_core.metadata import read_list
from langchain_grapher import LinkTransformer
from llama_index_grapher import GraphERLinkExtractor

SITE = "https://docs.example"
# id, page, text: "install" is one page split in two chunks, "guide" and "faq" are whole pages.
CHUNKS = [
    ("install-0", f"{SITE}/install", '<h2 id="linux">Linux</h2><p>apt install foo.</p>'),
    ("install-1", f"{SITE}/install", '<h2 id="macos">macOS</h2><p>brew install foo.</p>'),
    (
        "guide",
        f"{SITE}/guide",
        f'<p>Install on <a href="install#macos">macOS</a>, read the <a href="faq/">FAQ</a>, '
        f'this <a href="{SITE}/guide">guide</a> and <a href="/missing">a lost page</a>.</p>',
    ),
    ("faq", f"{SITE}/faq", '<p>See <a href="guide">the guide</a> and <a href="#top">top</a>.</p>'),
]
MAP = {  # keys as a user writes them: a trailing slash, one relative-looking form
    f"{SITE}/guide/": "guide",
    f"{SITE}/faq": "faq",
    f"{SITE}/install/": "install-0",
}


def _langchain(**options: Any) -> dict[str, dict[str, list[str]]]:
    documents = [
        Document(id=i, page_content=text, metadata={"source": page}) for i, page, text in CHUNKS
    ]
    out = LinkTransformer(list_format="list", **options).transform_documents(documents)
    return {d.id or "": _fields(d.metadata) for d in out}


def _llama_index(**options: Any) -> dict[str, dict[str, list[str]]]:
    nodes = [TextNode(id_=i, text=text, metadata={"source": page}) for i, page, text in CHUNKS]
    records = GraphERLinkExtractor(list_format="list", **options).extract(nodes)
    return {
        node.node_id: _fields({**node.metadata, **record})
        for node, record in zip(nodes, records, strict=True)
    }


def _fields(metadata: Mapping[str, Any]) -> dict[str, list[str]]:
    return {k: read_list(metadata.get(k)) for k in ("links", "anchors") if k in metadata}


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"anchor_field": None},
        {"id_by_target": MAP},
        {"id_by_target": MAP, "anchor_field": None},
    ],
    ids=["by-page", "by-page-no-anchor-field", "map", "map-no-anchor-field"],
)
def test_both_link_writers_write_the_same_links(options: dict[str, Any]) -> None:
    langchain, llama_index = _langchain(**options), _llama_index(**options)
    if "id_by_target" not in options:  # the extractor keeps a link to a page outside the
        # call (a later batch may hold it); the transformer, given the corpus, drops it
        llama_index["guide"]["links"].remove(f"{SITE}/missing")
    assert langchain == llama_index
    links = {k: v.get("links", []) for k, v in langchain.items()}
    assert "faq" in links["guide"]  # relative "faq/" against the guide's own page
    assert "guide" not in links["guide"]  # its own page
    assert links["faq"] == ["guide"]
    if "id_by_target" in options:  # unknown targets dropped; the map names a page, not chunks
        assert links["guide"] == ["install-0", "faq"]
    else:  # the anchor lands on the chunk holding it, whether or not anchors are written
        assert links["guide"][0] == "install-1"
    if options.get("anchor_field", "anchors") is not None:
        assert langchain["install-1"]["anchors"] == ["macos"]
    else:
        assert all("anchors" not in fields for fields in langchain.values())
