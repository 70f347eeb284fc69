"""Async that never blocks the event loop, in both wrappers.

A 5 ms heartbeat coroutine runs beside each async rerank and records the longest gap between
its beats: before the CPU-bound work (graph, GAT forward pass, a local embedding model, store
reads) moved to worker threads, a 200-candidate GAT rerank stalled it for the whole call
(0.3-0.4 s with the slow fakes here, 1.2-4.6 s with the packaged MiniLM).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, TextNode

from grapher_core import ForeignKeys
from grapher_core.edges.graph import CandidateGraph
from grapher_core.ranking.base import RankContext
from langchain_grapher import GraphEREmbeddings, GraphERReranker
from llama_index_grapher import GraphERLlamaEmbedding, GraphERPostprocessor

N = 200
DIM = 384
COST = 0.3  # a local model's seconds for 200 texts (time.sleep releases the GIL, as torch does)
MAX_STALL = 0.1


def vector(text: str) -> np.ndarray:
    """A deterministic unit vector per text."""
    rng = np.random.default_rng(sum(map(ord, text)) * 7919 + len(text))
    v = rng.normal(size=DIM)
    return (v / np.linalg.norm(v)).astype(np.float32)


class SlowLocalModel:
    """A core embedder standing in for a local CPU model (the GAT's own MiniLM): 384-d, slow,
    records the threads and time spans of its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, float, float]] = []  # (thread, texts, start, end)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        start = time.perf_counter()
        time.sleep(COST * len(texts) / N)
        self.calls.append((threading.get_ident(), len(texts), start, time.perf_counter()))
        return np.stack([vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        time.sleep(0.01)
        return vector(text)


class SlowLangChainModel(Embeddings):
    """A sync-only LangChain model (LangChain's base class runs it in its executor)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(COST * len(texts) / N)
        return [vector(t).tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        time.sleep(0.01)
        return vector(text).tolist()


class SlowLlamaModel(BaseEmbedding):
    """A sync-only LlamaIndex model: LlamaIndex's default async path would run it on the loop."""

    def _get_query_embedding(self, query: str) -> list[float]:
        time.sleep(0.01)
        return vector(query).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        time.sleep(COST * len(texts) / N)
        return [vector(t).tolist() for t in texts]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


def metadata(i: int) -> dict[str, Any]:
    return {"foreign_keys": [f"d{(i + 1) % N}", f"d{(i * 7) % N}"]}


def documents(tag: str, n: int = N) -> list[Document]:
    return [
        Document(id=f"d{i}", page_content=f"{tag} document {i}", metadata=metadata(i))
        for i in range(n)
    ]


def nodes(tag: str, n: int = N) -> list[NodeWithScore]:
    return [
        NodeWithScore(
            node=TextNode(id_=f"d{i}", text=f"{tag} document {i}", metadata=metadata(i)),
            score=1.0 - i / n,
        )
        for i in range(n)
    ]


async def largest_stall(call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """Run ``call`` beside a coroutine that sleeps 5 ms in a loop; the longest gap it saw."""
    gaps: list[float] = []
    stop = asyncio.Event()

    async def heartbeat() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    await asyncio.sleep(0.02)
    try:
        result = await call()
    finally:
        stop.set()
        await beat
    return max(gaps), result


def gat_rerankers(model: str) -> tuple[GraphERReranker, GraphERPostprocessor]:
    """Both wrappers on the packaged GAT checkpoint, fed 384-d vectors by a slow local model:
    the ranker's own embedder (``model="own"``) or a sync-only framework model."""
    from grapher_core.learned import GATRanker

    if model == "own":
        return (
            GraphERReranker(
                ranker=GATRanker(embedder=SlowLocalModel()), proximities=[ForeignKeys()], top_n=10
            ),
            GraphERPostprocessor(
                ranker=GATRanker(embedder=SlowLocalModel()), proximities=[ForeignKeys()], top_n=10
            ),
        )
    return (
        GraphERReranker(
            ranker="gat", proximities=[ForeignKeys()], top_n=10, embeddings=SlowLangChainModel()
        ),
        GraphERPostprocessor(
            ranker="gat",
            proximities=[ForeignKeys()],
            top_n=10,
            embed_model=SlowLlamaModel(model_name="slow-local"),
        ),
    )


@pytest.mark.integration  # loads the packaged GAT checkpoint
@pytest.mark.parametrize("model", ["own", "framework"])
async def test_langchain_gat_rerank_never_stalls_the_loop(model: str) -> None:
    pytest.importorskip("torch")
    reranker, _ = gat_rerankers(model)
    docs = documents(f"lc-{model}")
    stall, out = await largest_stall(lambda: reranker.acompress_documents(docs, "which ones?"))
    assert len(out) == 10
    assert stall <= MAX_STALL, f"the event loop stalled {stall * 1000:.0f} ms"


@pytest.mark.integration  # loads the packaged GAT checkpoint
@pytest.mark.parametrize("model", ["own", "framework"])
async def test_llamaindex_gat_rerank_never_stalls_the_loop(model: str) -> None:
    pytest.importorskip("torch")
    _, postprocessor = gat_rerankers(model)
    given = nodes(f"li-{model}")
    stall, out = await largest_stall(
        lambda: postprocessor.apostprocess_nodes(given, query_str="which ones?")
    )
    assert len(out) == 10
    assert stall <= MAX_STALL, f"the event loop stalled {stall * 1000:.0f} ms"


class SlowRanker:
    """A ranker that needs vectors (its own embedder fills them) and takes 0.3 s: records when
    each call ran, so overlapping calls can be seen."""

    name = "slow"
    needs_embeddings = True

    def __init__(self) -> None:
        self.embedder = SlowLocalModel()
        self.spans: list[tuple[float, float]] = []

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        start = time.perf_counter()
        time.sleep(COST)
        self.spans.append((start, time.perf_counter()))
        return np.asarray(seeds, dtype=np.float64)


def overlap(spans: list[tuple[float, float]]) -> bool:
    (a_start, a_end), (b_start, b_end) = spans
    return max(a_start, b_start) < min(a_end, b_end)


async def test_two_langchain_calls_run_at_the_same_time() -> None:
    ranker = SlowRanker()
    reranker = GraphERReranker(ranker=ranker, proximities=[ForeignKeys()], top_n=5)
    first, second = await asyncio.gather(
        reranker.acompress_documents(documents("one", 50), "first"),
        reranker.acompress_documents(documents("two", 50), "second"),
    )
    assert len(first) == len(second) == 5
    assert len(ranker.spans) == 2 and overlap(ranker.spans)
    embedding = [(start, end) for _thread, _n, start, end in ranker.embedder.calls]
    assert len(embedding) == 2 and overlap(embedding)  # the local model ran concurrently too
    assert threading.get_ident() not in {t for t, *_ in ranker.embedder.calls}


async def test_two_llamaindex_calls_run_at_the_same_time() -> None:
    ranker = SlowRanker()
    postprocessor = GraphERPostprocessor(ranker=ranker, proximities=[ForeignKeys()], top_n=5)
    first, second = await asyncio.gather(
        postprocessor.apostprocess_nodes(nodes("one", 50), query_str="first"),
        postprocessor.apostprocess_nodes(nodes("two", 50), query_str="second"),
    )
    assert len(first) == len(second) == 5
    assert len(ranker.spans) == 2 and overlap(ranker.spans)
    assert threading.get_ident() not in {t for t, *_ in ranker.embedder.calls}


class CountingEmbedder:
    """A core embedder that counts its calls and the thread each ran on."""

    name = "counting"

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.threads: set[int] = set()

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.batches.append(len(texts))
        self.threads.add(threading.get_ident())
        return np.stack([vector(t)[:8] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        self.threads.add(threading.get_ident())
        return vector(text)[:8]


async def test_llama_embedding_batches_its_async_calls_off_the_loop() -> None:
    inner = CountingEmbedder()
    model = GraphERLlamaEmbedding(inner)
    texts = [f"text {i}" for i in range(64)]
    vectors = await model.aget_text_embedding_batch(texts)
    assert len(vectors) == 64 and len(vectors[0]) == 8
    assert inner.batches == [64]  # one call, not one per text
    small = GraphERLlamaEmbedding(inner, embed_batch_size=16)
    inner.batches.clear()
    await small.aget_text_embedding_batch(texts)
    assert inner.batches == [16, 16, 16, 16]
    assert len(await model.aget_query_embedding("q")) == 8
    assert len(await model.aget_text_embedding("one")) == 8
    assert threading.get_ident() not in inner.threads  # the model never ran on the loop
    assert model.get_text_embedding_batch(texts) == vectors  # sync and async agree


async def test_langchain_embeddings_batch_their_async_calls_off_the_loop() -> None:
    inner = CountingEmbedder()
    embeddings = GraphEREmbeddings(inner)
    texts = [f"text {i}" for i in range(64)]
    vectors = await embeddings.aembed_documents(texts)
    assert len(vectors) == 64 and inner.batches == [64]
    assert len(await embeddings.aembed_query("q")) == 8
    assert threading.get_ident() not in inner.threads


class SlowSource:
    """A neighbour source whose fetch blocks like a remote store's (0.3 s) and returns objects
    without vectors, so the fetched objects are embedded too: both must run off the loop."""

    def __init__(self) -> None:
        self.threads: set[int] = set()

    def fetch(self, keys: Any) -> list[Any]:
        from grapher_core import Candidate

        self.threads.add(threading.get_ident())
        time.sleep(COST)
        wanted = [value for key in keys for _field, value in key]
        return [Candidate(str(v), f"fetched {v}", None, {"foreign_keys": []}) for v in wanted]


async def test_langchain_expansion_through_a_slow_store_never_stalls_the_loop() -> None:
    """The fetch steps of expansion and the sync-only model embedding what they bring are IO the
    async driver runs in worker threads: the loop keeps beating."""
    source = SlowSource()
    reranker = GraphERReranker(
        proximities=[ForeignKeys()],
        embeddings=SlowLangChainModel(),
        neighbour_source=source,
        expand_seeds=3,
        expand_max_seconds=None,
        top_n=20,
    )
    docs = [
        Document(id=f"d{i}", page_content=f"doc {i}", metadata={"foreign_keys": [f"x{i}"]})
        for i in range(30)
    ]
    stall, out = await largest_stall(lambda: reranker.acompress_documents(docs, "which ones?"))
    assert stall <= MAX_STALL, f"the event loop stalled {stall * 1000:.0f} ms"
    assert any(d.metadata.get("grapher_expanded") for d in out), "expansion fetched nothing"
    assert threading.get_ident() not in source.threads  # the store was called off the loop
