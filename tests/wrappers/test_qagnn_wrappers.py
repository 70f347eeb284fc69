"""ranker="qa-gnn" out of the box: the shipped checkpoint through the core and both wrappers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers_extras import needs

pytest.importorskip("torch")

from grapher_core import GraphReranker
from grapher_core.candidates import Candidate
from grapher_core.edges.keys import AdjacentChunks
from grapher_core.errors import EmbeddingMismatchError
from grapher_core.learned.qa_gnn.ranker import QAGNNRanker
from grapher_core.ranking.registry import make_ranker

DIM = 384


def vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, DIM))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_core_name_loads_the_shipped_checkpoint_and_reranks() -> None:
    ranker = make_ranker("qa-gnn")
    assert isinstance(ranker, QAGNNRanker)
    info = ranker.describe()
    assert info["embedding_dim"] == DIM and len(info["fusion"]["coef"]) == 3
    v = vectors(8)
    cands = [
        Candidate(
            f"d#{i}",
            f"sentence {i}",
            score=float(0.9 - 0.05 * i),
            metadata={"doc_id": "d", "chunk_index": i},
            embedding=v[i],
        )
        for i in range(8)
    ]
    ranked = GraphReranker([AdjacentChunks()], ranker="qa-gnn").rerank(
        cands, query_embedding=v[3] + 0.1 * v[0]
    )
    assert sorted(r.id for r in ranked) == sorted(c.id for c in cands)
    assert all(0.0 < r.score < 1.0 for r in ranked)  # fused: a probability
    with pytest.raises(EmbeddingMismatchError, match="384-d"):
        GraphReranker([AdjacentChunks()], ranker="qa-gnn").rerank(
            [Candidate(c.id, c.text, c.score, c.metadata, np.ones(10)) for c in cands],
            query_embedding=np.ones(10),
        )


def test_langchain_reranker_with_qa_gnn() -> None:
    needs("langchain")
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_grapher import GraphERReranker

    docs = [
        Document(
            id=f"d#{i}",
            page_content=f"chunk {i} of the document",
            metadata={"doc_id": "d", "chunk_index": i, "score": 0.9 - 0.1 * i},
        )
        for i in range(6)
    ]
    reranker = GraphERReranker(
        proximities=[AdjacentChunks()],
        ranker="qa-gnn",
        top_n=3,
        embeddings=DeterministicFakeEmbedding(size=DIM),
    )
    out = reranker.compress_documents(docs, "what does chunk 2 say?")
    assert len(out) == 3 and all("relevance_score" in d.metadata for d in out)
    assert {d.id for d in out} <= {d.id for d in docs}


def test_llamaindex_prev_next_and_node_embeddings_need_no_other_configuration() -> None:
    needs("llamaindex")
    from llama_index.core.schema import (
        NodeRelationship,
        NodeWithScore,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )

    from llama_index_grapher import GraphERPostprocessor

    v = vectors(10, seed=1)
    nodes = [TextNode(id_=f"n{i}", text=f"text {i}", embedding=v[i].tolist()) for i in range(10)]
    for before, after in itertools.pairwise(nodes):
        before.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=after.node_id)
        after.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(node_id=before.node_id)
    retrieved = [NodeWithScore(node=n, score=0.8 - 0.05 * i) for i, n in enumerate(nodes)]
    post = GraphERPostprocessor(ranker="qa-gnn", top_n=4)
    out = post.postprocess_nodes(retrieved, QueryBundle("q", embedding=v[2].tolist()))
    assert len(out) == 4 and {n.node.node_id for n in out} <= {n.node_id for n in nodes}
    assert all(0.0 < (n.score or 0.0) < 1.0 for n in out)
