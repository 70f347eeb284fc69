"""``grapher-bench wrapper-latency``: per-query latency of the GAT ranker through both wrappers.

What a user runs: ``GraphERRetriever(base_retriever=store.as_retriever(),
reranker=GraphERReranker(ranker="gat", embeddings=emb), fetch_k=200)`` over Chroma and over
LangChain's ``InMemoryVectorStore``, and a LlamaIndex ``VectorStoreIndex`` retriever
(``similarity_top_k=200``) followed by ``GraphERPostprocessor(ranker="gat", vector_store=...)``.
The corpus is a shared benchmark set (default spider_dev: 876 tables with foreign keys),
embedded once with the packaged MiniLM (the model the shipped GAT checkpoint uses). Each
pipeline answers ``--warmup`` queries, then ``--queries`` others are timed end to end (store
search, query embedding, vectors, graph, GAT). "before" is the same LangChain pipeline with
stored vectors and the vector cache out of use (what every query cost before: every candidate
embedded again), timed on ``--before`` queries. The last column times the store's own search
alone on the same queries (the query embedding then comes from the query cache), so
total - search is what GraphER adds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from grapher_bench.cli import non_negative_int, positive_int
from grapher_bench.sections import write_section
from grapher_core.cli.arguments import output_argument

__all__ = ["register", "run"]

MARKERS = ("<!-- wrapper-latency:start -->", "<!-- wrapper-latency:end -->")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "wrapper-latency",
        help="per-query latency of ranker=gat, fetch_k=200 through the "
        "LangChain and LlamaIndex wrappers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data", type=Path, default=None, help="dataset folder (default <benchmarks>/spider_dev)"
    )
    parser.add_argument(
        "--fetch-k", type=positive_int, default=200, help="candidates per query (200)"
    )
    parser.add_argument("--queries", type=positive_int, default=40, help="timed queries (40)")
    parser.add_argument(
        "--warmup", type=non_negative_int, default=5, help="untimed first queries (5)"
    )
    parser.add_argument(
        "--before",
        type=non_negative_int,
        default=3,
        help="queries timed without stored vectors or cache (3)",
    )
    output_argument(
        parser,
        "--write",
        type=Path,
        default=None,
        metavar="MD",
        help="write the table into this markdown file between markers",
    )
    parser.set_defaults(func=run)


def _timed(pipeline: Callable[[str], Any], queries: Sequence[str]) -> list[float]:
    out = []
    for query in queries:
        started = time.perf_counter()
        pipeline(query)
        out.append((time.perf_counter() - started) * 1e3)
    return out


def _row(name: str, times: Sequence[float], search: Sequence[float] | None = None) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    extra = "–" if search is None else f"{statistics.median(search):.1f}"
    return (
        f"| {name} | {len(times)} | {statistics.median(times):.1f} | {p95:.1f} | "
        f"{min(times):.1f} | {extra} |"
    )


def run(args: argparse.Namespace) -> int:
    import chromadb
    import numpy as np
    from langchain_chroma import Chroma
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import QueryBundle, TextNode

    from grapher_bench.cache import CachedEmbedder, EmbeddingCache
    from grapher_bench.data import default_benchmarks_root, load_dataset
    from grapher_core.embeddings import default_embedder
    from langchain_grapher import GraphEREmbeddings, GraphERReranker, GraphERRetriever
    from llama_index_grapher import GraphERLlamaEmbedding, GraphERPostprocessor

    folder = args.data or default_benchmarks_root() / "spider_dev"
    needed = args.warmup + args.queries + args.before
    dataset = load_dataset(folder, limit=needed)
    texts = [q.text for q in dataset.queries]
    if len(texts) < needed:
        raise ValueError(f"{folder} has {len(texts)} queries; {needed} are needed")
    warm, timed, before = (
        texts[: args.warmup],
        texts[args.warmup : args.warmup + args.queries],
        texts[args.warmup + args.queries :],
    )
    corpus = dataset.corpus
    started = time.perf_counter()
    embedder = default_embedder()
    cached = CachedEmbedder(embedder, EmbeddingCache(), progress=False)  # the bench's disk cache
    vectors = np.asarray(cached.embed_documents([o.text for o in corpus], desc=dataset.name))
    print(
        f"{len(corpus)} objects of {dataset.name} embedded in "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )

    embeddings = GraphEREmbeddings()
    documents = [Document(id=o.id, page_content=o.text, metadata=dict(o.metadata)) for o in corpus]
    memory = InMemoryVectorStore(embeddings)
    for document, vector in zip(documents, vectors, strict=True):  # no second embedding pass
        memory.store[str(document.id)] = {
            "id": str(document.id),
            "vector": vector.tolist(),
            "text": document.page_content,
            "metadata": document.metadata,
        }
    chroma = Chroma(
        collection_name=f"latency-{uuid.uuid4().hex[:8]}",
        embedding_function=embeddings,
        client=chromadb.EphemeralClient(),
        collection_metadata={"hnsw:space": "cosine"},
    )
    chroma._collection.add(
        ids=[str(d.id) for d in documents],
        embeddings=vectors.tolist(),
        documents=[d.page_content for d in documents],
        metadatas=[_flat(d.metadata) for d in documents],
    )

    def langchain(store: Any, reranker: GraphERReranker) -> Callable[[str], Any]:
        retriever = GraphERRetriever(
            base_retriever=store.as_retriever(), reranker=reranker, k=5, fetch_k=args.fetch_k
        )
        return retriever.invoke

    nodes = [
        TextNode(id_=o.id, text=o.text, metadata=dict(o.metadata), embedding=v.tolist())
        for o, v in zip(corpus, vectors, strict=True)
    ]
    llama_embed = GraphERLlamaEmbedding()
    index = VectorStoreIndex(nodes, embed_model=llama_embed)
    retriever = index.as_retriever(similarity_top_k=args.fetch_k)
    post = GraphERPostprocessor(
        ranker="gat", top_n=5, embed_model=llama_embed, vector_store=index.vector_store
    )

    def llama(query: str) -> Any:
        bundle = QueryBundle(query, embedding=llama_embed.get_query_embedding(query))
        return post.postprocess_nodes(retriever.retrieve(bundle), query_bundle=bundle)

    def llama_search(query: str) -> Any:
        return retriever.retrieve(
            QueryBundle(query, embedding=llama_embed.get_query_embedding(query))
        )

    def search(store: Any) -> Callable[[str], Any]:
        return lambda query: store.similarity_search_with_score(query, k=args.fetch_k)

    pipelines = {
        "LangChain GraphERRetriever over InMemoryVectorStore": (
            langchain(memory, GraphERReranker(ranker="gat", embeddings=embeddings)),
            search(memory),
        ),
        "LangChain GraphERRetriever over Chroma": (
            langchain(chroma, GraphERReranker(ranker="gat", embeddings=embeddings)),
            search(chroma),
        ),
        "LlamaIndex VectorStoreIndex + GraphERPostprocessor": (llama, llama_search),
    }
    rows = []
    for name, (pipeline, plain) in pipelines.items():
        _timed(pipeline, warm)
        times = _timed(pipeline, timed)
        search_times = _timed(plain, timed)  # the store's own search (query embedding cached)
        rows.append(_row(name, times, search_times))
        print(rows[-1], file=sys.stderr, flush=True)
    cold = GraphERReranker(ranker="gat", embeddings=GraphEREmbeddings())  # another object:
    cold.core.vector_cache.max_items = 0  # stored vectors not trusted, nothing cached
    before_times = _timed(langchain(memory, cold), before)
    rows.append(
        _row("before: InMemoryVectorStore, every candidate embedded per query", before_times)
    )
    load = os.getloadavg()
    table = (
        (
            f"| pipeline (ranker=gat, fetch_k={args.fetch_k}, top 5) | queries | median ms | "
            "p95 ms | min ms | store search alone, median ms |\n|---|---|---|---|---|---|\n"
        )
        + "\n".join(rows)
        + "\n"
    )
    command = (
        f"grapher-bench wrapper-latency --queries {args.queries} --warmup {args.warmup} "
        f"--before {args.before}"
    )
    body = (
        f"Per-query latency after {args.warmup} warm-up queries, {dataset.name} "
        f"({len(corpus)} objects), measured with `{command}` on {os.cpu_count()} cores, "
        f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end"
        + (": other jobs were running, so these are upper bounds" if load[0] > 1.0 else "")
        + ".\n\n"
        + table
    )
    print(body)
    if args.write is not None:
        write_section(args.write, *MARKERS, body)
        print(f"updated {args.write}", file=sys.stderr)
    return 0


def _flat(metadata: dict[str, Any]) -> dict[str, Any]:
    """Chroma keeps scalars and flat same-typed lists: JSON for anything else."""
    import json

    out: dict[str, Any] = {}
    for key, value in metadata.items():
        flat_list = isinstance(value, list) and value and all(isinstance(v, str) for v in value)
        if isinstance(value, (str, int, float, bool)) or flat_list:
            out[key] = value
        elif value not in (None, [], {}):
            out[key] = json.dumps(value)
    return out
