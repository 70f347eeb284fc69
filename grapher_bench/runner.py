"""Run base retrievers and rankers over a benchmark and collect per-query and aggregate metrics.

Every rerank goes through :class:`grapher_core.GraphReranker`, so the bench measures exactly
what users run (graph building included in ``rerank_ms_median``).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import grapher_bench.heuristics  # noqa: F401  (registers "db-first")
from grapher_bench.cache import CachedEmbedder, EmbeddingCache, cache_root
from grapher_bench.data import Dataset
from grapher_bench.enrichment import (
    add_declared_foreign_keys,
    add_entities,
    add_mentions,
    degree_stats,
    graphs_for,
    proximities_for,
)
from grapher_bench.metrics import aggregate, evaluate_query
from grapher_bench.peers.llm_rerank import stack_prefix
from grapher_bench.peers.rankers import is_peer, peer_graph, peer_rankings
from grapher_bench.retrievers import RETRIEVERS, BaseRetriever
from grapher_core.candidates import Candidate
from grapher_core.edges.graph import build_graph
from grapher_core.errors import InputError
from grapher_core.rerank import GraphReranker
from grapher_core.utils.progress import progress_bar

__all__ = [
    "DEFAULT_RETRIEVER",
    "GRAPH_FREE_RANKERS",
    "DatasetRun",
    "RankerResult",
    "RankerSpec",
    "expand_rankers",
    "link_graph_candidates",
    "load_run",
    "prepare_candidates",
    "read_json",
    "run_dataset",
]

# Default retriever per task type, chosen on the training split we have (spider_train, see
# docs/benchmarks.md): with the identifier-splitting BM25, hybrid beats dense on tables (both
# as baseline and under GCS); passages and chunks have no training split and keep the paper's
# hybrid.
DEFAULT_RETRIEVER: dict[str, str] = {"tables": "hybrid", "passages": "hybrid", "chunks": "hybrid"}
GRAPH_FREE_RANKERS = frozenset({"baseline", "db-first"})


@dataclass(frozen=True)
class RankerSpec:
    """One row of the results: a ranker, the graph it sees, and its alpha (None = default)."""

    label: str
    ranker: str
    graph: str
    alpha: float | None = None


@dataclass
class RankerResult:
    metrics: dict[str, float]
    per_query: dict[str, dict[str, Any]]


@dataclass
class DatasetRun:
    """Everything the report needs about one (dataset, retriever) run."""

    dataset: str
    task_type: str
    retriever: str
    n_queries: int
    n_multi: int
    n_candidates: int
    results: dict[str, RankerResult] = field(default_factory=dict)
    graph_stats: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The documented results.json shape (plus extra keys)."""
        return {
            "dataset": self.dataset,
            "task_type": self.task_type,
            "n_queries": self.n_queries,
            "n_multi": self.n_multi,
            "retriever": self.retriever,
            "n_candidates": self.n_candidates,
            "results": {label: r.metrics for label, r in self.results.items()},
            "graph_degrees": self.graph_stats,
            "notes": self.notes,
        }


def expand_rankers(
    rankers: Sequence[str],
    task_type: str,
    graphs: Sequence[str] | None = None,
    alphas: dict[str, float] | None = None,
) -> list[RankerSpec]:
    """Ranker names x graph variants -> labelled specs (``gcs`` or ``gcs[mentions]``)."""
    variants = tuple(graphs) if graphs else graphs_for(task_type)
    for variant in variants:
        proximities_for(variant)  # fail early on an unknown graph name
    alphas = alphas or {}
    specs: list[RankerSpec] = []
    for name in rankers:
        if stack_prefix(name) is not None and "[" not in name:  # one stack per graph variant
            for variant in variants:
                label = name if len(variants) == 1 else f"{name}[{variant}]"
                stack = f"{name}[{variant}]"
                peer_graph(stack, task_type)  # an unknown graph ranker fails here
                specs.append(RankerSpec(label, stack, variant, alphas.get(name)))
            continue
        if is_peer(name):  # reach beyond the candidates along the task's link graph
            if name == "prev-next" and task_type != "chunks":
                continue
            specs.append(RankerSpec(name, name, peer_graph(name, task_type), alphas.get(name)))
            continue
        if name in GRAPH_FREE_RANKERS:
            specs.append(RankerSpec(name, name, "none", alphas.get(name)))
            continue
        for variant in variants:
            label = name if len(variants) == 1 else f"{name}[{variant}]"
            specs.append(RankerSpec(label, name, variant, alphas.get(name)))
    return specs


def _enriched_metadata(
    dataset: Dataset, specs: Sequence[RankerSpec], notes: list[str], progress: bool
) -> list[dict[str, Any]]:
    metadata = [dict(o.metadata) for o in dataset.corpus]
    parts = {part for spec in specs for part in spec.graph.split("+")}
    if "fk-declared" in parts:
        metadata = add_declared_foreign_keys(metadata)
    if "mentions" in parts:
        metadata = add_mentions(dataset.corpus, metadata)
        linked = sum(1 for m in metadata if m["mentions"])
        notes.append(f"title mentions: {linked}/{len(metadata)} objects mention another title")
    if any(p.startswith("entities") for p in parts):
        cache = cache_root() / "entities-spacy.sqlite"
        metadata, failed = add_entities(dataset.corpus, metadata, cache, progress=progress)
        if failed:
            notes.append(f"entity extraction failed for {failed} objects (no entity edges)")
    return metadata


def prepare_candidates(
    dataset: Dataset,
    retriever: str,
    metadata: Sequence[dict[str, Any]],
    embedder: Any | None = None,
    top_n: int = 200,
    progress: bool = True,
) -> tuple[list[list[Candidate]], list[np.ndarray | None]]:
    """Retrieve the top-``top_n`` candidates of every query (embeddings cached on disk)."""
    if retriever not in RETRIEVERS:
        raise ValueError(f"retriever must be one of {RETRIEVERS}, got {retriever!r}")
    corpus_vectors = None
    query_vectors: list[np.ndarray | None] = [None] * len(dataset.queries)
    if retriever != "bm25":
        if embedder is None:
            from grapher_core.embeddings import default_embedder

            embedder = CachedEmbedder(default_embedder(), EmbeddingCache(), progress=progress)
        corpus_vectors = embedder.embed_documents(
            [o.text for o in dataset.corpus], desc=f"{dataset.name} corpus"
        )
        queries = embedder.embed_documents(
            [q.text for q in dataset.queries], desc=f"{dataset.name} queries"
        )
        query_vectors = list(queries)
    base = BaseRetriever(dataset.corpus, retriever, corpus_vectors, top_n)
    out = []
    for query, vector in zip(dataset.queries, query_vectors, strict=True):
        out.append(base.candidates(base.retrieve(query.text, vector), metadata))
    return out, query_vectors


def link_graph_candidates(
    dataset: Dataset, retriever: str, top_n: int = 200, progress: bool = True
) -> tuple[str, list[list[Candidate]], list[np.ndarray | None]]:
    """The task type's standard graph (:data:`~grapher_bench.enrichment.LINK_GRAPH`: foreign
    keys, title mentions, adjacent chunks), with mentions added when it needs them, and every
    query's candidates: what the seed and default-ranking studies rank."""
    from grapher_bench.enrichment import LINK_GRAPH

    graph = LINK_GRAPH[dataset.task_type]
    metadata = [dict(o.metadata) for o in dataset.corpus]
    if graph == "mentions":
        metadata = add_mentions(dataset.corpus, metadata)
    candidates, vectors = prepare_candidates(
        dataset, retriever, metadata, top_n=top_n, progress=progress
    )
    return graph, candidates, vectors


def run_dataset(
    dataset: Dataset,
    rankers: Sequence[str],
    *,
    retriever: str | None = None,
    graphs: Sequence[str] | None = None,
    ks: Sequence[int] = (5, 10),
    alphas: dict[str, float] | None = None,
    embedder: Any | None = None,
    top_n: int = 200,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    specs: Sequence[RankerSpec] | None = None,
) -> DatasetRun:
    """Retrieve, rerank with every ranker spec, and evaluate one dataset.

    ``specs`` (explicit labelled rankers, as ``grapher-bench tune`` uses) replaces the
    ``rankers`` x ``graphs`` expansion when given.
    """
    retriever = retriever or DEFAULT_RETRIEVER[dataset.task_type]
    if specs is None:
        specs = expand_rankers(rankers, dataset.task_type, graphs, alphas)
    notes: list[str] = []
    started = time.perf_counter()
    metadata = _enriched_metadata(dataset, specs, notes, progress)
    candidates, query_vectors = prepare_candidates(
        dataset, retriever, metadata, embedder, top_n, progress
    )
    if log:
        log(
            f"{dataset.name}/{retriever}: enriched + retrieved in "
            f"{time.perf_counter() - started:.1f}s"
        )
    run = DatasetRun(
        dataset.name,
        dataset.task_type,
        retriever,
        len(dataset.queries),
        dataset.n_multi,
        len(candidates[0]) if candidates else 0,
        notes=notes,
    )
    run.graph_stats.update(_graph_stats(specs, candidates))
    multi = [q.multi for q in dataset.queries]
    baseline_hits: list[float] | None = None
    for spec in specs:
        if is_peer(spec.ranker):
            ranked = _peer_pass(
                spec, dataset, metadata, candidates, query_vectors, ks, notes, progress
            )
        else:
            ranked = _rerank_pass(spec, dataset, candidates, query_vectors, ks, progress)
        metrics = _spec_metrics(spec, ranked, multi, ks)
        hits = [row["PR@10"] for row in ranked.rows]
        if baseline_hits is None and spec.ranker == "baseline":
            baseline_hits = hits
        if baseline_hits is not None:
            metrics.update(_fixes_and_breaks(baseline_hits, hits))
        run.results[spec.label] = RankerResult(metrics, ranked.per_query)
        if log:
            log(
                f"  {spec.label:28s} PR@10>1 {metrics.get('PR@10>1', float('nan')):.3f} "
                f"PR@10 {metrics['PR@10']:.3f} ({metrics['rerank_ms_median']:.2f} ms)"
            )
    return run


@dataclass
class _RankedPass:
    """One ranker spec over every query: per-query metric rows and report entries, the
    rerank times, the share of each top 5 that came from below rank 20, and the reranker
    (``None`` for a peer)."""

    rows: list[dict[str, float]] = field(default_factory=list)
    per_query: dict[str, dict[str, Any]] = field(default_factory=dict)
    timings: list[float] = field(default_factory=list)
    from_below: list[float] = field(default_factory=list)
    reranker: GraphReranker | None = None

    def add(self, query: Any, ids: list[str], scores: Sequence[float], ks: Sequence[int]) -> None:
        """One query's ranking: its metrics row and what the report keeps of it."""
        row = evaluate_query(ids, scores, query.gold, ks)
        self.rows.append(row)
        self.per_query[query.id] = {
            "PR@5": row["PR@5"],
            "PR@10": row["PR@10"],
            "n_gold": len(query.gold),
            "top": ids[:20],
        }


def _graph_stats(
    specs: Sequence[RankerSpec], candidates: Sequence[list[Candidate]]
) -> dict[str, dict[str, float]]:
    """Degree statistics of each graph variant the specs use, over every query's candidates."""
    stats: dict[str, dict[str, float]] = {}
    for variant in dict.fromkeys(s.graph for s in specs if s.graph != "none"):
        proximities = proximities_for(variant)
        stats[variant] = degree_stats(build_graph(c, proximities).degrees() for c in candidates)
    return stats


def _peer_pass(
    spec: RankerSpec,
    dataset: Dataset,
    metadata: list[dict[str, Any]],
    candidates: list[list[Candidate]],
    query_vectors: Any,
    ks: Sequence[int],
    notes: list[str],
    progress: bool,
) -> _RankedPass:
    """A peer (expansion, ego-graphs, another library, the LLM reranker) on every query."""
    peers, timings = peer_rankings(
        spec.ranker,
        dataset,
        metadata,
        candidates,
        max_k=max(ks),
        query_vectors=query_vectors,
        notes=notes,
        progress=progress,
    )
    ranked = _RankedPass(timings=timings)
    for query, peer in zip(dataset.queries, peers, strict=True):
        ranked.add(query, peer.ids, peer.scores, ks)
        top5 = [float(r > 20) for r in peer.original_ranks[:5]]
        ranked.from_below.append(float(np.mean(top5)) if top5 else 0.0)
    return ranked


def _rerank_pass(
    spec: RankerSpec,
    dataset: Dataset,
    candidates: list[list[Candidate]],
    query_vectors: Any,
    ks: Sequence[int],
    progress: bool,
) -> _RankedPass:
    """GraphER's reranker over each query's candidates, each call timed."""
    reranker = GraphReranker(
        proximities_for(spec.graph), ranker=spec.ranker, alpha=spec.alpha, explain=0
    )
    ranked = _RankedPass(reranker=reranker)
    bar = progress_bar(
        len(dataset.queries),
        f"{dataset.name} {spec.label}",
        unit="q",
        enabled=progress,
        leave=False,
    )
    for query, cands, vector in zip(dataset.queries, candidates, query_vectors, strict=True):
        tick = time.perf_counter()
        reranked = reranker.rerank(cands, query=query.text, query_embedding=vector)
        ranked.timings.append((time.perf_counter() - tick) * 1000.0)
        ranked.add(query, [r.id for r in reranked], [r.score for r in reranked], ks)
        ranked.from_below.append(float(np.mean([r.original_rank > 20 for r in reranked[:5]])))
        bar.update(1)
    bar.close()
    return ranked


def _spec_metrics(
    spec: RankerSpec, ranked: _RankedPass, multi: list[bool], ks: Sequence[int]
) -> dict[str, float]:
    """The aggregate metrics, median rerank time, share from below rank 20 and the alpha
    used (the spec's, else the ranker's own)."""
    metrics = aggregate(ranked.rows, multi, ks)
    metrics["rerank_ms_median"] = float(statistics.median(ranked.timings))
    metrics["top5_from_below_20"] = float(np.mean(ranked.from_below))
    if spec.alpha is not None:
        metrics["alpha"] = spec.alpha
    elif ranked.reranker is not None and hasattr(ranked.reranker.ranker, "alpha"):
        metrics["alpha"] = float(ranked.reranker.ranker.alpha)
    return metrics


def _fixes_and_breaks(baseline_hits: list[float], hits: list[float]) -> dict[str, float]:
    """Queries PR@10 gains (fixes) and loses (breaks) against the baseline's."""
    pairs = list(zip(baseline_hits, hits, strict=True))
    return {
        "fixes@10": float(sum(1 for b, h in pairs if h > b)),
        "breaks@10": float(sum(1 for b, h in pairs if h < b)),
    }


def read_json(path: Path, what: str) -> Any:
    """The JSON document in ``path``, or an :class:`~grapher_core.errors.InputError` naming the
    file and ``what`` it should be (unreadable, not UTF-8, not JSON, nested too deep)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path} is not a {what}: not UTF-8 text ({error.reason})") from None
    except OSError as error:
        raise InputError(f"{path} cannot be read as a {what}: {error.strerror or error}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"{path} is not a {what}: not JSON (line {error.lineno}, column {error.colno}: "
            f"{error.msg})"
        ) from None
    except RecursionError:
        raise InputError(f"{path} is not a {what}: JSON nested too deep") from None


def load_run(path: Path) -> DatasetRun:
    """A :class:`DatasetRun` back from its results.json, with the per-query rows of the
    per_query.json beside it when there is one (the paired tests need them).

    Every field the tables read is checked here, so a damaged or foreign file is named with
    the field at fault instead of failing later inside the report."""
    what = "bench results.json"
    data = read_json(path, what)
    problem = _results_file_problem(data)
    if problem is not None:
        raise InputError(f"{path} is not a {what}: {problem}")
    per_query = _read_per_query(Path(path).with_name("per_query.json"))
    run = DatasetRun(
        data["dataset"],
        data.get("task_type", "passages"),
        data["retriever"],
        data["n_queries"],
        data["n_multi"],
        data["n_candidates"],
        graph_stats=data.get("graph_degrees", {}),
        notes=data.get("notes", []),
    )
    for label, metrics in data["results"].items():
        rows = per_query.get(label, {})
        run.results[label] = RankerResult(metrics, rows if isinstance(rows, dict) else {})
    return run


def _results_file_problem(data: Any) -> str | None:
    """The first thing a results.json holds that the tables cannot read, or ``None``."""
    if not isinstance(data, dict):
        return f"the top level is a JSON {_json_kind(data)}, expected an object"
    for check in (_names_problem, _counts_problem, _metrics_problem, _extras_problem):
        problem = check(data)
        if problem is not None:
            return problem
    return None


def _names_problem(data: dict[str, Any]) -> str | None:
    """``dataset`` and ``retriever`` non-empty strings, ``task_type`` (when given) a string."""
    for field_name in ("dataset", "retriever"):
        if not isinstance(data.get(field_name), str) or not data[field_name]:
            return f"field {field_name!r} must be a non-empty string, got {data.get(field_name)!r}"
    task_type = data.get("task_type", "passages")
    if not isinstance(task_type, str):
        return f"field 'task_type' must be a string, got {task_type!r}"
    return None


def _counts_problem(data: dict[str, Any]) -> str | None:
    """The query and candidate counts: integers >= 0 (a boolean is not one)."""
    for field_name in ("n_queries", "n_multi", "n_candidates"):
        value = data.get(field_name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"field {field_name!r} must be an integer >= 0, got {value!r}"
    return None


def _metrics_problem(data: dict[str, Any]) -> str | None:
    """``results``: ranker -> metric -> number (or null, a metric over no queries)."""
    results = data.get("results")
    if not isinstance(results, dict):
        return f"field 'results' must be an object of ranker -> metrics, got {results!r:.80}"
    for label, metrics in results.items():
        if not isinstance(metrics, dict):
            return f"results[{label!r}] must be an object of metric -> number"
        for name, value in metrics.items():
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float))
            ):
                return f"results[{label!r}][{name!r}] must be a number, got {value!r:.80}"
    return None


def _extras_problem(data: dict[str, Any]) -> str | None:
    """The optional ``graph_degrees`` (an object) and ``notes`` (a list)."""
    if not isinstance(data.get("graph_degrees", {}), dict) or not isinstance(
        data.get("notes", []), list
    ):
        return "field 'graph_degrees' must be an object and 'notes' a list"
    return None


def _read_per_query(beside: Path) -> dict[str, Any]:
    """The per-query rows beside a results.json (empty when there is no such file)."""
    per_query = read_json(beside, "bench per_query.json") if beside.is_file() else {}
    if not isinstance(per_query, dict):
        raise InputError(
            f"{beside} is not a bench per_query.json: the top level is a JSON "
            f"{_json_kind(per_query)}, expected an object"
        )
    return per_query


def _json_kind(value: Any) -> str:
    """What JSON calls ``value``'s type (for messages about a file's shape)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string", int: "number", float: "number"}.get(
        type(value), type(value).__name__
    )
