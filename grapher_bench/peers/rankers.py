"""Rankers that reach beyond the candidate list, run by ``grapher-bench bench`` beside the others.

* ``expand-gcs`` -- GraphER with expansion (:mod:`grapher_core.expand`): the candidates plus
  the link neighbours of the top ones fetched from the corpus, ranked by GCS;
* ``graph-retriever`` -- the DataStax ``langchain-graph-retriever`` (Eager strategy, its
  defaults, ``select_k`` = the deepest K evaluated) on the same vectors and the same edges;
  ``graph-retriever-tuned`` -- the same with the Eager settings chosen on a training split
  (:data:`GRAPH_RETRIEVER_TUNED`, see docs/expansion.md);
* ``prev-next`` -- LlamaIndex ``PrevNextNodePostprocessor`` (its defaults) on the retriever's
  top 5 chunks (chunk sets only);
* ``llm-rerank`` -- LlamaIndex-style ``LLMRerank`` over the retriever's top 20 through an
  OpenAI-compatible endpoint, and ``llm-rerank+<row>`` / ``llm-scores+<row>`` -- GraphER after it
  (:mod:`grapher_bench.peers.llm_rerank`).

All follow the task type's link graph (:data:`LINK_GRAPH`); the peers need the optional
packages (LangChain + ``langchain-graph-retriever``; ``llama-index-core``), imported lazily.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grapher_bench.enrichment import FULL_GRAPH, LINK_GRAPH
from grapher_bench.peers.llm_rerank import is_llm_ranker, llm_graph, llm_peer_rankings
from grapher_core.candidates import Candidate
from grapher_core.errors import ConfigError, InputFileNotFoundError

__all__ = [
    "ALL_LINKS",
    "BEST_GRAPH",
    "GRAPH_RETRIEVER_TUNED",
    "NEW_RULE",
    "PEER_RANKERS",
    "PeerRanking",
    "expansion_reranker",
    "is_peer",
    "peer_graph",
    "peer_rankings",
    "split_name",
]

PEER_RANKERS = frozenset(
    {
        "expand-gcs",
        "expand-gcs-v1",
        "expand-gat",
        "graph-retriever",
        "graph-retriever-tuned",
        "prev-next",
        "graph2sql",
    }
)
BEST_GRAPH: dict[str, str] = {"tables": "fk", "passages": "mentions", "chunks": "adjacent+mentions"}
"""The task type's best candidate-only GCS graph on the shared sets (docs/benchmarks.md, summed
over the sets of the type): what the default expansion follows and ranks with."""

ALL_LINKS: dict[str, str] = dict(FULL_GRAPH)
"""Every link kind a task type has (``links=all``): passages add capped shared entities."""

GRAPH_RETRIEVER_TUNED: dict[str, Any] = {"start_k": 8, "max_depth": 1}
"""Best PR@10 of a 6-setting Eager grid on spider_train (300 queries, tables) and on the first
150 hotpotqa questions (passages; applied to the other passage sets); see docs/expansion.md."""

EXPANSION_OPTIONS = ("prune", "k", "n", "seed", "links", "ranker", "keep")


def split_name(name: str) -> tuple[str, dict[str, str]]:
    """``"ego-gcs[k=2,n=10]"`` -> ``("ego-gcs", {"k": "2", "n": "10"})``."""
    base, _, rest = name.partition("[")
    if not rest:
        return name, {}
    if not rest.endswith("]"):
        raise ConfigError(f"malformed ranker name {name!r}: expected base[key=value,...]")
    options: dict[str, str] = {}
    for part in rest[:-1].split(","):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in EXPANSION_OPTIONS:
            raise ConfigError(f"bad option {part!r} in {name!r}; options: {EXPANSION_OPTIONS}")
        options[key.strip()] = value.strip()
    return base, options


def is_peer(name: str) -> bool:
    """Rankers that reach beyond the candidates (expansion, ego-graphs, the peers) or beyond
    the graph (the LLM reranker and its stacks)."""
    base = name.split("[", 1)[0]
    return base in PEER_RANKERS or base == "ego-gcs" or is_llm_ranker(name)


@dataclass
class PeerRanking:
    """One query's output: ids best first and scores (descending placeholders for peers that
    return an order only)."""

    ids: list[str]
    scores: list[float]
    original_ranks: list[int]


def peer_graph(name: str, task_type: str) -> str:
    """The graph a peer ranker uses (its label stays the bare name, as results.json wants)."""
    if not is_peer(name):
        raise ConfigError(f"not a peer ranker: {name!r}")
    if is_llm_ranker(name):
        return llm_graph(name, task_type)
    if name == "prev-next" and task_type != "chunks":
        raise ConfigError("prev-next runs on chunk sets only")
    if name == "graph2sql" and task_type != "tables":
        raise ConfigError("graph2sql runs on table sets only")
    base, options = split_name(name)
    if base in ("expand-gcs", "expand-gat", "ego-gcs"):
        return _graph_of(options.get("links", "best"), task_type)
    return LINK_GRAPH[task_type]


def _graph_of(links: str, task_type: str) -> str:
    graphs = {"v1": LINK_GRAPH, "best": BEST_GRAPH, "all": ALL_LINKS}
    if links not in graphs:
        raise ConfigError(f"links must be v1, best or all, got {links!r}")
    return graphs[links][task_type]


NEW_RULE: dict[str, str] = {"seed": "calibrated", "prune": "none", "keep": "1"}
"""The default expansion rule's settings (docs/expansion.md, "The rule")."""


def _pruner_checkpoint(dataset_name: str) -> Path | None:
    """``$GRAPHER_PRUNER`` (a folder from ``grapher_bench.expansion.pruner_training``): the
    pruner that
    left this dataset out when there is one, else ``all``; unset: the shipped checkpoint."""
    folder = os.environ.get("GRAPHER_PRUNER")
    if not folder:
        return None
    for stem in (Path(folder) / dataset_name, Path(folder) / "all"):
        if stem.with_suffix(".json").is_file():
            return stem
    raise InputFileNotFoundError(
        f"GRAPHER_PRUNER={folder} has neither {dataset_name}.json nor all.json"
    )


_EGO_CACHE: dict[tuple[int, str, int], Any] = {}


def _ego_index(
    corpus: Sequence[Any], vectors: Any, graph: str, hops: int, metadata: Sequence[dict[str, Any]]
) -> Any:
    """One ego-graph index per (corpus, graph, K), edges embedded through the bench cache."""
    from grapher_bench.cache import CachedEmbedder, EmbeddingCache
    from grapher_bench.enrichment import proximities_for
    from grapher_core.embeddings import default_embedder
    from grapher_core.expand import EgoGraphIndex

    key = (id(corpus), graph, hops)
    if key not in _EGO_CACHE:
        embedder = CachedEmbedder(default_embedder(), EmbeddingCache(), progress=False)
        _EGO_CACHE.clear()
        _EGO_CACHE[key] = EgoGraphIndex.build(
            corpus,
            vectors,
            proximities_for(graph),
            hops=hops,
            metadata=metadata,
            edge_embedder=embedder,
        )
    return _EGO_CACHE[key]


def expansion_reranker(
    name: str,
    task_type: str,
    source: Any,
    *,
    metadata: Sequence[dict[str, Any]] = (),
    corpus: Sequence[Any] = (),
    corpus_vectors: np.ndarray | None = None,
    dataset_name: str = "",
) -> Any:
    """The expansion configuration a bench ranker name stands for.

    ``expand-gcs-v1``: the first rule (the task's main link kind, calibrated seeds);
    ``expand-gcs`` / ``expand-gat``: the task type's best graph (:data:`BEST_GRAPH`) with
    :data:`NEW_RULE`; options in brackets override: ``seed=calibrated|floor``,
    ``prune=none|cosine|learned``, ``links=v1|best|all`` (``all``: :data:`ALL_LINKS`, capped
    entities followed too), ``ranker=gcs|gat``, ``keep=1`` (candidates keep their
    candidate-only ranking, the default; ``keep=0``: one ranking of the enlarged pool);
    ``ego-gcs[k=K,n=N]``: the top-N K-hop ego-graphs by query cosine join the candidates.
    """
    from grapher_bench.enrichment import proximities_for
    from grapher_core.expand import CosinePruner, ExpandingReranker, Expansion
    from grapher_core.rerank import GraphReranker

    base, options = split_name(name)
    settings = (
        {"seed": "calibrated", "prune": "none", "links": "v1", "ranker": "gcs"}
        if base == "expand-gcs-v1"
        else {**NEW_RULE, "links": "best", "ranker": "gat" if base == "expand-gat" else "gcs"}
    )
    settings.update(options)
    graph = _graph_of(settings["links"], task_type)
    ranker = GraphReranker(proximities_for(graph), settings["ranker"], explain=0)
    if base == "ego-gcs":
        index = _ego_index(corpus, corpus_vectors, graph, int(settings.get("k", "1")), metadata)
        return index.reranker(
            ranker, source, n=int(settings.get("n", "10")), seed_rule=settings["seed"]
        )
    pruner: Any = None
    if settings["prune"] == "cosine":
        pruner = CosinePruner()
    elif settings["prune"] == "learned":
        from grapher_core.learned.pruner import LearnedPruner

        pruner = LearnedPruner(_pruner_checkpoint(dataset_name))
    elif settings["prune"] != "none":
        raise ConfigError(f"prune must be none, cosine or learned, got {settings['prune']!r}")
    return ExpandingReranker(
        ranker,
        source,
        # No wall-clock budget in the bench: tables must not depend on the machine's load.
        Expansion(
            follow_entities=settings["links"] == "all",
            seed_rule=settings["seed"],
            max_seconds=None,
        ),
        pruner=pruner,
        keep_candidate_scores=settings.get("keep", "0") == "1",
    )


def _vectors(dataset: Any) -> tuple[np.ndarray, np.ndarray]:
    """Corpus and query vectors from the bench's embedding cache (filled by retrieval)."""
    from grapher_bench.cache import CachedEmbedder, EmbeddingCache
    from grapher_core.embeddings import default_embedder

    embedder = CachedEmbedder(default_embedder(), EmbeddingCache())
    corpus = embedder.embed_documents([o.text for o in dataset.corpus], desc="corpus")
    queries = embedder.embed_documents([q.text for q in dataset.queries], desc="queries")
    return np.asarray(corpus), np.asarray(queries)


def _ordered(ids: Sequence[str], known: dict[str, int]) -> PeerRanking:
    n = len(ids)
    return PeerRanking(
        list(ids), [float(n - i) for i in range(n)], [known.get(i, 10**6) for i in ids]
    )


def peer_rankings(
    name: str,
    dataset: Any,
    metadata: Sequence[dict[str, Any]],
    candidates: Sequence[Sequence[Candidate]],
    *,
    max_k: int = 10,
    query_vectors: Sequence[Any] | None = None,
    notes: list[str] | None = None,
    progress: bool = False,
) -> tuple[list[PeerRanking], list[float]]:
    """Run one peer ranker over every query; returns the rankings and per-query milliseconds.

    ``query_vectors`` (the retrieval's, ``None`` entries for BM25) reach the graph ranker of an
    LLM stack; ``notes`` receives the LLM reranker's counts of the run."""
    import time

    graph = peer_graph(name, dataset.task_type)
    if is_llm_ranker(name):
        ranked, spent = llm_peer_rankings(
            name, dataset, candidates, query_vectors=query_vectors, notes=notes, progress=progress
        )
        return [PeerRanking(ids, scores, ranks) for ids, scores, ranks in ranked], spent
    out: list[PeerRanking] = []
    timings: list[float] = []
    if name == "graph2sql":  # lexical PPR: no vectors
        from grapher_bench.peers.graph2sql import graph2sql_order

        for query, cands in zip(dataset.queries, candidates, strict=True):
            tick = time.perf_counter()
            ids = graph2sql_order(query.text, cands)
            timings.append((time.perf_counter() - tick) * 1000.0)
            out.append(_ordered(ids, {c.id: i + 1 for i, c in enumerate(cands)}))
        return out, timings
    corpus_vectors, vectors = _vectors(dataset)  # the bench cache's, even under BM25
    base, _options = split_name(name)
    if base in ("expand-gcs", "expand-gcs-v1", "expand-gat", "ego-gcs"):
        from grapher_core.expand import InMemorySource

        source = InMemorySource(dataset.corpus, embeddings=corpus_vectors, metadata=metadata)
        reranker = expansion_reranker(
            name,
            dataset.task_type,
            source,
            metadata=metadata,
            corpus=dataset.corpus,
            corpus_vectors=corpus_vectors,
            dataset_name=dataset.name,
        )
        for query, cands, vector in zip(dataset.queries, candidates, vectors, strict=True):
            tick = time.perf_counter()
            ranked = reranker.rerank(cands, query=query.text, query_embedding=vector)
            timings.append((time.perf_counter() - tick) * 1000.0)
            out.append(
                PeerRanking(
                    [r.id for r in ranked],
                    [r.score for r in ranked],
                    [r.original_rank for r in ranked],
                )
            )
        return out, timings
    if name == "prev-next":
        from grapher_bench.peers.llamaindex import PrevNextPeer

        prev_next = PrevNextPeer(dataset.corpus, metadata)
        for cands in candidates:
            tick = time.perf_counter()
            ids = prev_next.rerank([c.id for c in cands], [float(c.score or 0.0) for c in cands])
            timings.append((time.perf_counter() - tick) * 1000.0)
            out.append(_ordered(ids, {c.id: i + 1 for i, c in enumerate(cands)}))
        return out, timings
    from grapher_bench.peers.langchain import GraphRetrieverPeer, adjacent_ids

    edges = {
        "fk": [("foreign_keys", "$id")],
        "mentions": [("mentions", "title")],
        "adjacent": [("adjacent", "$id")],
    }[graph]
    rows = [dict(m) for m in metadata]
    if graph == "adjacent":
        for row, ids in zip(rows, adjacent_ids(dataset.corpus, rows), strict=True):
            row["adjacent"] = ids
    settings = GRAPH_RETRIEVER_TUNED if name == "graph-retriever-tuned" else {}
    peer = GraphRetrieverPeer(
        dataset.corpus, rows, corpus_vectors, edges, select_k=max_k, **settings
    )
    for query, cands, vector in zip(dataset.queries, candidates, vectors, strict=True):
        tick = time.perf_counter()
        ids = peer.retrieve(query.text, vector)
        timings.append((time.perf_counter() - tick) * 1000.0)
        out.append(_ordered(ids, {c.id: i + 1 for i, c in enumerate(cands)}))
    return out, timings
