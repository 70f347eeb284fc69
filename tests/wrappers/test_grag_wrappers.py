"""G-RAG out of the box: shipped checkpoint through the core, both wrappers, and the three
enrichment entry points (grapher enrich, LangChain transformer, LlamaIndex extractor)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("spacy")

from grapher_core import Candidate, GraphReranker
from grapher_core.cli import main
from grapher_core.edges.concepts import shared_concepts
from grapher_core.enrich.concepts import SpacyConceptParser, encode_graph, read_graph
from grapher_core.errors import EmbeddingMismatchError

QUESTION = "Which country is the director of Titanic from?"
TEXTS = {
    "cameron": "James Cameron is a Canadian filmmaker who directed Titanic and Avatar.",
    "titanic": "Titanic is a 1997 film directed by James Cameron about the sinking ship.",
    "canada": "Canada is a country in North America; Ottawa is its capital.",
    "bread": "Sourdough bread is leavened with wild yeast and lactic acid bacteria.",
}


@pytest.fixture(scope="module")
def enriched() -> list[Candidate]:
    graphs = SpacyConceptParser().parse(list(TEXTS.values()))
    return [
        Candidate(key, text, 0.5 - i / 10, {"concepts": encode_graph(g)})
        for i, ((key, text), g) in enumerate(zip(TEXTS.items(), graphs, strict=True))
    ]


def test_core_g_rag_works_out_of_the_box(enriched: list[Candidate]) -> None:
    reranker = GraphReranker(shared_concepts(), ranker="g-rag")
    out = reranker.rerank(enriched, query=QUESTION)
    assert [r.id for r in out][-1] == "bread"  # the unrelated passage is last
    assert (
        reranker.ranker.describe()["embedding_model"] == "all-MiniLM-L6-v2"
        or reranker.ranker.describe()["embedding_dim"] == 384
    )
    for text in ("fast", "plain"):
        again = GraphReranker(shared_concepts(), ranker="g-rag", text=text, graph="documents")
        assert {r.id for r in again.rerank(enriched, query=QUESTION)} == set(TEXTS)
    document_paths = GraphReranker([], ranker="g-rag", paths="document")
    assert document_paths.ranker.paths == "document"
    assert [r.id for r in document_paths.rerank(enriched, query=QUESTION)][-1] == "bread"


def test_shipped_checkpoint_refuses_a_foreign_embedding_model() -> None:
    class Other:
        name = "some-other-model"

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[0.0] * 384 for _ in texts]

        def embed_query(self, text: str) -> list[float]:
            return [0.0] * 384

    with pytest.raises(EmbeddingMismatchError, match="some-other-model"):
        GraphReranker([], ranker="g-rag", embedder=Other())


def test_langchain_transformer_and_reranker() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from langchain_grapher import GraphERReranker
    from langchain_grapher.transformers import ConceptGraphTransformer

    documents = [Document(id=k, page_content=t, metadata={"source": k}) for k, t in TEXTS.items()]
    enriched = ConceptGraphTransformer(list_format="json").transform_documents(documents)
    assert "concepts" not in documents[0].metadata  # copies, the input is untouched
    graph = read_graph(enriched[0].metadata["concepts"])
    assert "james cameron" in graph.nodes
    out = GraphERReranker(
        proximities=shared_concepts(), ranker="g-rag", top_n=2
    ).compress_documents(enriched, QUESTION)
    assert len(out) == 2 and "bread" not in {d.id for d in out}


def test_llamaindex_extractor_and_postprocessor() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeWithScore, TextNode

    from llama_index_grapher import GraphERPostprocessor
    from llama_index_grapher.extractors import GraphERConceptExtractor

    nodes = [TextNode(id_=k, text=t) for k, t in TEXTS.items()]
    records = asyncio.run(GraphERConceptExtractor().aextract(nodes))
    assert "james cameron" in read_graph(records[0]["concepts"]).nodes
    processed = GraphERConceptExtractor().process_nodes(nodes)
    assert "concepts" in processed[0].excluded_embed_metadata_keys
    scored = [NodeWithScore(node=n, score=0.5 - i / 10) for i, n in enumerate(processed)]
    out = GraphERPostprocessor(ranker="g-rag", top_n=2).postprocess_nodes(
        scored, query_str=QUESTION
    )
    assert len(out) == 2 and "bread" not in {n.node.node_id for n in out}


def test_grapher_enrich_concepts_extractor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "corpus.jsonl"
    source.write_text("".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in TEXTS.items()))
    out = tmp_path / "out.jsonl"
    args = [
        "enrich",
        "--extractor",
        "concepts",
        "--input",
        str(source),
        "--output",
        str(out),
        "--cache",
        str(tmp_path / "cache.sqlite"),
        "--no-progress",
    ]
    assert main(args) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == list(TEXTS)
    graph = read_graph(rows[1]["metadata"]["concepts"])
    assert "titanic" in graph.nodes and graph.edges
    assert main(args) == 0
    assert "4 unique texts from cache" in capsys.readouterr().err


def test_no_retriever_order_warning_when_g_rag_builds_its_own_graph(
    recwarn: pytest.WarningsRecorder,
) -> None:
    """g-rag builds its concept graph itself: with no proximities (the wrapper's auto-detection
    finds none in ``concepts``) the diagnostics must not say the order is the retriever's."""
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from langchain_grapher import GraphERReranker
    from langchain_grapher.transformers import ConceptGraphTransformer

    documents = [Document(id=k, page_content=t, metadata={"source": k}) for k, t in TEXTS.items()]
    enriched = ConceptGraphTransformer().transform_documents(documents)
    reranker = GraphERReranker(ranker="g-rag", top_n=2)
    out = reranker.compress_documents(enriched, QUESTION)
    assert len(out) == 2 and "bread" not in {d.id for d in out}
    messages = [str(w.message) for w in recwarn]
    assert not any("order is the retriever's" in m for m in messages), messages
    # strict mode would raise on that warning: it must run too
    strict = GraphERReranker(ranker="g-rag", top_n=2, strict=True)
    assert len(strict.compress_documents(enriched, QUESTION)) == 2
