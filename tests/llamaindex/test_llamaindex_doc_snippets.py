"""Every LlamaIndex Python snippet of README.md and docs/*.md runs as written: one namespace per
page (a reader runs it top to bottom), after a prelude that plays the reader's own objects --
documents, nodes, an index, an LLM -- and what a snippet builds (an engine, a postprocessor) is
then used once."""

from __future__ import annotations

import os
import re
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration  # the packaged MiniLM, spaCy, Chroma

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

for module in ("llama_index.core", "llama_index.vector_stores.chroma", "chromadb", "spacy"):
    pytest.importorskip(module)
pytest.importorskip("langchain_core")  # the README's mention snippet shows both frameworks
pytest.importorskip("sentence_transformers")

ROOT = Path(__file__).resolve().parents[2]
LLAMA = re.compile(
    r"llama_index|GraphERPostprocessor|as_query_engine|NodeSource|format_nodes_as_graph"
    r"|GraphERMention|GraphERSchemaReader|GraphERLlamaEmbedding"
)
TEXTS = {
    "Inception": "Inception is a 2010 film directed by Christopher Nolan. "
    "See [Nolan](https://example.org/nolan).",
    "Christopher Nolan": "Christopher Nolan is a British-American director born in London. "
    "His mother is Christina Jensen.",
    "Christina Jensen": "Christina Jensen is an American flight attendant and English teacher.",
    "Bread": "Bread is a staple food prepared from a dough of flour and water.",
}


def snippets() -> dict[str, list[tuple[int, str]]]:
    """Page -> its LlamaIndex Python blocks (line, code), in order."""
    out: dict[str, list[tuple[int, str]]] = {}
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        for match in re.finditer(r"```python\n(.*?)```", text, re.S):
            if LLAMA.search(match.group(1)):
                line = text[: match.start()].count("\n") + 1
                out.setdefault(str(path.relative_to(ROOT)), []).append((line, match.group(1)))
    return out


PAGES = snippets()


def prelude() -> dict[str, Any]:
    from langchain_core.documents import Document as LangChainDocument
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter

    from llama_index_grapher import GraphERLlamaEmbedding

    documents = [
        Document(
            text=f"{title}\n{text}",
            metadata={"title": title, "url": f"https://example.org/{title.split()[-1].lower()}"},
        )
        for title, text in TEXTS.items()
    ]
    embed_model = GraphERLlamaEmbedding()
    nodes = SentenceSplitter(chunk_size=256).get_nodes_from_documents(documents)
    with sqlite3.connect("shop.db") as db:
        db.executescript(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
            "CREATE TABLE orders (id INTEGER PRIMARY KEY,"
            " customer_id INTEGER REFERENCES customers(id));"
        )
    db.close()
    from grapher_core.ranking.config import write_config

    write_config("grapher.json", {"grapher_config": 1, "ranker": "gcs", "alpha": 0.1})
    from llama_index.core.llms import MockLLM

    return {
        "llm": MockLLM(),  # "your LLM" of the snippets' query engines (offline)
        "documents": documents,
        "nodes": list(nodes),
        "index": VectorStoreIndex(nodes, embed_model=embed_model),
        "embed_model": embed_model,
        "docs": [
            LangChainDocument(page_content=f"{t}\n{x}", metadata={"title": t})
            for t, x in TEXTS.items()
        ],
    }


def use(namespace: dict[str, Any]) -> None:
    """Query what the snippet built, as the page goes on to do."""
    from llama_index.core.schema import QueryBundle

    engine = namespace.pop("engine", None)
    if engine is not None:
        response = engine.query("Who is the mother of the director of Inception?")
        assert response.source_nodes
    post = namespace.pop("post", None)
    if post is not None:
        retrieved = namespace["index"].as_retriever(similarity_top_k=4).retrieve("Nolan")
        assert post.postprocess_nodes(retrieved, QueryBundle("Nolan"))


def test_the_pages_have_llamaindex_snippets() -> None:
    assert {"README.md", "docs/llamaindex.md", "docs/expansion.md"} <= set(PAGES)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_snippets_run_as_written(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM

    monkeypatch.chdir(tmp_path)  # the snippets write db/, entities.sqlite, shop.db here
    monkeypatch.setattr(Settings, "_llm", MockLLM())  # the reader's LLM, restored after
    namespace = prelude()
    for line, code in PAGES[page]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a tiny corpus draws GraphER's small-pool warning
            exec(compile(code, f"{page}:{line}", "exec"), namespace)
            use(namespace)
