"""``evaluate_retriever`` on the user corpora's documentation, as a user would run it: page-level
gold, in both frameworks.

``python -m grapher_bench.user_corpora.pipeline_eval [--corpora markdown_docs pygame_docs]
[--out docs/first_pipeline.md]``

Per corpus, the pipeline of ``grapher_bench.user_corpora.run`` (an ``InMemoryVectorStore``
over ``GraphEREmbeddings``, its retriever with ``k=20``; a ``VectorStoreIndex`` over
``GraphERLlamaEmbedding`` with the chunks' SOURCE / PREVIOUS / NEXT relationships, retrieved
with ``similarity_top_k=20``), the hand-written questions with their gold *chunks* replaced by
the pages they are on (``metadata["source"]``), and ``evaluate_retriever(..., gold_key=
"source")`` with the default grid (GCS, PPR, the GAT), budget and repeats. Prints each report
and writes a summary table (retriever and chosen PR@5, the choice, wall time) between
``<!-- pipeline-eval:start -->`` / ``<!-- pipeline-eval:end -->`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grapher_bench.sections import write_section
from grapher_bench.user_corpora import HERE

__all__ = ["MARKERS", "main", "page_questions"]

MARKERS = ("<!-- pipeline-eval:start -->", "<!-- pipeline-eval:end -->")


def page_questions(folder: Path) -> list[dict[str, Any]]:
    """The corpus's questions with each gold chunk replaced by its page (``source``)."""
    page = {}
    for line in (folder / "corpus.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        page[row["id"]] = row["metadata"]["source"]
    out = []
    for line in (folder / "queries.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        out.append(
            {
                "id": q["id"],
                "text": q["text"],
                "gold": list(dict.fromkeys(page[g] for g in q["gold"])),
            }
        )
    return out


def _langchain(dataset: Any, embedder: Any, questions: list[dict[str, Any]]) -> Any:
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_grapher import GraphEREmbeddings, evaluate_retriever

    store = InMemoryVectorStore(GraphEREmbeddings(embedder))
    store.add_documents(
        [Document(id=o.id, page_content=o.text, metadata=dict(o.metadata)) for o in dataset.corpus],
        ids=[o.id for o in dataset.corpus],
    )
    retriever = store.as_retriever(search_kwargs={"k": 20})
    return evaluate_retriever(retriever, questions, gold_key="source")


def _llamaindex(dataset: Any, embedder: Any, questions: list[dict[str, Any]]) -> Any:
    from llama_index.core import VectorStoreIndex

    from grapher_bench.user_corpora.run import _nodes
    from llama_index_grapher import GraphERLlamaEmbedding, evaluate_retriever

    index = VectorStoreIndex(_nodes(dataset), embed_model=GraphERLlamaEmbedding(embedder))
    return evaluate_retriever(index, questions, gold_key="source", similarity_top_k=20)


def _summary(name: str, framework: str, result: Any, seconds: float) -> str:
    base = result.rows[0].metrics([5, 10])
    default = result.choice.default
    shown = default if result.choice.row is None else result.choice.row
    after = "-" if shown is None else f"{100 * shown.metrics([5, 10])['PR@5']:.1f}"
    choice = "keep the retriever's order" if result.choice.row is None else result.choice.row.name
    return (
        f"| {name} ({len(result.rows[0].gold_ranks)} q) | {framework} | "
        f"{100 * base['PR@5']:.1f} | {after} | {choice} | {seconds:.0f} s |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grapher_bench.user_corpora.pipeline_eval", description=__doc__
    )
    parser.add_argument("--corpora", nargs="+", default=["markdown_docs", "pygame_docs"])
    parser.add_argument("--out", type=Path, default=None, help="markdown file to write into")
    args = parser.parse_args(argv)
    from grapher_bench.cache import CachedEmbedder, EmbeddingCache
    from grapher_bench.data import load_dataset
    from grapher_core.embeddings import default_embedder

    embedder = CachedEmbedder(default_embedder(), EmbeddingCache(), progress=False)
    started = time.perf_counter()
    rows = []
    for name in args.corpora:
        dataset = load_dataset(HERE / name)
        questions = page_questions(HERE / name)
        embedder.embed_documents([o.text for o in dataset.corpus], desc=name)
        for framework, run in (("LangChain", _langchain), ("LlamaIndex", _llamaindex)):
            began = time.perf_counter()
            result = run(dataset, embedder, questions)
            seconds = time.perf_counter() - began
            print(f"\n== {name}, {framework} ({seconds:.0f} s) ==\n{result}", flush=True)
            rows.append(_summary(name, framework, result, seconds))
    command = "python -m grapher_bench.user_corpora.pipeline_eval " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    text = "\n".join(
        [
            f"Command: `{command.strip()}` ({time.perf_counter() - started:.0f} s wall time, "
            f"corpus vectors cached; load {load:.1f} on {os.cpu_count()} CPUs at the end).",
            "",
            "| corpus | framework | retriever PR@5 (pages) | chosen (or default) PR@5 | choice "
            "| wall |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print("\n" + text)
    if args.out is not None:
        write_section(args.out, *MARKERS, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
