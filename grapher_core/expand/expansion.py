"""Ego-graph expansion before ranking (GRAG section 4.1; query-aware GNN Algorithm 8).

A reranker of the candidate list cannot return a gold object the base retriever missed. The
expander takes the top-``seeds`` candidates, follows the configured proximities' link fields
(foreign keys, title mentions, previous/next chunk) ``hops`` times through a
:class:`~grapher_core.expand.source.NeighbourSource` -- one batched fetch per hop --, gives every
fetched object a seed score, optionally prunes by query similarity, and appends them to the
candidates. Any ranker then runs on the enlarged set, where links lift the fetched objects that
the seeds point to.

Seed scores of fetched objects (they have no retriever score):

* query and object embeddings known (the source returns vectors, or an ``embedder`` is given):
  the cosine with the query, mapped onto the candidates' score scale by a least-squares line
  ``score ~ a * cosine + b`` fitted on the candidates that have embeddings (identity for a dense
  retriever; a calibrated guess for hybrid/BM25 scores), clipped to the candidates' score range;
* otherwise (documented fallback): the lowest candidate score, so a fetched object enters at
  the bottom and rises only through its links;
* candidates without any score: their rank seeds ``1 / rank`` become their scores and fetched
  objects are calibrated against those when embeddings allow; otherwise fetched objects get no
  score either and are appended after the candidates, most query-similar first.

How far it reaches is one :class:`Expansion` value (seeds, hops, budget, pruning, reverse links,
entities, the seed rule), validated once; :meth:`ExpandingReranker.run` returns the same
:class:`~grapher_core.rerank.Reranking` as :meth:`GraphReranker.run`, with the edge counts of the
enlarged graph.

Pruning: ``prune_threshold`` drops fetched objects whose cosine with the query is below it
(Algorithm 8; they are not expanded further either); ``budget`` caps the objects added per
query, keeping the most query-similar (GRAG's soft pruning keeps the closest ones in the same
spirit, without a trained MLP).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from grapher_core.candidates import Candidate, RankedCandidate
from grapher_core.edges.base import LinkKey, Proximity
from grapher_core.errors import ConfigError, InputError, InputTypeError, StateError
from grapher_core.expand.links import linkable
from grapher_core.expand.pruning import SoftPruner
from grapher_core.expand.source import NeighbourSource
from grapher_core.ranking.seeds import original_scores, rank_seeds
from grapher_core.rerank import GraphReranker, Reranking, RerankingEngine, validate_candidates
from grapher_core.utils.callsite import warn
from grapher_core.vectors import StoredVectors, VectorPlan, fill_plan

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_HOPS",
    "DEFAULT_SEEDS",
    "SEED_RULES",
    "ExpandingReranker",
    "Expansion",
    "ExpansionResult",
    "GraphExpander",
    "linkable",
]

DEFAULT_SEEDS = 3
DEFAULT_HOPS = 1
DEFAULT_BUDGET = 10
SEED_RULES = ("calibrated", "floor")
"""How fetched objects are seeded: ``calibrated`` (query cosine on the candidates' score
scale) or ``floor`` (the lowest candidate score: the retriever ranked them below every
candidate, so only links may lift them)."""


class _Embedder(Protocol):
    def embed_documents(self, texts: list[str]) -> Any: ...


@dataclass(frozen=True)
class Expansion:
    """How far expansion reaches, one value validated here for every caller (the core, the
    LangChain and LlamaIndex wrappers' flat ``expand_*`` fields, the bench).

    ``seeds`` (m): how many top candidates to expand from; ``hops`` (k): link steps;
    ``budget``: most objects added per query (0: none); ``prune_threshold``: minimum query
    cosine of a fetched object (``None``: no threshold); ``reverse``: also fetch objects linking
    *to* the seeds (needs the store to filter on list fields); ``follow_entities``: follow
    shared entities too (capped by the proximity's ``max_share``); ``seed_rule``: how fetched
    objects are seeded (:data:`SEED_RULES`).
    """

    seeds: int = DEFAULT_SEEDS
    hops: int = DEFAULT_HOPS
    budget: int = DEFAULT_BUDGET
    prune_threshold: float | None = None
    reverse: bool = False
    follow_entities: bool = False
    seed_rule: str = "calibrated"

    def __post_init__(self) -> None:
        for name, low in (("seeds", 1), ("hops", 1), ("budget", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"expansion {name} must be an integer >= {low}, got {value!r}")
        threshold = self.prune_threshold
        if threshold is not None:
            if (
                isinstance(threshold, bool)
                or not isinstance(threshold, (int, float))
                or not -1.0 <= float(threshold) <= 1.0
            ):
                raise ConfigError(
                    f"expansion prune_threshold is a cosine in [-1, 1] or None, got {threshold!r}"
                )
            object.__setattr__(self, "prune_threshold", float(threshold))
        for name in ("reverse", "follow_entities"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(
                    f"expansion {name} must be True or False, got {getattr(self, name)!r}"
                )
        if not isinstance(self.seed_rule, str) or self.seed_rule not in SEED_RULES:
            raise ConfigError(
                f"expansion seed_rule must be one of {SEED_RULES}, got {self.seed_rule!r}"
            )


@dataclass(frozen=True)
class ExpansionResult:
    """The enlarged candidate list (originals first, in order, then fetched objects) and what
    it cost: ``fetch_calls`` store round trips, ``fetched`` objects returned by the store."""

    candidates: tuple[Candidate, ...]
    added: tuple[str, ...]
    fetch_calls: int
    fetched: int
    similarities: dict[str, float] = field(default_factory=dict)


class GraphExpander:
    """Collect the k-hop link neighbours of the top candidates from a neighbour source.

    ``expansion``: how far (:class:`Expansion`; default: its defaults); ``embedder``: embeds
    fetched objects the source returns without vectors (one batch per hop).
    """

    def __init__(
        self,
        proximities: Sequence[Proximity],
        source: NeighbourSource,
        expansion: Expansion | None = None,
        *,
        embedder: _Embedder | None = None,
    ) -> None:
        expansion = _expansion(expansion)
        if not isinstance(source, NeighbourSource):
            raise InputTypeError(f"{source!r} is not a neighbour source: it needs fetch(keys)")
        self.links = linkable(proximities, entities=expansion.follow_entities)
        if not self.links:
            raise ConfigError(
                "none of the proximities has link fields to expand along "
                "(use ForeignKeys or AdjacentChunks, or SharedEntities with "
                "follow_entities=True)"
            )
        self.expansion = expansion
        self.source = source
        self.embedder = embedder

    def expand(
        self, candidates: Sequence[Candidate], *, query_embedding: np.ndarray | None = None
    ) -> ExpansionResult:
        """Return the candidates plus their fetched link neighbours, with seed scores."""
        items = validate_candidates(candidates)
        scores = original_scores(items)
        query = _unit(query_embedding)
        if not items or self.expansion.budget == 0:
            return ExpansionResult(tuple(items), (), 0, 0)
        links = [
            p.for_candidates(items) if callable(getattr(p, "for_candidates", None)) else p
            for p in self.links
        ]
        known_ids = {c.id for c in items}
        known_keys: set[LinkKey] = set()
        for candidate in items:
            for proximity in links:
                known_keys.update(_canonical(k) for k in proximity.own_keys(candidate))
        order = range(len(items)) if scores is None else np.argsort(-scores, kind="stable")
        frontier = [items[int(i)] for i in list(order)[: self.expansion.seeds]]
        added: list[Candidate] = []
        similarity: dict[str, float] = {}
        calls = fetched_total = 0
        for _hop in range(self.expansion.hops):
            keys = self._keys(frontier, known_keys, links)
            room = self.expansion.budget - len(added)
            if not keys or room <= 0:
                break
            fetched = self.source.fetch(keys)
            known_keys.update(keys)
            calls += 1
            fetched_total += len(fetched)
            fresh: dict[str, Candidate] = {}
            for obj in fetched:
                if isinstance(obj, Candidate) and obj.id and obj.id not in known_ids:
                    fresh.setdefault(obj.id, obj)
            new = self._with_embeddings(list(fresh.values()), query)
            sims = _cosines(new, query)
            keep = list(range(len(new)))
            if sims is not None:
                if self.expansion.prune_threshold is not None:
                    keep = [i for i in keep if sims[i] >= self.expansion.prune_threshold]
                keep.sort(key=lambda i: -sims[i])  # stable: fetch order among equals
            keep = keep[:room]
            frontier = [new[i] for i in keep]
            for i in keep:
                known_ids.add(new[i].id)
                if sims is not None:
                    similarity[new[i].id] = float(sims[i])
                for proximity in links:
                    known_keys.update(_canonical(k) for k in proximity.own_keys(new[i]))
            added.extend(frontier)
            if not frontier:
                break
        if (
            scores is None
            and added
            and all(c.id in similarity for c in added)
            and _calibration(items, rank_seeds(len(items)), query) is not None
        ):
            # No retriever scores: candidates keep their rank seeds, now written as scores, so
            # fetched objects can be placed among them by query similarity.
            scores = rank_seeds(len(items))
            items = [
                Candidate(c.id, c.text, float(s), c.metadata, c.embedding)
                for c, s in zip(items, scores, strict=True)
            ]
        scored = _seed_scores(
            items, scores, added, similarity, query, floor=self.expansion.seed_rule == "floor"
        )
        return ExpansionResult(
            tuple(items) + tuple(scored),
            tuple(c.id for c in scored),
            calls,
            fetched_total,
            similarity,
        )

    def _keys(
        self, frontier: Sequence[Candidate], known: set[LinkKey], links: Sequence[Any]
    ) -> list[LinkKey]:
        keys: dict[LinkKey, None] = {}
        for candidate in frontier:
            for proximity in links:
                found = list(proximity.link_keys(candidate))
                if self.expansion.reverse and callable(getattr(proximity, "reverse_keys", None)):
                    found.extend(proximity.reverse_keys(candidate))
                for key in found:
                    canonical = _canonical(key)
                    if canonical not in known:
                        keys[canonical] = None
        return list(keys)

    def _with_embeddings(self, new: list[Candidate], query: np.ndarray | None) -> list[Candidate]:
        missing = [i for i, c in enumerate(new) if c.embedding is None]
        if query is None or self.embedder is None or not missing:
            return new
        vectors = np.asarray(
            self.embedder.embed_documents([new[i].text for i in missing]), dtype=np.float32
        )
        if vectors.ndim != 2 or vectors.shape[0] != len(missing):
            raise InputError(
                f"the embedding model returned {vectors.shape[0] if vectors.ndim else 0} "
                f"vectors for {len(missing)} fetched objects"
            )
        out = list(new)
        for i, vector in zip(missing, vectors, strict=True):
            c = new[i]
            out[i] = Candidate(c.id, c.text, c.score, c.metadata, vector)
        return out


class ExpandingReranker(RerankingEngine):
    """Expansion, then any :class:`~grapher_core.GraphReranker` over the enlarged set.

    >>> source = InMemorySource(corpus, embeddings=vectors)
    >>> reranker = ExpandingReranker(GraphReranker([ForeignKeys("mentions",
    ...     target_field="title")]), source, Expansion(seeds=3, hops=1))
    >>> result = reranker.run(candidates, query_embedding=q, top_n=10)

    Same faces as the reranker it wraps (``run`` returns a :class:`~grapher_core.rerank.
    Reranking` with the enlarged graph's edge counts; ``rerank``, ``vector_plan``,
    ``run_plan``), so a caller holds either and never branches. Fetched objects appear in the
    output like candidates, with ``expanded=True``, ``original_score`` the seed score expansion
    gave them and ``original_rank`` beyond the candidate list's length. ``embedder`` embeds
    fetched objects the source returns without vectors; ``pruner`` scales fetched objects'
    scores (dropping those under ``drop_below``); ``keep_candidate_scores`` keeps the
    candidates' candidate-only ranking.
    """

    def __init__(
        self,
        reranker: GraphReranker,
        source: NeighbourSource,
        expansion: Expansion | None = None,
        *,
        embedder: _Embedder | None = None,
        pruner: SoftPruner | None = None,
        drop_below: float = 0.5,
        keep_candidate_scores: bool = False,
    ) -> None:
        if not isinstance(reranker, GraphReranker):
            raise InputTypeError(f"reranker must be a GraphReranker, got {type(reranker).__name__}")
        if pruner is not None and not isinstance(pruner, SoftPruner):
            raise InputTypeError(
                f"pruner needs alphas(query, objects), got {type(pruner).__name__}"
            )
        if not 0.0 <= float(drop_below) <= 1.0:
            raise ConfigError(f"drop_below is an alpha in [0, 1], got {drop_below!r}")
        self.reranker = reranker
        self.pruner = pruner
        self.drop_below = float(drop_below)
        self.keep_candidate_scores = bool(keep_candidate_scores)
        self.expander = GraphExpander(reranker.proximities, source, expansion, embedder=embedder)

    @property
    def expansion(self) -> Expansion:
        """How far expansion reaches."""
        return self.expander.expansion

    @property
    def needs_embeddings(self) -> bool:
        """Always True: expansion scores and prunes fetched objects by query similarity (it
        falls back to the lowest candidate score without vectors)."""
        return True

    @property
    def embedding_model(self) -> Any:
        """The wrapped reranker's own embedder (see :attr:`GraphReranker.embedding_model`)."""
        return self.reranker.embedding_model

    def vector_plan(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | Sequence[float] | None = None,
        embedder: object | None = None,
        stored: StoredVectors | None = None,
    ) -> VectorPlan:
        """:meth:`GraphReranker.vector_plan` of the wrapped reranker, always asking for vectors
        (expansion reads the query's and the candidates')."""
        return self.reranker.vector_plan(
            candidates,
            query=query,
            query_embedding=query_embedding,
            embedder=embedder,
            stored=stored,
            needed=True,
        )

    def run_plan(
        self,
        plan: VectorPlan,
        embedded: Any | None = None,
        query_vector: Any | None = None,
        *,
        top_n: int | None = None,
    ) -> Reranking:
        """:meth:`run` over the plan's candidates with the vectors filled in."""
        candidates, query_embedding = fill_plan(
            plan, embedded, query_vector, self.reranker.vector_cache
        )
        return self._run(candidates, plan.query, query_embedding, top_n)[0]

    def run(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | None = None,
        top_n: int | None = None,
    ) -> Reranking:
        """Expand, then rank: the ranked candidates (fetched objects included), the edges per
        kind of the enlarged graph and the proximities used, as :meth:`GraphReranker.run`."""
        return self.run_with_expansion(
            candidates, query=query, query_embedding=query_embedding, top_n=top_n
        )[0]

    def rerank_with_expansion(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | None = None,
        top_n: int | None = None,
    ) -> tuple[list[RankedCandidate], ExpansionResult]:
        """Ranked candidates (fetched objects included) and the expansion's record."""
        result, expansion = self.run_with_expansion(
            candidates, query=query, query_embedding=query_embedding, top_n=top_n
        )
        return result.ranked, expansion

    def run_with_expansion(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | None = None,
        top_n: int | None = None,
    ) -> tuple[Reranking, ExpansionResult]:
        """:meth:`run` and the expansion's record (what was fetched, at what cost)."""
        return self._run(self.reranker.admit(candidates), query, query_embedding, top_n)

    def _run(
        self,
        candidates: Sequence[Candidate],
        query: str | None,
        query_embedding: np.ndarray | None,
        top_n: int | None,
    ) -> tuple[Reranking, ExpansionResult]:
        """Expand the (already bounded) candidates, then rank the enlarged pool."""
        expansion = self.expander.expand(candidates, query_embedding=query_embedding)
        if self.keep_candidate_scores and expansion.added:
            return self._merged(candidates, expansion, query, query_embedding, top_n), expansion
        if self.pruner is None or not expansion.added:
            result = self.reranker.run_pool(
                list(expansion.candidates),
                query=query,
                query_embedding=query_embedding,
                top_n=top_n,
            )
            return replace(result, ranked=_marked(result.ranked, expansion)), expansion
        result = self.reranker.run_pool(
            list(expansion.candidates), query=query, query_embedding=query_embedding
        )
        alphas = self._alphas(expansion, query_embedding)
        pruned = _soft_pruned(result.ranked, alphas, self.drop_below, top_n)
        return replace(result, ranked=_marked(pruned, expansion), top_n=top_n), expansion

    def _merged(
        self,
        candidates: Sequence[Candidate],
        expansion: ExpansionResult,
        query: str | None,
        query_embedding: np.ndarray | None,
        top_n: int | None,
    ) -> Reranking:
        """Candidates keep their candidate-only ranking and scores (fetched objects change
        neither); fetched objects take their scores from the enlarged graph (times alpha
        when a pruner is set) and are inserted where those scores place them. The edges
        reported are the enlarged graph's."""
        own = self.reranker.run_pool(
            list(candidates), query=query, query_embedding=query_embedding
        ).ranked
        enlarged = self.reranker.run_pool(
            list(expansion.candidates), query=query, query_embedding=query_embedding
        )
        added = set(expansion.added)
        fetched = [r for r in enlarged.ranked if r.id in added]
        if self.pruner is not None:
            fetched = _soft_pruned(
                fetched, self._alphas(expansion, query_embedding), self.drop_below, None
            )
        merged = sorted(
            [(r.score, 0, position, r) for position, r in enumerate(own)]
            + [(r.score, 1, position, r) for position, r in enumerate(fetched)],
            key=lambda item: (-item[0], item[1], item[2]),
        )
        if top_n is not None:
            merged = merged[:top_n]
        ranked = _marked(
            [replace(r, rank=rank) for rank, (_s, _k, _p, r) in enumerate(merged, start=1)],
            expansion,
        )
        return replace(enlarged, ranked=ranked, top_n=top_n)

    def _alphas(
        self, expansion: ExpansionResult, query_embedding: np.ndarray | None
    ) -> dict[str, float]:
        """The pruner's factor per fetched object (1 where a vector is missing, said once)."""
        fetched = expansion.candidates[len(expansion.candidates) - len(expansion.added) :]
        if query_embedding is None or any(c.embedding is None for c in fetched):
            _warn_once(
                "soft pruning needs the query embedding and the fetched objects' "
                "vectors; fetched objects without them are kept unscaled"
            )
            return {}
        if self.pruner is None:  # callers check first; a direct call is a programming error
            raise StateError("soft pruning scores asked for without a pruner")
        matrix = np.vstack([np.asarray(c.embedding, dtype=np.float64).ravel() for c in fetched])
        values = np.asarray(
            self.pruner.alphas(np.asarray(query_embedding, dtype=np.float64).ravel(), matrix),
            dtype=np.float64,
        ).ravel()
        if values.shape[0] != len(fetched) or not np.all(np.isfinite(values)):
            raise InputError(
                f"pruner returned {values.shape[0]} alphas for {len(fetched)} "
                "fetched objects, or non-finite ones"
            )
        return {c.id: float(np.clip(a, 0.0, 1.0)) for c, a in zip(fetched, values, strict=True)}


def _expansion(value: object) -> Expansion:
    """``None`` as the defaults; anything but an :class:`Expansion` named."""
    if value is None:
        return Expansion()
    if not isinstance(value, Expansion):
        raise InputTypeError(
            f"expansion must be an Expansion(seeds=..., hops=...), got {type(value).__name__}"
        )
    return value


def _marked(ranked: Sequence[RankedCandidate], expansion: ExpansionResult) -> list[RankedCandidate]:
    """Fetched objects carry ``expanded=True``."""
    added = set(expansion.added)
    return [replace(r, expanded=True) if r.id in added else r for r in ranked]


def _soft_pruned(
    ranked: Sequence[RankedCandidate],
    alphas: dict[str, float],
    drop_below: float,
    top_n: int | None,
) -> list[RankedCandidate]:
    """Scale fetched objects' scores by their alpha, drop those under ``drop_below``, re-sort
    (stable: equal scores keep the ranker's order) and renumber."""
    kept = [
        (r.score * alphas[r.id] if r.id in alphas else r.score, position, r)
        for position, r in enumerate(ranked)
        if r.id not in alphas or alphas[r.id] >= drop_below
    ]
    kept.sort(key=lambda item: (-item[0], item[1]))
    if top_n is not None:
        kept = kept[:top_n]
    return [
        replace(r, score=float(score), rank=rank)
        for rank, (score, _p, r) in enumerate(kept, start=1)
    ]


_WARNED: set[str] = set()


def _warn_once(message: str) -> None:
    if message in _WARNED:
        return
    _WARNED.add(message)
    logging.getLogger(__name__).warning(message)
    warn(message)


def _canonical(key: LinkKey) -> LinkKey:
    from grapher_core.edges.base import link_value

    return tuple(
        sorted(
            ((f, link_value(v)) for f, v in key),
            key=lambda pair: (pair[0] is not None, pair[0] or ""),
        )
    )


def _unit(vector: np.ndarray | None) -> np.ndarray | None:
    if vector is None:
        return None
    v = np.asarray(vector, dtype=np.float64).ravel()
    norm = float(np.linalg.norm(v))
    if not np.isfinite(norm):
        raise InputError("query_embedding has non-finite values")
    return v / norm if norm > 0 else None


def _cosines(objects: Sequence[Candidate], query: np.ndarray | None) -> np.ndarray | None:
    """Query cosine of every object, or ``None`` when any vector is missing or mis-sized."""
    if query is None or not objects or any(o.embedding is None for o in objects):
        return None
    matrix = np.vstack([np.asarray(o.embedding, dtype=np.float64).ravel() for o in objects])
    if matrix.shape[1] != query.shape[0]:
        raise InputError(
            f"object embeddings have {matrix.shape[1]} dimensions, the query "
            f"embedding {query.shape[0]}"
        )
    norms = np.linalg.norm(matrix, axis=1)
    return (matrix @ query) / np.where(norms == 0, 1.0, norms)


def _seed_scores(
    items: Sequence[Candidate],
    scores: np.ndarray | None,
    added: Sequence[Candidate],
    similarity: dict[str, float],
    query: np.ndarray | None,
    *,
    floor: bool = False,
) -> list[Candidate]:
    """Give fetched objects scores on the candidates' scale (see the module docstring);
    ``floor``: every fetched object at the lowest candidate score."""
    if not added:
        return []
    if scores is None:
        return [Candidate(c.id, c.text, None, c.metadata, c.embedding) for c in added]
    low, high = float(scores.min()), float(scores.max())
    predicted: list[float] | None = None
    if not floor and all(c.id in similarity for c in added):
        line = _calibration(items, scores, query)
        if line is not None:
            slope, intercept = line
            predicted = [
                float(np.clip(slope * similarity[c.id] + intercept, low, high)) for c in added
            ]
    if predicted is None:
        predicted = [low] * len(added)
    return [
        Candidate(c.id, c.text, s, c.metadata, c.embedding)
        for c, s in zip(added, predicted, strict=True)
    ]


def _calibration(
    items: Sequence[Candidate], scores: np.ndarray, query: np.ndarray | None
) -> tuple[float, float] | None:
    """Least-squares ``score ~ a * cosine + b`` over the candidates with embeddings; ``None``
    when it cannot be fitted or does not increase with the cosine."""
    with_vectors = [i for i, c in enumerate(items) if c.embedding is not None]
    if query is None or len(with_vectors) < 2:
        return None
    cos = _cosines([items[i] for i in with_vectors], query)
    if cos is None or float(np.var(cos)) == 0.0:
        return None
    y = scores[with_vectors]
    slope, intercept = np.polyfit(cos, y, 1)
    if not np.isfinite(slope) or slope <= 0:
        return None
    return float(slope), float(intercept)
