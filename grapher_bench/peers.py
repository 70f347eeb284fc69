"""Rankers that reach beyond the candidate list, run by ``grapher-bench bench`` beside the others.

* ``expand-gcs`` -- GraphER with expansion (:mod:`grapher_core.expand`): the candidates plus
  the link neighbours of the top ones fetched from the corpus, ranked by GCS;
* ``graph-retriever`` -- the DataStax ``langchain-graph-retriever`` (Eager strategy, its
  defaults, ``select_k`` = the deepest K evaluated) on the same vectors and the same edges;
  ``graph-retriever-tuned`` -- the same with the Eager settings chosen on a training split
  (:data:`GRAPH_RETRIEVER_TUNED`, see docs/expansion.md);
* ``prev-next`` -- LlamaIndex ``PrevNextNodePostprocessor`` (its defaults) on the retriever's
  top 5 chunks (chunk sets only).

All follow the task type's link graph (:data:`LINK_GRAPH`); the peers need the optional
packages (LangChain + ``langchain-graph-retriever``; ``llama-index-core``), imported lazily.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate

__all__ = [
    "GRAPH_RETRIEVER_TUNED",
    "LINK_GRAPH",
    "PEER_RANKERS",
    "PeerRanking",
    "peer_graph",
    "peer_rankings",
]

PEER_RANKERS = frozenset({"expand-gcs", "graph-retriever", "graph-retriever-tuned", "prev-next"})
LINK_GRAPH: dict[str, str] = {"tables": "fk", "passages": "mentions", "chunks": "adjacent"}
"""The graph whose links expansion and the peers follow, per task type."""

GRAPH_RETRIEVER_TUNED: dict[str, Any] = {"start_k": 8, "max_depth": 1}
"""Best PR@10 of a 6-setting Eager grid on spider_train (300 queries, tables) and on the first
150 hotpotqa questions (passages; applied to the other passage sets); see docs/expansion.md."""


@dataclass
class PeerRanking:
    """One query's output: ids best first and scores (descending placeholders for peers that
    return an order only)."""

    ids: list[str]
    scores: list[float]
    original_ranks: list[int]


def peer_graph(name: str, task_type: str) -> str:
    """The graph a peer ranker uses (its label stays the bare name, as results.json wants)."""
    if name not in PEER_RANKERS:
        raise ValueError(f"not a peer ranker: {name!r}")
    if name == "prev-next" and task_type != "chunks":
        raise ValueError("prev-next runs on chunk sets only")
    return LINK_GRAPH[task_type]


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
    return PeerRanking(list(ids), [float(n - i) for i in range(n)],
                       [known.get(i, 10**6) for i in ids])


def peer_rankings(name: str, dataset: Any, metadata: Sequence[dict[str, Any]],
                  candidates: Sequence[Sequence[Candidate]], *, max_k: int = 10
                  ) -> tuple[list[PeerRanking], list[float]]:
    """Run one peer ranker over every query; returns the rankings and per-query milliseconds."""
    import time

    from grapher_bench.enrichment import proximities_for

    graph = peer_graph(name, dataset.task_type)
    corpus_vectors, query_vectors = _vectors(dataset)
    out: list[PeerRanking] = []
    timings: list[float] = []
    if name == "expand-gcs":
        from grapher_core.expand import ExpandingReranker, InMemorySource
        from grapher_core.rerank import GraphReranker

        source = InMemorySource(dataset.corpus, embeddings=corpus_vectors, metadata=metadata)
        reranker = ExpandingReranker(GraphReranker(proximities_for(graph), "gcs", explain=0),
                                     source)
        for query, cands, vector in zip(dataset.queries, candidates, query_vectors, strict=True):
            tick = time.perf_counter()
            ranked = reranker.rerank(cands, query=query.text, query_embedding=vector)
            timings.append((time.perf_counter() - tick) * 1000.0)
            out.append(PeerRanking([r.id for r in ranked], [r.score for r in ranked],
                                   [r.original_rank for r in ranked]))
        return out, timings
    if name == "prev-next":
        from grapher_bench.peers_llamaindex import PrevNextPeer

        prev_next = PrevNextPeer(dataset.corpus, metadata)
        for cands in candidates:
            tick = time.perf_counter()
            ids = prev_next.rerank([c.id for c in cands], [float(c.score or 0.0) for c in cands])
            timings.append((time.perf_counter() - tick) * 1000.0)
            out.append(_ordered(ids, {c.id: i + 1 for i, c in enumerate(cands)}))
        return out, timings
    from grapher_bench.peers_langchain import GraphRetrieverPeer, adjacent_ids

    edges = {"fk": [("foreign_keys", "$id")], "mentions": [("mentions", "title")],
             "adjacent": [("adjacent", "$id")]}[graph]
    rows = [dict(m) for m in metadata]
    if graph == "adjacent":
        for row, ids in zip(rows, adjacent_ids(dataset.corpus, rows), strict=True):
            row["adjacent"] = ids
    settings = GRAPH_RETRIEVER_TUNED if name == "graph-retriever-tuned" else {}
    peer = GraphRetrieverPeer(dataset.corpus, rows, corpus_vectors, edges, select_k=max_k,
                              **settings)
    for query, cands, vector in zip(dataset.queries, candidates, query_vectors, strict=True):
        tick = time.perf_counter()
        ids = peer.retrieve(query.text, vector)
        timings.append((time.perf_counter() - tick) * 1000.0)
        out.append(_ordered(ids, {c.id: i + 1 for i, c in enumerate(cands)}))
    return out, timings
