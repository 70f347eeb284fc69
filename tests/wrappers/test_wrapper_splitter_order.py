"""Chunk order as real splitters write it ranks the same through both wrappers, zero config.

LangChain's ``RecursiveCharacterTextSplitter(add_start_index=True)`` writes ``source`` +
``start_index``; LlamaIndex's ``SentenceSplitter`` writes ``PREVIOUS``/``NEXT``/``SOURCE``
relationships. The same chunks handed to either wrapper give the same graph and the same
ranking (rank seeds, no model), and the offset rule finds exactly the pairs the relationships
state."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core", reason="needs the langchain extra (langchain-core)")
pytest.importorskip("llama_index.core", reason="needs the llamaindex extra (llama-index-core)")
pytest.importorskip("langchain_text_splitters", reason="needs langchain-text-splitters")

import scipy.sparse as sp
from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter
from llama_index.core import Document as LlamaDocument
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import BaseNode, NodeWithScore, TextNode

from grapher_core.edges.detect import detect_proximities
from langchain_grapher import GraphERReranker
from langchain_grapher.convert import candidates_from_documents
from llama_index_grapher import GraphERPostprocessor
from llama_index_grapher.convert import candidates_from_nodes

TOPICS = {
    "install.md": ["download", "verify", "unpack", "configure", "build", "test", "deploy", "sign"],
    "tuning.md": ["profile", "cache", "batch", "shard", "compress", "index", "monitor", "tune"],
    "backup.md": ["snapshot", "copy", "encrypt", "upload", "rotate", "restore", "audit", "prune"],
}


def page(name: str) -> str:
    """A page of distinct paragraphs, each long enough for a chunk or two."""
    out = []
    for step, topic in enumerate(TOPICS[name]):
        sentences = [
            f"Step {step} of {name} is to {topic} the system carefully.",
            f"When you {topic}, check the log for the word {topic}-{step} before going on.",
            f"Most failures to {topic} come from a missing permission on the data folder.",
            f"After the {topic} step, the next section explains what comes after it.",
        ]
        out.append(" ".join(sentences))
    return "\n\n".join(out)


def interleaved(ids: list[str]) -> list[int]:
    """A retriever's order that splits neighbours: every other chunk first, the rest last."""
    return [*range(0, len(ids), 2), *range(1, len(ids), 2)]


def langchain_chunks() -> list[Document]:
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=240, chunk_overlap=40, add_start_index=True
    )
    names = sorted(TOPICS)
    chunks = splitter.create_documents([page(n) for n in names], [{"source": n} for n in names])
    for n, chunk in enumerate(chunks):
        chunk.id = f"{chunk.metadata['source']}:{n}"
    return [chunks[i] for i in interleaved([str(c.id) for c in chunks])]


def llama_nodes() -> list[BaseNode]:
    parser = SentenceSplitter(
        chunk_size=64, chunk_overlap=12, id_func=lambda i, doc: f"{doc.doc_id}:{i}"
    )
    documents = [LlamaDocument(text=page(n), doc_id=n) for n in sorted(TOPICS)]
    nodes = parser.get_nodes_from_documents(documents)
    return [nodes[i] for i in interleaved([n.node_id for n in nodes])]


def rank_langchain(documents: list[Document]) -> list[str]:
    out = GraphERReranker(top_n=10).compress_documents(documents, "what comes next")
    return [str(d.id) for d in out]


def rank_llamaindex(nodes: list[BaseNode]) -> list[str]:
    items = [NodeWithScore(node=node, score=None) for node in nodes]
    out = GraphERPostprocessor(top_n=10).postprocess_nodes(items, query_str="what comes next")
    return [n.node.node_id for n in out]


def pairs(matrix: sp.spmatrix) -> set[tuple[int, int]]:
    coo = sp.coo_matrix(matrix)
    return {(int(i), int(j)) for i, j in zip(coo.row, coo.col, strict=True) if i < j}


def test_langchain_splitter_chunks_rank_the_same_through_both_wrappers() -> None:
    documents = langchain_chunks()
    assert len(documents) >= 20
    nodes: list[BaseNode] = [
        TextNode(id_=str(d.id), text=d.page_content, metadata=dict(d.metadata)) for d in documents
    ]
    expected = rank_langchain(documents)
    assert expected != [str(d.id) for d in documents[:10]], "chunk order must move this pool"
    assert rank_llamaindex(nodes) == expected


def test_sentence_splitter_relationships_and_offsets_are_one_graph() -> None:
    nodes = llama_nodes()
    assert len(nodes) >= 20
    documents = [
        Document(
            id=node.node_id,
            page_content=node.get_content(),
            metadata={
                **node.metadata,
                "source": node.ref_doc_id,
                "start_index": getattr(node, "start_char_idx", None),
            },
        )
        for node in nodes
    ]
    from_nodes = candidates_from_nodes([NodeWithScore(node=n, score=None) for n in nodes])
    from_documents = candidates_from_documents(documents)
    (by_relationship,) = detect_proximities(from_nodes)
    (by_offset,) = detect_proximities(from_documents)
    stated = pairs(by_relationship.adjacency(from_nodes))
    assert len(stated) == len(nodes) - len(TOPICS)
    assert pairs(by_offset.adjacency(from_documents)) == stated
    expected = rank_llamaindex(nodes)
    assert expected != [n.node_id for n in nodes[:10]], "chunk order must move this pool"
    assert rank_langchain(documents) == expected


def test_chunks_without_order_are_told_the_fix() -> None:
    documents = [
        Document(
            id=str(d.id), page_content=d.page_content, metadata={"source": d.metadata["source"]}
        )
        for d in langchain_chunks()
    ]
    assert rank_langchain(documents) == [str(d.id) for d in documents[:10]]
    from grapher_core.edges.detect import missing_order_hint

    hint = missing_order_hint(candidates_from_documents(documents))
    assert hint is not None and "add_start_index=True" in hint
