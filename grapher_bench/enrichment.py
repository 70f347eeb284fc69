"""Offline enrichment of benchmark corpora, and the proximities each task type uses.

* tables   -> foreign keys (``metadata.foreign_keys``, already in the data);
* passages -> shared named entities (spaCy via :mod:`grapher_core.enrich`, cached) and/or
  title mentions (this module: an Aho-Corasick pass over all titles, the hyperlink-like
  structural proximity of Wikipedia-style corpora);
* chunks   -> adjacency from ``doc_id`` / ``chunk_index`` (optionally plus mentions).

Enrichment never mutates the loaded corpus: it returns new metadata dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.candidates import CorpusObject
from grapher_core.edges.base import Proximity
from grapher_core.edges.entities import SharedEntities
from grapher_core.edges.keys import AdjacentChunks, ForeignKeys
from grapher_core.edges.semantic import SemanticKNN
from grapher_core.enrich.mentions import add_mentions as core_add_mentions
from grapher_core.enrich.mentions import find_mentions
from grapher_core.metadata import read_list

__all__ = [
    "FULL_GRAPH",
    "GRAPHS",
    "LINK_GRAPH",
    "add_declared_foreign_keys",
    "add_entities",
    "add_mentions",
    "degree_stats",
    "graphs_for",
    "mention_lists",
    "proximities_for",
]

# The task type -> graph tables of the tooling, all here.
GRAPHS: dict[str, tuple[str, ...]] = {
    "tables": ("fk",),
    "passages": ("entities", "mentions", "entities+mentions", "entities-capped"),
    "chunks": ("adjacent", "adjacent+mentions"),
}
"""Graph variants the bench runs per task type; the first is the paper's proximity (and tune's)."""

LINK_GRAPH: dict[str, str] = {"tables": "fk", "passages": "mentions", "chunks": "adjacent"}
"""The graph of explicit links per task type: what the peers, the first expansion rule
(``expand-gcs-v1``), the expansion study and the seed study follow."""

FULL_GRAPH: dict[str, str] = {
    "tables": "fk",
    "passages": "mentions+entities-capped",
    "chunks": "adjacent+mentions",
}
"""Every link kind a task type has: what ``links=all`` follows and ranks with (the default
expansion uses the best candidate-only graph, ``grapher_bench.peers.rankers.BEST_GRAPH``)."""


def mention_lists(
    corpus: Sequence[CorpusObject],
    *,
    skip_stopword_titles: bool = True,
    strip_parentheses: bool = True,
    max_share: float | None = 0.02,
) -> list[list[str]]:
    """For each object, the titles of other objects its text mentions: the core's
    :func:`grapher_core.enrich.mentions.find_mentions` (what users run), bench defaults."""
    return find_mentions(
        corpus,
        skip_stopword_titles=skip_stopword_titles,
        strip_parentheses=strip_parentheses,
        max_share=max_share,
    )


def add_mentions(
    corpus: Sequence[CorpusObject],
    metadata: Sequence[Mapping[str, Any]],
    *,
    field: str = "mentions",
    skip_stopword_titles: bool = True,
) -> list[dict[str, Any]]:
    """New metadata dicts with ``field`` = mentioned titles and ``title`` filled in (the
    core's :func:`grapher_core.enrich.mentions.add_mentions`)."""
    return core_add_mentions(
        corpus, metadata, field=field, skip_stopword_titles=skip_stopword_titles
    )


def add_entities(
    corpus: Sequence[CorpusObject],
    metadata: Sequence[Mapping[str, Any]],
    cache_path: str | Path,
    *,
    field: str = "entities",
    progress: bool = True,
) -> tuple[list[dict[str, Any]], int]:
    """New metadata dicts with ``field`` = spaCy named entities (from the enrichment module,
    cached in SQLite at ``cache_path``). Returns the dicts and the number of failed objects."""
    try:
        from grapher_core.enrich import EntityCache, SpacyEntityExtractor, extract_entities
    except ImportError as error:
        raise ImportError(f"entity enrichment needs grapher_core.enrich ({error})") from error
    extractor = SpacyEntityExtractor()
    with EntityCache(cache_path) as cache:
        texts = [o.text for o in corpus]
        entities = extract_entities(texts, extractor, cache=cache, progress=progress)
    out = []
    failed = 0
    for meta, found in zip(metadata, entities, strict=True):
        new = dict(meta)
        if found is None:
            failed += 1
            new[field] = []
        else:
            new[field] = list(found)
        out.append(new)
    return out, failed


def add_declared_foreign_keys(
    metadata: Sequence[Mapping[str, Any]], field: str = "declared_foreign_keys"
) -> list[dict[str, Any]]:
    """New metadata dicts whose ``field`` keeps only foreign keys declared in the schema.

    Beaver's ``dw`` database declares none; its edges come from ``dw_join_keys.json``
    (``metadata.fk_source``), which may be compiled from the benchmark's own SQL joins and so
    leak gold structure. This variant lets the bench report results without them.
    """
    out = []
    for meta in metadata:
        new = dict(meta)
        source = str(meta.get("fk_source") or "")
        new[field] = [] if "join_keys" in source else list(read_list(meta.get("foreign_keys")))
        out.append(new)
    return out


def graphs_for(task_type: str, dataset_name: str = "") -> tuple[str, ...]:
    """The graph variants the bench runs for a task type."""
    if task_type not in GRAPHS:
        raise ValueError(f"unknown task type {task_type!r}; choose one of {tuple(GRAPHS)}")
    return GRAPHS[task_type]


def proximities_for(graph: str, *, hub_cap: float = 0.05) -> list[Proximity]:
    """The core proximities behind a graph variant name (e.g. ``"entities+mentions"``)."""
    makers: dict[str, Any] = {  # frozen dataclasses: read-only attrs vs the Protocol
        "fk": ForeignKeys("foreign_keys"),
        "fk-declared": ForeignKeys("declared_foreign_keys"),
        "entities": SharedEntities("entities"),
        "entities-capped": SharedEntities("entities", max_share=hub_cap),
        "mentions": ForeignKeys("mentions", kind="structural", target_field="title"),
        "adjacent": AdjacentChunks(),
        # the query-aware GNN paper's semantic edges (Algorithm 1): directed top-5 with
        # cosine >= 0.6, weight = cosine; needs embeddings (dense or hybrid retrievers)
        "semantic": SemanticKNN.paper(),
        "none": _NoEdges(),
    }
    out: list[Proximity] = []
    for part in graph.split("+"):
        if part not in makers:
            raise ValueError(f"unknown graph {part!r}; choose from {sorted(makers)}")
        out.append(makers[part])
    return out


@dataclass(frozen=True)
class _NoEdges:
    kind: str = "none"
    weight: float = 1.0

    def adjacency(self, candidates: Sequence[Any]) -> Any:
        import scipy.sparse as sp

        return sp.csr_matrix((len(candidates), len(candidates)))


def degree_stats(degrees: Iterable[np.ndarray]) -> dict[str, float]:
    """Summary of candidate-graph out-degrees over many queries (hubs show in max and p99)."""
    values = np.concatenate([np.asarray(d, dtype=np.float64) for d in degrees] or [np.zeros(0)])
    if values.size == 0:
        return {"mean": 0.0, "median": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0, "isolated": 0.0}
    return {
        "mean": float(values.mean()),
        "median": float(np.median(values)),
        "p90": float(np.percentile(values, 90)),
        "p99": float(np.percentile(values, 99)),
        "max": float(values.max()),
        "isolated": float(np.mean(values == 0)),
    }
