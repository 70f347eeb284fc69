"""Query-aware GNN examples from benchmark folders (``grapher-bench qagnn-train/qagnn-eval``).

Per query, as a user's pipeline would see it: the dense retriever's top-``top_n`` (MiniLM,
embeddings from the shared disk cache), seeds as ``GraphReranker`` makes them, the candidate
graph from chunk adjacency (``doc_id``/``chunk_index``) plus the paper's semantic edges, every
candidate's ego-subgraph. Complexity buckets are kept per query for the breakdown tables:
number of gold chunks (2 vs >= 3), HotpotQA ``level``, 2Wiki ``type``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.errors import InputError
from grapher_core.learned.qa_gnn.checkpoint import QAGNNConfig
from grapher_core.learned.qa_gnn.ranker import prepare_inputs
from grapher_core.learned.qa_gnn.train import QAExample

__all__ = ["QASet", "build_qa_set", "merge_sets", "with_alpha"]


@dataclass
class QASet:
    """One dataset's examples, the candidate vectors they point into, and per-query extras."""

    name: str
    examples: list[QAExample]
    objects: np.ndarray  # (m, d) float32
    buckets: list[dict[str, str]] = field(default_factory=list)
    graphs: list[Any] = field(default_factory=list)  # CandidateGraph per query (GCS / GAT rows)
    candidates: list[list[Any]] = field(default_factory=list)


def _buckets(query: Any) -> dict[str, str]:
    n = len(query.gold)
    out = {"gold": "1" if n == 1 else "2" if n == 2 else ">=3"}
    for key in ("level", "type"):
        value = query.extra.get(key)
        if value:
            out[key] = str(value)
    return out


def build_qa_set(
    folder: str | Path,
    config: QAGNNConfig,
    *,
    top_n: int = 50,
    limit: int | None = None,
    embedder: Any | None = None,
    progress: bool = False,
) -> QASet:
    """Examples for every query of a benchmark folder (see the module docstring)."""
    from grapher_bench.data import load_dataset
    from grapher_bench.runner import prepare_candidates
    from grapher_core.edges.graph import build_graph
    from grapher_core.edges.keys import AdjacentChunks
    from grapher_core.ranking.seeds import make_seeds

    dataset = load_dataset(folder, limit=limit)
    metadata = [dict(o.metadata) for o in dataset.corpus]
    candidates, query_vectors = prepare_candidates(
        dataset, "dense", metadata, embedder, top_n, progress
    )
    rows: dict[str, int] = {}
    vectors: list[np.ndarray] = []
    examples: list[QAExample] = []
    graphs: list[Any] = []
    proximity = [AdjacentChunks()]
    for query, cands, vector in zip(dataset.queries, candidates, query_vectors, strict=True):
        if vector is None:
            raise InputError(f"query {query.id!r} has no vector: embed the queries first")
        for c in cands:
            if c.id not in rows:
                rows[c.id] = len(vectors)
                vectors.append(np.asarray(c.embedding, dtype=np.float32))
        seeds = make_seeds(cands)
        inputs = prepare_inputs(
            build_graph(cands, proximity),
            seeds,
            cands,
            config,
            np.asarray(vector, dtype=np.float32),
            np.stack([np.asarray(c.embedding) for c in cands]),
        )
        gold = set(query.gold)
        labels = np.array([c.id in gold for c in cands], dtype=np.float32)
        examples.append(
            QAExample(
                query.id,
                dataset.name,
                len(gold),
                labels,
                np.asarray(vector, dtype=np.float32),
                np.array([rows[c.id] for c in cands], dtype=np.int64),
                inputs.edges,
                inputs.ego,
                inputs.seeds,
                inputs.adjusted,
                inputs.support,
            )
        )
        graphs.append(inputs.graph)
    return QASet(
        dataset.name,
        examples,
        np.stack(vectors),
        [_buckets(q) for q in dataset.queries],
        graphs,
        candidates,
    )


def with_alpha(examples: Sequence[QAExample], alpha: float) -> list[QAExample]:
    """The examples with Alg. 9's adjusted score recomputed for ``alpha``."""
    return [replace(e, adjusted=alpha * e.seeds + (1.0 - alpha) * e.support) for e in examples]


def merge_sets(sets: Sequence[QASet], name: str) -> QASet:
    """One set from several (object rows shifted), for training on more than one dataset."""
    offset = 0
    examples: list[QAExample] = []
    for part in sets:
        examples += [replace(e, object_rows=e.object_rows + offset) for e in part.examples]
        offset += part.objects.shape[0]
    return QASet(
        name,
        examples,
        np.concatenate([s.objects for s in sets]),
        [b for s in sets for b in s.buckets],
        [g for s in sets for g in s.graphs],
        [c for s in sets for c in s.candidates],
    )


def subset(data: QASet, indices: Sequence[int]) -> QASet:
    """The queries at ``indices`` (objects shared, not copied)."""
    pick = list(indices)
    return QASet(
        data.name,
        [data.examples[i] for i in pick],
        data.objects,
        [data.buckets[i] for i in pick] if data.buckets else [],
        [data.graphs[i] for i in pick] if data.graphs else [],
        [data.candidates[i] for i in pick] if data.candidates else [],
    )
