"""``evaluate_retriever`` measures what the deployed wrapper returns: on a real store (an
``InMemoryVectorStore`` / a ``VectorStoreIndex`` over the packaged MiniLM) and a slice of a
user corpus (Python-Markdown's documentation, chunks with links and LlamaIndex
PREVIOUS/NEXT relationships), every row of the evaluation -- each configuration of the grid --
orders each question's candidates exactly as ``GraphERReranker`` / ``GraphERPostprocessor``
loaded from that row's config does; and page-level gold (``gold_key``) gives the numbers a
count by hand gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers_extras import needs

needs("langchain")
needs("llamaindex")
needs("embed")

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parents[2] / "grapher_bench" / "user_corpora" / "markdown_docs"
QUESTIONS = 5
FETCH = 10


@pytest.fixture(scope="module")
def corpus() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The chunks of the pages the first questions' gold lives on plus two more pages each
    (distractors), and those questions with page-level gold."""
    objects = [json.loads(line) for line in (CORPUS / "corpus.jsonl").open()]
    questions = [json.loads(line) for line in (CORPUS / "queries.jsonl").open()][:QUESTIONS]
    page = {o["id"]: o["metadata"]["source"] for o in objects}
    pages = {page[g] for q in questions for g in q["gold"]}
    extra = [p for p in dict.fromkeys(page.values()) if p not in pages][: 2 * QUESTIONS]
    kept = [o for o in objects if page[o["id"]] in pages | set(extra)]
    asked = [
        {"id": q["id"], "text": q["text"], "gold": list(dict.fromkeys(page[g] for g in q["gold"]))}
        for q in questions
    ]
    return kept, asked


@pytest.fixture(scope="module")
def langchain_retriever(corpus: Any) -> Any:
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_grapher import GraphEREmbeddings

    objects, _ = corpus
    store = InMemoryVectorStore(GraphEREmbeddings())
    documents = [
        Document(id=o["id"], page_content=o["text"], metadata=o["metadata"]) for o in objects
    ]
    store.add_documents(documents, ids=[o["id"] for o in objects])
    return store.as_retriever(search_kwargs={"k": FETCH})


def nodes_of(objects: list[dict[str, Any]]) -> list[Any]:
    """One node per chunk with the SOURCE / PREVIOUS / NEXT relationships a node parser sets,
    metadata kept out of the embedded text."""
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    nodes = [
        TextNode(
            id_=o["id"],
            text=o["text"],
            metadata=dict(o["metadata"]),
            excluded_embed_metadata_keys=list(o["metadata"]),
            excluded_llm_metadata_keys=list(o["metadata"]),
        )
        for o in objects
    ]
    by_page: dict[str, list[Any]] = {}
    for node in nodes:
        by_page.setdefault(node.metadata["doc_id"], []).append(node)
    for doc_id, members in by_page.items():
        members.sort(key=lambda n: int(n.metadata["chunk_index"]))
        for i, node in enumerate(members):
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc_id)
            if i:
                node.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(
                    node_id=members[i - 1].node_id
                )
            if i + 1 < len(members):
                node.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(
                    node_id=members[i + 1].node_id
                )
    return nodes


@pytest.fixture(scope="module")
def llama_index(corpus: Any) -> Any:
    from llama_index.core import VectorStoreIndex

    from llama_index_grapher import GraphERLlamaEmbedding

    objects, _ = corpus
    return VectorStoreIndex(nodes_of(objects), embed_model=GraphERLlamaEmbedding())


def hand_count(
    orders: list[tuple[str, ...]], page: dict[str, str], gold: list[list[str]], k: int
) -> tuple[float, float]:
    """PR@k and gold@k at page level, counted plainly: the pages of the top k chunks."""
    perfect = found = 0
    for order, wanted in zip(orders, gold, strict=True):
        top = {page[i] for i in order[:k]}
        found += sum(1 for g in wanted if g in top)
        perfect += all(g in top for g in wanted)
    return perfect / len(gold), found / sum(map(len, gold))


def check_page_level(result: Any, corpus: Any) -> None:
    objects, asked = corpus
    page = {o["id"]: o["metadata"]["source"] for o in objects}
    gold = [q["gold"] for q in asked]
    assert result.gold_key == "source"
    for row in result.rows:
        metrics = row.metrics([3, 5])
        for k in (3, 5):
            assert (metrics[f"PR@{k}"], metrics[f"gold@{k}"]) == pytest.approx(
                hand_count(list(row.orders), page, gold, k)
            ), (row.name, k)


def test_langchain_rows_are_what_the_compressor_returns(
    corpus: Any, langchain_retriever: Any, tmp_path: Path
) -> None:
    from langchain_grapher import GraphERReranker, evaluate_retriever

    _, asked = corpus
    result = evaluate_retriever(
        langchain_retriever,
        asked,
        gold_key="source",
        k=(3, 5),
        rankers=("gcs", "ppr", "gat"),
        repeats=1,
    )
    assert result.door == "GraphERReranker" and len(result.rows) > 5
    check_page_level(result, corpus)
    for row in result.rows[1:]:
        path = result.write_config(tmp_path / "config.json", row.name)
        compressor = GraphERReranker.from_config(path, top_n=FETCH)
        for question, order in zip(asked, row.orders, strict=True):
            documents = langchain_retriever.invoke(question["text"])
            got = [d.id for d in compressor.compress_documents(documents, question["text"])]
            assert tuple(got) == order, row.name
    assert result.rows[0].orders[0] == tuple(
        d.id for d in langchain_retriever.invoke(asked[0]["text"])
    )


def test_llamaindex_rows_are_what_the_postprocessor_returns(
    corpus: Any, llama_index: Any, tmp_path: Path
) -> None:
    from llama_index.core.schema import QueryBundle

    from llama_index_grapher import GraphERPostprocessor, evaluate_retriever

    _, asked = corpus
    result = evaluate_retriever(
        llama_index,
        asked,
        gold_key="source",
        similarity_top_k=FETCH,
        k=(3, 5),
        rankers=("gcs", "ppr", "gat"),
        repeats=1,
    )
    assert result.door == "GraphERPostprocessor"
    assert result.graph.startswith("PREVIOUS/NEXT relationships + ")
    assert {r.setting.seeds for r in result.rows[1:]} == {"rank", "score"}  # nodes have scores
    check_page_level(result, corpus)
    retriever = llama_index.as_retriever(similarity_top_k=FETCH)
    for row in result.rows[1:]:
        path = result.write_config(tmp_path / "config.json", row.name)
        post = GraphERPostprocessor.from_config(path, top_n=FETCH)
        for question, order in zip(asked, row.orders, strict=True):
            bundle = QueryBundle(question["text"])
            nodes = post.postprocess_nodes(retriever.retrieve(bundle), query_bundle=bundle)
            assert tuple(n.node.node_id for n in nodes) == order, row.name


def test_ref_doc_id_names_the_source_document(corpus: Any, llama_index: Any) -> None:
    from llama_index_grapher import evaluate_retriever

    _, asked = corpus
    # the nodes' SOURCE relationship names the page (doc_id): the same gold, the same counts
    by_source = evaluate_retriever(
        llama_index, asked, gold_key="source", rankers=("gcs",), repeats=1
    )
    by_doc = evaluate_retriever(
        llama_index, asked, gold_key="ref_doc_id", rankers=("gcs",), repeats=1
    )
    assert [r.gold_ranks for r in by_doc.rows] == [r.gold_ranks for r in by_source.rows]
