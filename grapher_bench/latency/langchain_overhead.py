"""How much the LangChain wrapper adds over calling the core directly (200 documents).

Run: .venv/bin/python -m grapher_bench.latency.langchain_overhead [--n 200] [--repeat 200]
Prints the median time per rerank for the core and for GraphERReranker, and their ratio.
The core side includes building the Candidates (what a user of the core does too).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from langchain_core.documents import Document

from grapher_core import Candidate, ForeignKeys, GraphReranker, Proximity, SharedEntities
from langchain_grapher import GraphERReranker
from langchain_grapher.convert import candidates_from_documents, document_from_ranked


def corpus(n: int, seed: int = 0) -> list[Document]:
    """``n`` documents with foreign keys and entities, like tables out of a vector store."""
    rng = random.Random(seed)
    ids = [f"db.t{i}" for i in range(n)]
    return [
        Document(
            id=ids[i],
            page_content=f"Table: t{i}\nColumns: a (int), b (text)",
            metadata={
                "score": 1.0 - i / n,
                "foreign_keys": rng.sample(ids, 2),
                "entities": [f"e{rng.randrange(3 * n)}" for _ in range(4)],
            },
        )
        for i in range(n)
    ]


def median_ms(functions: list[Callable[[], object]], repeat: int) -> list[float]:
    """Median time of each function, calls interleaved so machine load hits both alike."""
    times: list[list[float]] = [[] for _ in functions]
    for function in functions:
        function()  # warm up
    for _ in range(repeat):
        for function, bucket in zip(functions, times, strict=True):
            start = time.perf_counter()
            function()
            bucket.append(time.perf_counter() - start)
    return [1000 * statistics.median(bucket) for bucket in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    documents = corpus(args.n)
    proximities: list[Proximity] = [ForeignKeys(), SharedEntities()]
    core = GraphReranker(proximities, "gcs", explain=0)
    wrapper = GraphERReranker(proximities=proximities, score_key="score", top_n=10)

    def run_core() -> object:
        candidates = [
            Candidate(str(d.id), d.page_content, d.metadata["score"], d.metadata) for d in documents
        ]
        return core.rerank(candidates, query="q", top_n=10)

    def run_wrapper() -> object:
        return wrapper.compress_documents(documents, "q")

    core_ms, wrapper_ms = median_ms([run_core, run_wrapper], args.repeat)
    candidates = [
        Candidate(str(d.id), d.page_content, d.metadata["score"], d.metadata) for d in documents
    ]
    ranked = core.rerank(candidates, top_n=10)
    convert_ms = median_ms(
        [
            lambda: candidates_from_documents(documents, score_key="score"),
            lambda: [document_from_ranked(r, documents[r.original_rank - 1]) for r in ranked],
        ],
        args.repeat,
    )
    print(f"documents: {args.n}, proximities: ForeignKeys + SharedEntities, ranker: gcs, top_n=10")
    print(f"core      {core_ms:.3f} ms per rerank (median of {args.repeat})")
    print(f"wrapper   {wrapper_ms:.3f} ms per rerank (median of {args.repeat})")
    print(f"ratio     {wrapper_ms / core_ms:.3f} (wrapper / core)")
    print(
        f"translation alone: Documents -> Candidates {convert_ms[0]:.3f} ms, "
        f"ranked -> Documents {convert_ms[1]:.3f} ms"
    )


if __name__ == "__main__":
    main()
