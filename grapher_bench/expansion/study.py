"""Side by side on the shared benchmarks: candidate-only GCS, GCS with expansion, and the
``langchain-graph-retriever`` peer, on the same embeddings and the same edges.

    python -m grapher_bench.expansion.study --data ../shared/benchmarks \\
        --datasets 2wikimultihopqa hotpotqa --out expand_out

Writes ``<out>/<dataset>.json`` (metrics, latencies, per-query PR@10) and prints a table. The
peer is imported lazily (it needs LangChain and ``langchain-graph-retriever``); the rest is the
bench's own loading, enrichment, caching and retrieval, read-only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grapher_bench.enrichment import FULL_GRAPH, LINK_GRAPH
from grapher_bench.metrics import perfect_recall_at_k
from grapher_core.candidates import Candidate
from grapher_core.expand.expansion import (
    DEFAULT_BUDGET,
    DEFAULT_HOPS,
    DEFAULT_SEEDS,
    ExpandingReranker,
    Expansion,
)
from grapher_core.expand.source import InMemorySource
from grapher_core.rerank import GraphReranker

__all__ = ["main", "markdown_table", "peer_edges", "run"]

"""The link graph per task type: the proximities expansion can follow."""


def peer_edges(graph: str) -> list[tuple[str, str]]:
    """The graph retriever's edge specs for the same links GraphER follows."""
    return {
        "fk": [("foreign_keys", "$id")],
        "mentions": [("mentions", "title")],
        "adjacent": [("adjacent", "$id")],
    }[graph]


@dataclass
class _Prepared:
    """One dataset ready to rank: its link graph, enriched metadata, vectors and each query's
    hybrid top-200 candidates."""

    dataset: Any
    graph: str
    metadata: list[dict[str, Any]]
    corpus_vectors: Any
    query_vectors: Any
    candidates: list[list[Candidate]]


def run(
    name: str,
    data: Path,
    *,
    seeds: int = DEFAULT_SEEDS,
    hops: int = DEFAULT_HOPS,
    budget: int = DEFAULT_BUDGET,
    peer: bool = True,
    peer_grid: Sequence[dict[str, Any]] = (),
    limit: int | None = None,
    chroma: int = 0,
    expand_grid: Sequence[Sequence[int]] = (),
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Evaluate one dataset; returns the JSON-able result."""
    prepared = _prepare(name, data, limit)
    dataset, graph = prepared.dataset, prepared.graph
    out: dict[str, Any] = {
        "dataset": name,
        "task_type": dataset.task_type,
        "graph": graph,
        "n_queries": len(dataset.queries),
        "retriever": "hybrid",
        "expand": {"seeds": seeds, "hops": hops, "budget": budget},
        "results": {},
        "per_query": {},
    }

    def record(label: str, ranked_ids: list[list[str]], timings: list[float]) -> None:
        metrics = _metrics(dataset.queries, ranked_ids, timings)
        out["results"][label] = metrics
        out["per_query"][label] = {
            q.id: ids[:10] for q, ids in zip(dataset.queries, ranked_ids, strict=True)
        }
        log(
            f"{name:28s} {label:18s} PR@5 {metrics['PR@5']:.3f} PR@10 {metrics['PR@10']:.3f} "
            f"{metrics['ms_median']:.1f} ms"
        )

    for label, reranker in _rankers(prepared, seeds, hops, budget, expand_grid).items():
        record(label, *_rerank_all(reranker, prepared))
    if peer and graph == "adjacent":
        record("prev-next", *_prev_next(prepared))
    if peer:
        for label, ranked in _graph_retriever_runs(prepared, peer_grid):
            record(label, *ranked)
    if chroma:
        out["chroma"] = _chroma_latency(
            dataset,
            prepared.metadata,
            prepared.corpus_vectors,
            prepared.candidates,
            prepared.query_vectors,
            chroma,
            log,
            "expand-gcs-v1",
        )
    out["gold"] = {q.id: q.gold for q in dataset.queries}
    return out


def _prepare(name: str, data: Path, limit: int | None) -> _Prepared:
    """Load the dataset, add mentions where its graph follows them, embed (cached) and
    retrieve each query's candidates."""
    from grapher_bench.cache import CachedEmbedder, EmbeddingCache
    from grapher_bench.data import load_dataset
    from grapher_bench.enrichment import add_mentions
    from grapher_bench.retrievers import BaseRetriever
    from grapher_core.embeddings import default_embedder

    dataset = load_dataset(data / name, limit=limit)
    graph = LINK_GRAPH[dataset.task_type]
    metadata = [dict(o.metadata) for o in dataset.corpus]
    if graph == "mentions":
        metadata = add_mentions(dataset.corpus, metadata)
    embedder = CachedEmbedder(default_embedder(), EmbeddingCache())
    corpus_vectors = embedder.embed_documents([o.text for o in dataset.corpus])
    query_vectors = embedder.embed_documents([q.text for q in dataset.queries])
    base = BaseRetriever(dataset.corpus, "hybrid", corpus_vectors, 200)
    candidates: list[list[Candidate]] = [
        base.candidates(base.retrieve(q.text, v), metadata)
        for q, v in zip(dataset.queries, query_vectors, strict=True)
    ]
    return _Prepared(dataset, graph, metadata, corpus_vectors, query_vectors, candidates)


def _rankers(
    prepared: _Prepared,
    seeds: int,
    hops: int,
    budget: int,
    expand_grid: Sequence[Sequence[int]],
) -> dict[str, Any]:
    """Baseline, candidate-only GCS and GCS with expansion (the defaults, then each
    ``[seeds, hops, budget]`` of the grid), over the in-memory corpus."""
    from grapher_bench.enrichment import proximities_for

    proximities = proximities_for(prepared.graph)
    source = InMemorySource(
        prepared.dataset.corpus, embeddings=prepared.corpus_vectors, metadata=prepared.metadata
    )

    def expanding(m: int, k: int, b: int) -> ExpandingReranker:
        return ExpandingReranker(
            GraphReranker(proximities, "gcs", explain=0),
            source,
            Expansion(seeds=m, hops=k, budget=b, max_seconds=None),
        )

    rankers: dict[str, Any] = {
        "baseline": GraphReranker([], "baseline", explain=0),
        "gcs": GraphReranker(proximities, "gcs", explain=0),
        "expand-gcs": expanding(seeds, hops, budget),
    }
    for m, k, b in expand_grid:
        rankers[f"expand-gcs[{m},{k},{b}]"] = expanding(m, k, b)
    return rankers


def _metrics(
    queries: Sequence[Any], ranked_ids: list[list[str]], timings: list[float]
) -> dict[str, float]:
    """PR@5 and PR@10, over all queries and over multi-object ones, and the median ms."""
    pairs = list(zip(ranked_ids, queries, strict=True))
    multi = [len(q.gold) > 1 for q in queries]
    rows = {k: [perfect_recall_at_k(ids, q.gold, k) for ids, q in pairs] for k in (5, 10)}
    metrics = {f"PR@{k}": float(np.mean(v)) for k, v in rows.items()}
    for k, values in rows.items():
        chosen = [x for x, m in zip(values, multi, strict=True) if m]
        if chosen:
            metrics[f"PR@{k}>1"] = float(np.mean(chosen))
    metrics["ms_median"] = float(statistics.median(timings))
    return metrics


def _rerank_all(reranker: Any, prepared: _Prepared) -> tuple[list[list[str]], list[float]]:
    """Each query's top 10 ids through ``reranker`` and its milliseconds."""
    ranked_ids: list[list[str]] = []
    timings: list[float] = []
    queries = prepared.dataset.queries
    for query, cands, vector in zip(
        queries, prepared.candidates, prepared.query_vectors, strict=True
    ):
        tick = time.perf_counter()
        ranked = reranker.rerank(cands, query=query.text, query_embedding=vector, top_n=10)
        timings.append((time.perf_counter() - tick) * 1000)
        ranked_ids.append([r.id for r in ranked])
    return ranked_ids, timings


def _prev_next(prepared: _Prepared) -> tuple[list[list[str]], list[float]]:
    """LlamaIndex's previous/next-chunk postprocessor on the same candidates."""
    from grapher_bench.peers.llamaindex import PrevNextPeer

    prev_next = PrevNextPeer(prepared.dataset.corpus, prepared.metadata)
    ranked_ids: list[list[str]] = []
    timings: list[float] = []
    for cands in prepared.candidates:
        tick = time.perf_counter()
        ranked_ids.append(
            prev_next.rerank([c.id for c in cands], [float(c.score or 0.0) for c in cands])
        )
        timings.append((time.perf_counter() - tick) * 1000)
    return ranked_ids, timings


def _graph_retriever_runs(
    prepared: _Prepared, peer_grid: Sequence[dict[str, Any]]
) -> Iterator[tuple[str, tuple[list[list[str]], list[float]]]]:
    """``langchain-graph-retriever`` with its defaults, then each setting of ``peer_grid``;
    on chunks the metadata first gains the ``adjacent`` ids its edges follow."""
    from grapher_bench.peers.langchain import GraphRetrieverPeer, adjacent_ids

    dataset, metadata = prepared.dataset, prepared.metadata
    if prepared.graph == "adjacent":
        for meta, ids in zip(metadata, adjacent_ids(dataset.corpus, metadata), strict=True):
            meta["adjacent"] = ids
    for settings in [{}, *peer_grid]:
        retriever = GraphRetrieverPeer(
            dataset.corpus,
            metadata,
            prepared.corpus_vectors,
            peer_edges(prepared.graph),
            select_k=10,
            **settings,
        )
        yield _peer_label(settings), _retrieve_all(retriever, prepared)


def _peer_label(settings: dict[str, Any]) -> str:
    """``graph-retriever`` for the defaults, with the settings as compact JSON otherwise."""
    if not settings:
        return "graph-retriever"
    return "graph-retriever" + json.dumps(settings, separators=(",", ":"))


def _retrieve_all(retriever: Any, prepared: _Prepared) -> tuple[list[list[str]], list[float]]:
    """Each query's ids from a peer that retrieves by itself, and its milliseconds."""
    ranked_ids: list[list[str]] = []
    timings: list[float] = []
    for query, vector in zip(prepared.dataset.queries, prepared.query_vectors, strict=True):
        tick = time.perf_counter()
        ranked_ids.append(retriever.retrieve(query.text, vector))
        timings.append((time.perf_counter() - tick) * 1000)
    return ranked_ids, timings


def latency(
    name: str,
    data: Path,
    n: int,
    *,
    rules: Sequence[str] = ("expand-gcs",),
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Added milliseconds per query of expansion rules over candidate-only GCS on the same
    graph, with the in-memory source and through Chroma, on the first ``n`` queries.

    Timed as process CPU time (``time.process_time``: every thread of this process, Chroma's
    included), not wall clock: on a shared machine a wall clock mostly measures the other
    jobs; the store is in-process, so its work is in the count."""
    from grapher_bench.data import load_dataset
    from grapher_bench.enrichment import proximities_for
    from grapher_bench.peers.rankers import _vectors, expansion_reranker, peer_graph
    from grapher_bench.runner import RankerSpec, _enriched_metadata, prepare_candidates

    dataset = load_dataset(data / name, limit=n)
    graph = FULL_GRAPH[dataset.task_type]  # enrich for every link kind; each rule picks its own
    metadata = _enriched_metadata(dataset, [RankerSpec("x", "gcs", graph)], [], False)
    candidates, query_vectors = prepare_candidates(dataset, "hybrid", metadata, progress=False)
    corpus_vectors, _ = _vectors(dataset)
    source = InMemorySource(dataset.corpus, embeddings=corpus_vectors, metadata=metadata)
    out: dict[str, Any] = {"dataset": name, "n_queries": len(dataset.queries)}
    for rule in rules:
        plain = GraphReranker(
            proximities_for(peer_graph(rule, dataset.task_type)), "gcs", explain=0
        )
        expanding = expansion_reranker(rule, dataset.task_type, source)
        timings: dict[str, list[float]] = {"gcs": [], "expand": []}
        for _repeat in range(2):  # the first pass warms caches; the second is measured
            timings = {"gcs": [], "expand": []}
            for cands, vector in zip(candidates, query_vectors, strict=True):
                for label, reranker in (("gcs", plain), ("expand", expanding)):
                    tick = time.process_time()
                    reranker.rerank(cands, query_embedding=vector, top_n=10)
                    timings[label].append((time.process_time() - tick) * 1000)
        gcs_ms = float(statistics.median(timings["gcs"]))
        expand_ms = float(statistics.median(timings["expand"]))
        out[f"memory:{rule}"] = {
            "gcs_ms_median": gcs_ms,
            "expand_ms_median": expand_ms,
            "added_ms_median": expand_ms - gcs_ms,
        }
        log(f"{name} in-memory {rule}: {out[f'memory:{rule}']}")
        out[f"chroma:{rule}"] = _chroma_latency(
            dataset,
            metadata,
            np.asarray(corpus_vectors),
            list(candidates),
            query_vectors,
            n,
            log,
            rule,
        )
    return out


def _chroma_latency(
    dataset: Any,
    metadata: list[dict[str, Any]],
    corpus_vectors: np.ndarray,
    candidates: list[list[Candidate]],
    query_vectors: Any,
    n: int,
    log: Callable[[str], None],
    rule: str = "expand-gcs",
) -> dict[str, float]:
    """An expansion rule (a bench ranker name) through a real (in-process) Chroma store:
    added latency per query over candidate-only GCS on the same graph."""
    import uuid

    import chromadb
    from langchain_chroma import Chroma

    from grapher_bench.enrichment import proximities_for as proximities_for_graph
    from grapher_bench.peers.langchain import LookupEmbeddings
    from langchain_grapher.neighbours import VectorStoreSource

    lookup = LookupEmbeddings(
        {o.text: v for o, v in zip(dataset.corpus, corpus_vectors, strict=True)}
    )
    store = Chroma(
        collection_name=f"expand-{uuid.uuid4().hex[:8]}",
        embedding_function=lookup,
        client=chromadb.EphemeralClient(),
        collection_metadata={"hnsw:space": "cosine"},
    )
    clean = [
        {k: v for k, v in m.items() if not (isinstance(v, list) and not v)} for m in metadata
    ]  # Chroma keeps only non-empty lists
    for start in range(0, len(dataset.corpus), 1000):
        part = slice(start, start + 1000)
        store.add_texts(
            [o.text for o in dataset.corpus[part]],
            metadatas=[_flat(m) for m in clean[part]],
            ids=[o.id for o in dataset.corpus[part]],
        )
    from grapher_bench.peers.rankers import expansion_reranker, peer_graph

    source = VectorStoreSource(store)
    plain = GraphReranker(
        proximities_for_graph(peer_graph(rule, dataset.task_type)), "gcs", explain=0
    )
    expanding = expansion_reranker(rule, dataset.task_type, source)
    timings: dict[str, list[float]] = {"gcs": [], "expand-gcs": []}
    for cands, vector in list(zip(candidates, query_vectors, strict=True))[:n]:
        for label, reranker in (("gcs", plain), ("expand-gcs", expanding)):
            tick = time.process_time()
            reranker.rerank(cands, query_embedding=vector, top_n=10)
            timings[label].append((time.process_time() - tick) * 1000)
    result = {f"{label}_ms_median": float(statistics.median(t)) for label, t in timings.items()}
    result["added_ms_median"] = result["expand-gcs_ms_median"] - result["gcs_ms_median"]
    result["store_calls_per_query"] = source.calls / max(n, 1)
    result["rule"] = rule  # type: ignore[assignment]
    result["n_queries"] = float(n)
    log(f"{dataset.name:28s} chroma: {result}")
    return result


def _flat(metadata: dict[str, Any]) -> dict[str, Any]:
    """Chroma metadata: scalars and non-empty same-typed lists; nested lists as JSON text."""
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, list) and any(isinstance(x, (list, dict)) for x in value):
            out[key] = json.dumps(value)
        elif value is None:
            continue
        elif isinstance(value, (list, str, int, float, bool)):
            out[key] = value
        else:
            out[key] = str(value)
    return out


def markdown_table(results: Sequence[dict[str, Any]]) -> str:
    """PR@10 (PR@5) and median ms per query, one row per dataset, one column per method."""
    labels = list(dict.fromkeys(label for r in results for label in r["results"]))
    head = "| dataset | " + " | ".join(labels) + " |"
    lines = [head, "|" + "---|" * (len(labels) + 1)]
    for r in results:
        cells = []
        best = max(m["PR@10"] for m in r["results"].values())
        for label in labels:
            m = r["results"].get(label)
            if m is None:
                cells.append("")
                continue
            text = f"{100 * m['PR@10']:.1f} ({100 * m['PR@5']:.1f})"
            cells.append(f"**{text}**" if m["PR@10"] == best else text)
        lines.append(f"| {r['dataset']} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| median ms / query | " + " | ".join(labels) + " |")
    lines.append("|" + "---|" * (len(labels) + 1))
    for r in results:
        cells = [
            f"{r['results'][label]['ms_median']:.1f}" if label in r["results"] else ""
            for label in labels
        ]
        lines.append(f"| {r['dataset']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path)
    parser.add_argument("--datasets", nargs="+", default=[])
    parser.add_argument(
        "--table",
        type=Path,
        default=None,
        metavar="DIR",
        help="print the markdown table of the <dataset>.json files in DIR",
    )
    parser.add_argument("--out", type=Path, default=Path("expand_out"))
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS)
    parser.add_argument("--hops", type=int, default=DEFAULT_HOPS)
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument(
        "--peer-grid", default="[]", help="JSON list of Eager settings to try besides the defaults"
    )
    parser.add_argument(
        "--expand-grid",
        default="[]",
        help="JSON list of [seeds, hops, budget] to try besides the defaults",
    )
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--chroma",
        type=int,
        default=0,
        help="also time expansion through Chroma on the first N queries",
    )
    parser.add_argument(
        "--latency",
        type=int,
        default=0,
        metavar="N",
        help="only time the expansion rules (--rules) in memory and through "
        "Chroma on the first N queries; writes <out>/latency-<set>.json",
    )
    parser.add_argument(
        "--rules",
        default="expand-gcs",
        help="semicolon list of bench expansion names for --latency",
    )
    args = parser.parse_args(argv)
    if args.table is not None:
        files = sorted(args.table.glob("*.json"))
        print(markdown_table([json.loads(f.read_text()) for f in files]), end="")
        return 0
    if args.data is None or not args.datasets:
        parser.error("--data and --datasets are required (or --table DIR)")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.latency:
        for name in args.datasets:
            timing = latency(name, args.data, args.latency, rules=args.rules.split(";"))
            (args.out / f"latency-{name}.json").write_text(json.dumps(timing, indent=1))
        return 0
    for name in args.datasets:
        result = run(
            name,
            args.data,
            seeds=args.seeds,
            hops=args.hops,
            budget=args.budget,
            peer=not args.no_peer,
            peer_grid=json.loads(args.peer_grid),
            limit=args.limit,
            chroma=args.chroma,
            expand_grid=json.loads(args.expand_grid),
        )
        (args.out / f"{name}.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
