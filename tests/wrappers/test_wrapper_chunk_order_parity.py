"""One zero-config detection for every door: chunk order read from ``doc_id`` + ``chunk_index``
metadata, from LlamaIndex ``PREVIOUS``/``NEXT`` relationships, or from both, gives the same
graph -- so the same pool ranks the same through LangChain and LlamaIndex, whichever of the
three ways the chunks carry their order."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core", reason="needs the langchain extra (langchain-core)")
pytest.importorskip("llama_index.core", reason="needs the llamaindex extra (llama-index-core)")

from langchain_core.documents import Document
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    RelatedNodeInfo,
    TextNode,
)

from langchain_grapher import GraphERReranker
from llama_index_grapher import GraphERPostprocessor

DOCS = {"guide": 6, "faq": 5, "api": 5}
# The retriever's order: chunks from the three documents interleaved, neighbours far apart.
ORDER = [
    ("guide", 2), ("api", 0), ("faq", 3), ("guide", 5), ("api", 4), ("faq", 0), ("guide", 3),
    ("api", 1), ("faq", 4), ("guide", 0), ("api", 3), ("faq", 1), ("guide", 4), ("faq", 2),
    ("guide", 1), ("api", 2),
]  # fmt: skip


def chunk_id(doc: str, index: int) -> str:
    return f"{doc}-{index}"


def documents() -> list[Document]:
    return [
        Document(
            id=chunk_id(d, i),
            page_content=f"chunk {i} of the {d} page",
            metadata={"doc_id": d, "chunk_index": i},
        )
        for d, i in ORDER
    ]


def nodes(*, metadata: bool, relationships: bool) -> list[NodeWithScore]:
    out = []
    for position, (d, i) in enumerate(ORDER):
        node = TextNode(
            id_=chunk_id(d, i),
            text=f"chunk {i} of the {d} page",
            metadata={"doc_id": d, "chunk_index": i} if metadata else {},
        )
        if relationships:
            if i > 0:
                node.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(
                    node_id=chunk_id(d, i - 1)
                )
            if i < DOCS[d] - 1:
                node.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(
                    node_id=chunk_id(d, i + 1)
                )
        out.append(NodeWithScore(node=node, score=1.0 - position / 100))
    return out


def langchain_ranking() -> list[tuple[str, float]]:
    out = GraphERReranker(top_n=10).compress_documents(documents(), "how to start")
    return [(d.id or "", round(d.metadata["relevance_score"], 12)) for d in out]


def llamaindex_ranking(**kinds: bool) -> list[tuple[str, float]]:
    out = GraphERPostprocessor(top_n=10).postprocess_nodes(nodes(**kinds), query_str="how to start")
    return [(n.node.node_id, round(n.score or 0.0, 12)) for n in out]


@pytest.mark.parametrize(
    "kinds",
    [
        {"metadata": True, "relationships": False},
        {"metadata": False, "relationships": True},
        {"metadata": True, "relationships": True},
    ],
    ids=["metadata-only", "relationships-only", "both"],
)
def test_chunk_order_is_one_fact_whichever_way_it_is_carried(kinds: dict[str, bool]) -> None:
    expected = langchain_ranking()
    assert [i for i, _ in expected] != [chunk_id(d, i) for d, i in ORDER[:10]], (
        "chunk order must move this pool, or the comparison proves nothing"
    )
    assert llamaindex_ranking(**kinds) == expected


def test_the_pool_without_any_order_keeps_the_retrievers() -> None:
    plain = llamaindex_ranking(metadata=False, relationships=False)
    assert [i for i, _ in plain] == [chunk_id(d, i) for d, i in ORDER[:10]]
