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
:class:`~grapher_core.request.result.Reranking` as :meth:`GraphReranker.run`, with the edge
counts of the enlarged graph.

Pruning: ``prune_threshold`` drops fetched objects whose cosine with the query is below it
(Algorithm 8; they are not expanded further either); ``budget`` caps the objects added per
query, keeping the most query-similar (GRAG's soft pruning keeps the closest ones in the same
spirit, without a trained MLP).

Cost: a query fetches at most ``max_fetched`` objects (the source is asked for no more when its
``fetch`` takes a ``limit``), no hop starts ``max_seconds`` after the first fetch (a running
fetch is not interrupted), and a link key that matches more than ``max_per_key`` objects -- a
hub, like a category page -- is skipped, and remembered so later queries do not fetch it. Each
is said once per reranker. A source whose ``fetch`` takes ``full=False`` may leave out the text
of objects it returns with a vector: they are scored first and only the kept ones read in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate, RankedCandidate
from grapher_core.errors import ConfigError, InputError, InputTypeError, StateError
from grapher_core.expand.expander import GraphExpander, _Embedder
from grapher_core.expand.pruning import SoftPruner
from grapher_core.expand.reach import (
    DEFAULT_BUDGET,
    DEFAULT_HOPS,
    DEFAULT_MAX_FETCHED,
    DEFAULT_MAX_PER_KEY,
    DEFAULT_MAX_SECONDS,
    DEFAULT_SEEDS,
    SEED_RULES,
    Expansion,
    ExpansionResult,
    HubKeys,
)
from grapher_core.expand.source import NeighbourSource
from grapher_core.request.call import Call, Steps
from grapher_core.request.door import DoorIO, run_call
from grapher_core.request.result import Reranking
from grapher_core.rerank import GraphReranker, RerankingEngine
from grapher_core.utils.callsite import warn_once

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_HOPS",
    "DEFAULT_MAX_FETCHED",
    "DEFAULT_MAX_PER_KEY",
    "DEFAULT_MAX_SECONDS",
    "DEFAULT_SEEDS",
    "SEED_RULES",
    "ExpandingReranker",
    "Expansion",
    "ExpansionResult",
    "GraphExpander",
    "HubKeys",
]


class ExpandingReranker(RerankingEngine):
    """Expansion, then any :class:`~grapher_core.GraphReranker` over the enlarged set.

    >>> source = InMemorySource(corpus, embeddings=vectors)
    >>> reranker = ExpandingReranker(GraphReranker([ForeignKeys("mentions",
    ...     target_field="title")]), source, Expansion(seeds=3, hops=1))
    >>> result = reranker.run(candidates, query_embedding=q, top_n=10)

    Same faces as the reranker it wraps (``run`` returns a :class:`~grapher_core.rerank.
    Reranking` with the enlarged graph's edge counts; ``rerank``, ``call``), so a
    caller holds either and never branches. Fetched objects appear in the
    output like candidates, with ``expanded=True``, ``original_score`` the seed score expansion
    gave them and ``original_rank`` beyond the candidate list's length. ``embedder`` embeds
    fetched objects the source returns without vectors; ``pruner`` scales fetched objects'
    scores (dropping those under ``drop_below``); ``keep_candidate_scores`` (default) keeps
    the candidates' candidate-only ranking and scores and inserts fetched objects where their
    enlarged-graph scores place them, so a fetched neighbour can take a place in the top k but
    never reorders the candidates (``False``: one ranking of the enlarged pool, in which a
    fetched neighbour also shifts the lift the candidates share); ``hubs``: hub keys
    remembered across queries (a wrapper that builds one per call passes the one it keeps).
    Bounds reached are said once through the reranker's diagnostics.
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
        keep_candidate_scores: bool = True,
        hubs: HubKeys | None = None,
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
        self.expander = GraphExpander(
            reranker.proximities,
            source,
            expansion,
            embedder=embedder,
            diagnostics=reranker.diagnostics,
            hubs=hubs,
        )

    @property
    def source(self) -> NeighbourSource:
        """Where fetched objects come from."""
        return self.expander.source

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
        """:meth:`run` and the expansion's record (what was fetched, at what cost): the
        request's steps, answered by the source and this reranker's ``embedder``."""
        steps = self._steps(
            candidates, query=query, query_embedding=query_embedding, embedder=None, top_n=top_n
        )
        return run_call(Call(steps), self.own_io().answer)

    def own_io(self) -> DoorIO:
        """:meth:`run` answers with this reranker's ``embedder`` (what the source returns
        without vectors), the source fetched directly."""
        return DoorIO.of(self.expander.embedder)

    def steps(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | Sequence[float] | None = None,
        embedder: object | None = None,
        top_n: int | None = None,
    ) -> Steps[Reranking]:
        """The request as steps (see :meth:`call`)."""
        result, _expansion = yield from self._steps(
            candidates, query=query, query_embedding=query_embedding, embedder=embedder, top_n=top_n
        )
        return result

    def _steps(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None,
        query_embedding: np.ndarray | Sequence[float] | None,
        embedder: object | None,
        top_n: int | None,
    ) -> Steps[tuple[Reranking, ExpansionResult]]:
        filled, vector = yield from self.reranker.vector_steps(
            self.reranker.admit(candidates),
            query=query,
            query_embedding=query_embedding,
            embedder=embedder,
            needed=True,
        )
        expansion = yield from self.expander.steps(
            filled, query_embedding=vector, fallback=self.reranker.embedding_model
        )
        return self._ranked(filled, expansion, query, vector, top_n), expansion

    def _ranked(
        self,
        candidates: Sequence[Candidate],
        expansion: ExpansionResult,
        query: str | None,
        query_embedding: np.ndarray | None,
        top_n: int | None,
    ) -> Reranking:
        """Rank the enlarged pool an expansion of the (already bounded) candidates made."""
        if self.keep_candidate_scores and expansion.added:
            return self._merged(candidates, expansion, query, query_embedding, top_n)
        if self.pruner is None or not expansion.added:
            result = self.reranker.run_pool(
                list(expansion.candidates),
                query=query,
                query_embedding=query_embedding,
                top_n=top_n,
            )
            return replace(result, ranked=marked(result.ranked, expansion))
        result = self.reranker.run_pool(
            list(expansion.candidates), query=query, query_embedding=query_embedding
        )
        alphas = self._alphas(expansion, query_embedding)
        pruned = soft_pruned(result.ranked, alphas, self.drop_below, top_n)
        return replace(result, ranked=marked(pruned, expansion), top_n=top_n)

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
            fetched = soft_pruned(
                fetched, self._alphas(expansion, query_embedding), self.drop_below, None
            )
        merged = sorted(
            [(r.score, 0, position, r) for position, r in enumerate(own)]
            + [(r.score, 1, position, r) for position, r in enumerate(fetched)],
            key=lambda item: (-item[0], item[1], item[2]),
        )
        if top_n is not None:
            merged = merged[:top_n]
        ranked = marked(
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
            warn_once(
                "soft pruning needs the query embedding and the fetched objects' "
                "vectors; fetched objects without them are kept unscaled",
                logger=__name__,
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


def marked(ranked: Sequence[RankedCandidate], expansion: ExpansionResult) -> list[RankedCandidate]:
    """Fetched objects carry ``expanded=True``."""
    added = set(expansion.added)
    return [replace(r, expanded=True) if r.id in added else r for r in ranked]


def soft_pruned(
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
