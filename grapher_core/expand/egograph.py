"""Offline ego-graph index (GRAG section 4.1, "Textual Subgraph Indexing / Ranking").

For every object, its K-hop neighbourhood over the corpus link graph (the links expansion can
follow: foreign keys, title mentions, chunk adjacency) is embedded as the mean of its node
vectors and, when an ``edge_embedder`` is given, its edges' relation-text vectors (GRAG Eq. 4).
That is one extra vector per object: store it beside the object's own vector in a vector
store, or keep the index as a sidecar file (:meth:`EgoGraphIndex.save` / :meth:`load`).

At query time the top-N ego-graphs by cosine to the query (Eq. 6) join the candidates: their
member objects are fetched by id from a neighbour source in one call, duplicates collapse, and
any ranker runs on the union (:class:`EgoGraphReranker`). No KG store is needed.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate, CorpusObject, RankedCandidate
from grapher_core.edges.base import LinkKey
from grapher_core.errors import ConfigError, InputError, InputTypeError
from grapher_core.expand.expansion import (
    ExpansionResult,
    _canonical,
    _marked,
    _seed_scores,
    _unit,
)
from grapher_core.expand.links import linkable
from grapher_core.expand.pruning import unit_rows
from grapher_core.expand.relations import relations_between
from grapher_core.expand.source import NeighbourSource
from grapher_core.ranking.seeds import original_scores
from grapher_core.rerank import GraphReranker, validate_candidates

__all__ = ["DEFAULT_MAX_MEMBERS", "EgoGraphIndex", "EgoGraphReranker", "corpus_links"]

DEFAULT_MAX_MEMBERS = 30
"""Most objects per ego-graph (the centre, then neighbours hop by hop): hubs stay bounded."""


def corpus_links(
    objects: Sequence[CorpusObject | Candidate],
    proximities: Sequence[Any],
    metadata: Sequence[Mapping[str, Any]] | None = None,
) -> list[list[int]]:
    """Undirected neighbour lists over the whole corpus, through the followable links."""
    links = linkable(proximities)
    if not links:
        raise InputError(
            "none of the proximities has link fields (use ForeignKeys or "
            "AdjacentChunks) to build ego-graphs from"
        )
    metas = [o.metadata for o in objects] if metadata is None else list(metadata)
    if len(metas) != len(objects):
        raise InputError(f"got {len(metas)} metadata dicts for {len(objects)} objects")
    nodes = [Candidate(o.id, o.text, None, m) for o, m in zip(objects, metas, strict=True)]
    index: dict[LinkKey, list[int]] = {}
    for position, node in enumerate(nodes):
        for proximity in links:
            for key in proximity.own_keys(node):
                index.setdefault(_canonical(key), []).append(position)
    neighbours: list[dict[int, None]] = [{} for _ in nodes]
    for position, node in enumerate(nodes):
        for proximity in links:
            for key in proximity.link_keys(node):
                for other in index.get(_canonical(key), ()):
                    if other != position:
                        neighbours[position][other] = None
                        neighbours[other][position] = None
    return [list(n) for n in neighbours]


@dataclass(frozen=True)
class EgoGraphIndex:
    """One ego-graph per object: its unit embedding and its members (centre first)."""

    ids: tuple[str, ...]
    vectors: np.ndarray  # (n, d) unit rows
    indptr: np.ndarray  # (n + 1,) CSR pointers into members
    members: np.ndarray  # object positions
    hops: int

    @classmethod
    def build(
        cls,
        objects: Sequence[CorpusObject | Candidate],
        node_vectors: Any,
        proximities: Sequence[Any],
        *,
        hops: int = 1,
        metadata: Sequence[Mapping[str, Any]] | None = None,
        edge_embedder: Any | None = None,
        max_members: int = DEFAULT_MAX_MEMBERS,
    ) -> EgoGraphIndex:
        """Index every object's ``hops``-hop ego-graph; ``edge_embedder`` (``embed_documents``)
        gives relation-text vectors ``"<a> <relation> <b>"`` (composed from the labels and
        the phrase, see :func:`_edge_vectors`) so edges enter the mean (GRAG Eq. 4)."""
        if isinstance(hops, bool) or not isinstance(hops, int) or hops < 1:
            raise InputError(f"hops must be an integer >= 1, got {hops!r}")
        if max_members < 1:
            raise InputError(f"max_members must be >= 1, got {max_members!r}")
        vectors = unit_rows(np.asarray(node_vectors, dtype=np.float64))
        if vectors.ndim != 2 or vectors.shape[0] != len(objects):
            raise InputError(
                f"got {vectors.shape[0] if vectors.ndim else 0} node vectors for "
                f"{len(objects)} objects"
            )
        neighbours = corpus_links(objects, proximities, metadata)
        groups = [_ego(i, neighbours, hops, max_members) for i in range(len(objects))]
        edge_vectors: dict[tuple[int, int], np.ndarray] = {}
        if edge_embedder is not None:
            metas = [o.metadata for o in objects] if metadata is None else list(metadata)
            nodes = [Candidate(o.id, o.text, None, m) for o, m in zip(objects, metas, strict=True)]
            pairs = sorted(
                {
                    (min(i, j), max(i, j))
                    for group in groups
                    for i in group
                    for j in neighbours[i]
                    if j in set(group)
                }
            )
            edge_vectors = _edge_vectors(nodes, pairs, proximities, edge_embedder)
        pooled = np.zeros_like(vectors)
        for i, group in enumerate(groups):
            members = set(group)
            rows = [vectors[group]]
            edges = [
                edge_vectors[(min(a, b), max(a, b))]
                for a in group
                for b in neighbours[a]
                if a < b and b in members and (a, b) in edge_vectors
            ]
            if edges:
                rows.append(np.vstack(edges))
            pooled[i] = np.vstack(rows).mean(axis=0)
        indptr = np.concatenate(([0], np.cumsum([len(g) for g in groups]))).astype(np.int64)
        flat = np.fromiter((m for g in groups for m in g), dtype=np.int64, count=int(indptr[-1]))
        return cls(tuple(o.id for o in objects), unit_rows(pooled), indptr, flat, hops)

    def __len__(self) -> int:
        return len(self.ids)

    def group(self, position: int) -> list[str]:
        """Member ids of ego-graph ``position`` (its centre first)."""
        start, end = self.indptr[position], self.indptr[position + 1]
        return [self.ids[int(m)] for m in self.members[start:end]]

    def search(self, query_embedding: Any, n: int) -> list[tuple[int, float]]:
        """The top-``n`` ego-graphs by cosine to the query: (position, cosine), best first."""
        query = _unit(np.asarray(query_embedding))
        if query is None:
            return []
        if query.shape[0] != self.vectors.shape[1]:
            raise InputError(
                f"query embedding has {query.shape[0]} dimensions, the index "
                f"{self.vectors.shape[1]}"
            )
        sims = self.vectors @ query
        n = min(n, len(sims))
        top = np.argpartition(-sims, n - 1)[:n] if n > 0 else np.zeros(0, dtype=np.int64)
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(int(i), float(sims[i])) for i in top]

    def save(self, path: str | Path) -> None:
        """A sidecar ``.npz`` (vectors, membership) with the ids as JSON inside."""
        np.savez_compressed(
            Path(path),
            vectors=self.vectors.astype(np.float32),
            indptr=self.indptr,
            members=self.members,
            hops=np.asarray([self.hops]),
            ids=np.asarray([json.dumps(list(self.ids))]),
        )

    @classmethod
    def load(cls, path: str | Path) -> EgoGraphIndex:
        """Read a :meth:`save` file (plain arrays; no pickle)."""
        with np.load(Path(path), allow_pickle=False) as data:
            ids = tuple(json.loads(str(data["ids"][0])))
            return cls(
                ids,
                data["vectors"].astype(np.float64),
                data["indptr"],
                data["members"],
                int(data["hops"][0]),
            )

    def reranker(
        self,
        reranker: GraphReranker,
        source: NeighbourSource | None = None,
        *,
        n: int = 10,
        seed_rule: str = "floor",
        objects: Sequence[CorpusObject | Candidate] = (),
        node_vectors: Any = None,
    ) -> EgoGraphReranker:
        """An :class:`EgoGraphReranker` over this index (``source`` fetches members by id)."""
        if source is None:
            from grapher_core.expand.source import InMemorySource

            source = InMemorySource(objects, embeddings=node_vectors)
        return EgoGraphReranker(reranker, self, source, n=n, seed_rule=seed_rule)


def _ego(center: int, neighbours: Sequence[Sequence[int]], hops: int, cap: int) -> list[int]:
    seen = {center: 0}
    order = [center]
    queue = deque([center])
    while queue and len(order) < cap:
        node = queue.popleft()
        if seen[node] >= hops:
            continue
        for other in neighbours[node]:
            if other not in seen:
                seen[other] = seen[node] + 1
                order.append(other)
                queue.append(other)
                if len(order) >= cap:
                    break
    return order


def _edge_vectors(
    nodes: Sequence[Candidate],
    pairs: Sequence[tuple[int, int]],
    proximities: Sequence[Any],
    embedder: Any,
) -> dict[tuple[int, int], np.ndarray]:
    """Edge text ``"<a> <relation> <b>"`` as the mean of its parts' unit vectors: the two
    labels and the relation phrase, each embedded once. Embedding every edge sentence whole
    costs one model call per corpus edge (tens of thousands on a passage corpus); composing
    costs one per object label and per distinct phrase."""
    if not pairs:
        return {}
    phrases = {
        pair: "; ".join(relations_between(nodes[pair[0]], nodes[pair[1]], proximities))
        or "linked to"
        for pair in pairs
    }
    texts = list(
        dict.fromkeys([_label(nodes[i]) for pair in pairs for i in pair] + list(phrases.values()))
    )
    vectors = dict(
        zip(
            texts,
            unit_rows(np.asarray(embedder.embed_documents(texts), dtype=np.float64)),
            strict=True,
        )
    )
    return {
        (a, b): (vectors[_label(nodes[a])] + vectors[phrases[(a, b)]] + vectors[_label(nodes[b])])
        / 3.0
        for a, b in pairs
    }


def _label(candidate: Candidate) -> str:
    for key in ("table", "title", "name"):
        value = candidate.metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return candidate.id


class EgoGraphReranker:
    """The top-``n`` ego-graphs' members join the candidates; ``reranker`` ranks the union.

    Members come from ``source`` by id in one batched call; their seed scores follow
    ``seed_rule`` as in expansion (``floor``: the lowest candidate score).
    """

    def __init__(
        self,
        reranker: GraphReranker,
        index: EgoGraphIndex,
        source: NeighbourSource,
        *,
        n: int = 10,
        seed_rule: str = "floor",
    ) -> None:
        if not isinstance(reranker, GraphReranker):
            raise InputTypeError(f"reranker must be a GraphReranker, got {type(reranker).__name__}")
        if not isinstance(source, NeighbourSource):
            raise InputTypeError(f"{source!r} is not a neighbour source: it needs fetch(keys)")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ConfigError(f"n must be an integer >= 0, got {n!r}")
        if seed_rule not in ("calibrated", "floor"):
            raise ConfigError(f"seed_rule must be calibrated or floor, got {seed_rule!r}")
        self.reranker, self.index, self.source = reranker, index, source
        self.n, self.seed_rule = n, seed_rule

    def join(self, candidates: Sequence[Candidate], query_embedding: Any) -> ExpansionResult:
        """Candidates plus the members of the top-``n`` ego-graphs (new ones only)."""
        items = validate_candidates(candidates)
        query = None if query_embedding is None else _unit(np.asarray(query_embedding))
        if not items or query is None or self.n == 0:
            return ExpansionResult(tuple(items), (), 0, 0)
        known = {c.id for c in items}
        wanted: dict[str, None] = {}
        for position, _sim in self.index.search(query, self.n):
            for member in self.index.group(position):
                if member not in known:
                    wanted[member] = None
        if not wanted:
            return ExpansionResult(tuple(items), (), 0, 0)
        fetched = self.source.fetch([((None, i),) for i in wanted])
        fresh = {c.id: c for c in fetched if c.id in wanted}
        added = [fresh[i] for i in wanted if i in fresh]
        similarity = {}
        for c in added:
            if c.embedding is not None:
                v = np.asarray(c.embedding, dtype=np.float64).ravel()
                norm = float(np.linalg.norm(v))
                similarity[c.id] = float(v @ query / norm) if norm else 0.0
        scored = _seed_scores(
            items, original_scores(items), added, similarity, query, floor=self.seed_rule == "floor"
        )
        return ExpansionResult(
            tuple(items) + tuple(scored), tuple(c.id for c in scored), 1, len(fetched), similarity
        )

    def rerank(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | None = None,
        top_n: int | None = None,
    ) -> list[RankedCandidate]:
        """Drop-in for :meth:`GraphReranker.rerank`, ego-graphs joined first."""
        joined = self.join(candidates, query_embedding)
        ranked = self.reranker.rerank(
            list(joined.candidates), query=query, query_embedding=query_embedding, top_n=top_n
        )
        return _marked(ranked, joined)

    @property
    def needs_embeddings(self) -> bool:
        """Always True: ego-graphs are chosen by query cosine."""
        return True
