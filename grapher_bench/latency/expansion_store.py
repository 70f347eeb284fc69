"""What expansion through a real local store costs per query, with and without its bounds.

Run: ``.venv/bin/python -m grapher_bench.latency.expansion_store [--chunks 3000] [--queries 100]``.

A synthetic corpus in an in-process Chroma collection (through ``langchain_chroma``): documents
of 10 consecutive chunks (``doc_id`` + ``chunk_index``), a ``title`` per document (held by each
of its chunks), and ``mentions`` of two other documents' titles plus the document's category
page. The five category pages are long lists (a fifth of the corpus between them, 120 chunks
each at 3 000), so a mention of one is a hub key: it matches every chunk of the page. Vectors
are fake 32-d ones: a topic per document plus noise. For each query the 20 chunks nearest a
noisy copy of a random chunk are the candidates; the time measured is
:meth:`GraphExpander.expand` (store calls, scoring, hub checks), wall clock, per query. Not a
test: it prints numbers for docs/expansion.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from grapher_core import AdjacentChunks, Candidate, ForeignKeys
from grapher_core.diagnostics import GraphERWarning
from grapher_core.expand import Expansion, GraphExpander

CHUNKS_PER_DOC = 10
CATEGORIES = 5
DIMENSION = 32
PROXIMITIES = (AdjacentChunks(), ForeignKeys("mentions", target_field="title"))
UNBOUNDED = {"max_fetched": None, "max_seconds": None, "max_per_key": None}
SETTINGS = {
    "defaults (1 hop)": Expansion(),
    "no bounds (1 hop)": Expansion(**UNBOUNDED),  # type: ignore[arg-type]
    "defaults, hops=2": Expansion(hops=2),
    "no bounds, hops=2": Expansion(hops=2, **UNBOUNDED),  # type: ignore[arg-type]
}


def corpus(chunks: int, seed: int = 0) -> tuple[list[str], list[str], list[dict[str, Any]], Any]:
    """Ids, texts, metadata and unit vectors of ``chunks`` synthetic chunks: four fifths in
    documents of 10 chunks, one fifth in the five category pages."""
    rng = np.random.default_rng(seed)
    per_page = max(1, chunks // (5 * CATEGORIES))
    docs = max(1, (chunks - per_page * CATEGORIES) // CHUNKS_PER_DOC)
    topics = rng.normal(size=(docs + CATEGORIES, DIMENSION))
    layout = [(d, k) for d in range(docs) for k in range(CHUNKS_PER_DOC)]
    layout += [(docs + c, k) for c in range(CATEGORIES) for k in range(per_page)]
    ids, texts, metadata, vectors = [], [], [], []
    for doc, index in layout:
        page = doc >= docs
        title = f"Category {doc - docs}" if page else f"Document {doc}"
        mentioned = [] if page else sorted({int(d) for d in rng.integers(0, docs, 2)} - {doc})
        ids.append(f"doc{doc}#{index}")
        texts.append(f"{title}, part {index}. " + " ".join(f"word{doc}_{k}" for k in range(60)))
        metadata.append(
            {
                "doc_id": f"doc{doc}",
                "chunk_index": index,
                "title": title,
                "mentions": [f"Document {d}" for d in mentioned]
                + ([] if page else [f"Category {doc % CATEGORIES}"]),
            }
        )
        vectors.append(topics[doc] + 0.5 * rng.normal(size=DIMENSION))
    matrix = np.asarray(vectors, dtype=np.float32)
    return ids, texts, metadata, matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def chroma_store(ids: list[str], texts: list[str], metadata: list[dict[str, Any]], vectors: Any):
    """An in-process Chroma collection with the corpus, wrapped as LangChain's ``Chroma``."""
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import chromadb
    from langchain_chroma import Chroma
    from langchain_core.embeddings import Embeddings

    class Unused(Embeddings):  # vectors are given; the store never embeds
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[0.0] * DIMENSION for _ in texts]

        def embed_query(self, text: str) -> list[float]:
            return [0.0] * DIMENSION

    client = chromadb.EphemeralClient()
    name = f"expansion-{uuid.uuid4().hex[:8]}"
    collection = client.create_collection(name, metadata={"hnsw:space": "cosine"})
    for start in range(0, len(ids), 1000):
        end = start + 1000
        collection.add(
            ids=ids[start:end],
            documents=texts[start:end],
            metadatas=[{k: v for k, v in m.items() if v != []} for m in metadata[start:end]],
            embeddings=vectors[start:end].tolist(),
        )
    return Chroma(client=client, collection_name=name, embedding_function=Unused())


def queries(
    n: int, ids: Sequence[str], texts: Sequence[str], metadata: Sequence[dict[str, Any]],
    vectors: Any, k: int = 20, seed: int = 1,
) -> list[tuple[list[Candidate], Any]]:  # fmt: skip
    """(candidates, query vector) per query: the ``k`` chunks nearest a noisy chunk vector."""
    rng = np.random.default_rng(seed)
    out = []
    for target in rng.integers(0, len(ids), n):
        query = vectors[target] + 0.3 * rng.normal(size=vectors.shape[1])
        query = query / np.linalg.norm(query)
        scores = vectors @ query
        top = np.argsort(-scores)[:k]
        out.append(
            (
                [
                    Candidate(ids[i], texts[i], float(scores[i]), metadata[i], vectors[i])
                    for i in top
                ],
                query,
            )
        )
    return out


def measure(source: Any, expansion: Expansion, work: list[tuple[list[Candidate], Any]]) -> dict:
    """Per-query wall milliseconds of ``expand`` and what it did. A throwaway expander warms the
    store up first; the measured one starts knowing no hub, so its first queries pay for
    finding them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GraphERWarning)
        warm = GraphExpander(PROXIMITIES, source, expansion)
        for candidates, query in work[:3]:
            warm.expand(candidates, query_embedding=query)
    expander = GraphExpander(PROXIMITIES, source, expansion)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GraphERWarning)
        times, fetched, calls, added, stopped = [], [], [], [], 0
        for candidates, query in work:
            start = time.perf_counter()
            result = expander.expand(candidates, query_embedding=query)
            times.append((time.perf_counter() - start) * 1000)
            fetched.append(result.fetched)
            calls.append(result.fetch_calls)
            added.append(len(result.added))
            stopped += result.stopped is not None
    return {
        "median_ms": statistics.median(times),
        "p95_ms": float(np.percentile(times, 95)),
        "max_ms": max(times),
        "fetched": statistics.mean(fetched),
        "calls": statistics.mean(calls),
        "added": statistics.mean(added),
        "stopped": stopped,
        "hubs": len(expander.hubs),
        "warnings": sorted({str(w.message).split(":")[1].strip()[:60] for w in caught}),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args(argv)
    from langchain_grapher.neighbours import VectorStoreSource

    ids, texts, metadata, vectors = corpus(args.chunks)
    start = time.perf_counter()
    store = chroma_store(ids, texts, metadata, vectors)
    print(f"{len(ids)} chunks in Chroma ({time.perf_counter() - start:.1f} s to load)")
    work = queries(args.queries, ids, texts, metadata, vectors)
    print("| setting | median ms | p95 ms | max ms | fetched / query | store calls / query "
          "| added / query | queries stopped by a bound | hub keys known |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, expansion in SETTINGS.items():
        row = measure(VectorStoreSource(store), expansion, work)
        print(
            f"| {name} | {row['median_ms']:.1f} | {row['p95_ms']:.1f} | {row['max_ms']:.1f} "
            f"| {row['fetched']:.0f} | {row['calls']:.2f} | {row['added']:.1f} "
            f"| {row['stopped']} | {row['hubs']} |"
        )
        for message in row["warnings"]:
            print(f"  said: {message}...")


if __name__ == "__main__":
    main()
