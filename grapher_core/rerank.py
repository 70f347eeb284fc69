"""GraphReranker: candidates -> graph -> ranker -> ranked candidates with explanations."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, TypeVar

import numpy as np

from grapher_core.candidates import Candidate, Contribution, RankedCandidate
from grapher_core.diagnostics import Diagnostics, check_graph, check_pool
from grapher_core.edges.base import Proximity
from grapher_core.edges.detect import describe, detect_proximities
from grapher_core.edges.graph import CandidateGraph, build_graph
from grapher_core.edges.keys import AdjacentChunks
from grapher_core.errors import ConfigError, InputError, InputTypeError, MissingDependencyError
from grapher_core.ranking.base import RankContext, Ranker, builds_own_graph, needs_embeddings
from grapher_core.ranking.calibration import relevance_scores
from grapher_core.ranking.propagation import sentence_sized
from grapher_core.ranking.registry import make_ranker
from grapher_core.ranking.seeds import (
    SEED_TRANSFORMS,
    _names,
    make_seeds,
    original_scores,
    seed_policy,
)
from grapher_core.vectors import (
    StoredVectors,
    VectorCache,
    VectorPlan,
    clip_text,
    fill_plan,
    plan_vectors,
)

T = TypeVar("T")

DEFAULT_MAX_CANDIDATES = 1000
"""The wrappers' default bound on the documents/nodes reranked per call: a retriever asked for
far more than a reranker can use (the paper reranks 200) costs graph building and embedding
time, and it is said once rather than paid silently. The core's own default is no bound."""
DEFAULT_MAX_CHARS_PER_DOC = 10_000
"""The wrappers' default cut of a text before it is embedded or read by a ranker (about 2,500
tokens: MiniLM reads only the first ~256, larger models rarely benefit more); outputs keep the
full text. It bounds the cost of a pathological document (a whole book in one chunk)."""
MOVES = ("up", "down", "same")
"""How a candidate moved between the retriever's order and the reranked one."""


@dataclass(frozen=True)
class Reranking:
    """One call's result with what the graph was: the ranked candidates, the number of
    (directed) edges per kind -- a symmetric link counts twice -- and the proximities used
    (the detected ones when none were given).

    ``graph``, ``seeds`` and ``scores`` (the ranker's raw score of every candidate, in input
    order, returned or not) and ``top_n`` are what :meth:`to_networkx` and
    :func:`grapher_core.picture.draw` show; they are ``None`` for an empty call.
    """

    ranked: list[RankedCandidate]
    edges: Mapping[str, int] = field(default_factory=dict)
    proximities: tuple[Any, ...] = ()
    graph: CandidateGraph | None = field(default=None, repr=False, compare=False)
    seeds: np.ndarray | None = field(default=None, repr=False, compare=False)
    scores: np.ndarray | None = field(default=None, repr=False, compare=False)
    top_n: int | None = None

    def to_networkx(self, top_k: int | None = None) -> Any:
        """The candidate graph as a ``networkx.DiGraph`` (needs the ``draw`` extra).

        Nodes are candidate ids with ``id``, ``rank_before`` (the retriever's order),
        ``rank_after``, ``seed``, ``score`` (the ranker's), ``relevance`` (returned candidates;
        else ``None``), ``moved`` (one of :data:`MOVES`), ``shift`` (places gained),
        ``in_top_k``, ``newcomer`` (in the top ``top_k`` now, not before), ``returned``,
        ``expanded`` and ``why`` / ``why_kinds`` (the neighbour with the largest share of the
        smoothing term and the kinds of the edges to it; ``None`` without edges). Edges carry
        ``kind`` (kinds joined by ``+`` when several proximities link the pair), ``kinds``,
        ``weight`` (the summed weight the ranker sees) and ``weights`` (per kind).
        ``top_k``: default the call's ``top_n``, else 10 (at most the number of candidates).
        """
        try:
            import networkx as nx
        except ImportError as error:
            raise MissingDependencyError(
                "Reranking.to_networkx needs networkx: pip install 'grapher-rerank[draw]'"
            ) from error
        out = nx.DiGraph()
        graph, seeds, scores = self.graph, self.seeds, self.scores
        if graph is None or seeds is None or scores is None or graph.n == 0:
            return out
        n = graph.n
        k = top_k if top_k is not None else (self.top_n if self.top_n is not None else 10)
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InputError(f"top_k must be a non-negative integer or None, got {top_k!r}")
        k = min(k, n)
        after = np.empty(n, dtype=np.int64)
        after[np.lexsort((np.arange(n), -scores))] = np.arange(1, n + 1)
        returned = {r.id: r for r in self.ranked}
        position = {c: i for i, c in enumerate(graph.ids)}
        for r in self.ranked:  # the returned order wins (expansion may merge two rankings)
            if r.id in position:
                after[position[r.id]] = r.rank
        why = _explanations(graph, scores, np.arange(n), 1)
        out.graph.update(top_k=k, edges=dict(self.edges))
        for i, node in enumerate(graph.ids):
            rank_after, rank_before = int(after[i]), i + 1
            item = returned.get(node)
            best = why.get(i, ())
            out.add_node(
                node,
                id=node,
                rank_before=rank_before,
                rank_after=rank_after,
                seed=float(seeds[i]),
                score=float(scores[i]),
                relevance=None if item is None else item.relevance,
                moved=_move(rank_before, rank_after),
                shift=rank_before - rank_after,
                in_top_k=rank_after <= k,
                newcomer=rank_after <= k < rank_before,
                returned=item is not None,
                expanded=bool(item is not None and item.expanded),
                why=best[0].neighbour_id if best else None,
                why_kinds=best[0].kinds if best else (),
            )
        pairs: dict[tuple[int, int], dict[str, float]] = {}
        for kind, matrix in graph.by_kind.items():
            coo = matrix.tocoo()
            for i, j, w in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True):
                if w:
                    pairs.setdefault((i, j), {})[kind] = float(w)
        adjacency = graph.adjacency.tocsr()
        for (i, j), weights in pairs.items():
            kinds = tuple(weights)
            out.add_edge(
                graph.ids[i],
                graph.ids[j],
                kind=kinds[0] if len(kinds) == 1 else "+".join(kinds),
                kinds=kinds,
                weight=float(adjacency[i, j]),
                weights=weights,
            )
        return out

    def draw(self, path: Any = None, **options: Any) -> Any:
        """:func:`grapher_core.picture.draw` of this reranking (needs the ``draw`` extra)."""
        from grapher_core.picture import draw

        return draw(self, path, **options)


class RerankingEngine:
    """What every engine (:class:`GraphReranker`, the expanding one) offers besides ``run``:
    the ranked list alone."""

    def run(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | None = None,
        top_n: int | None = None,
    ) -> Reranking:
        raise NotImplementedError

    def rerank(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | None = None,
        top_n: int | None = None,
    ) -> list[RankedCandidate]:
        """Return the candidates in their new order (best first), ``top_n`` of them if given."""
        return self.run(
            candidates, query=query, query_embedding=query_embedding, top_n=top_n
        ).ranked


class GraphReranker(RerankingEngine):
    """Rerank a retriever's candidates with a graph built from their metadata.

    >>> reranker = GraphReranker([ForeignKeys("foreign_keys")], ranker="gcs")
    >>> results = reranker.rerank(candidates, top_n=5)

    ``alpha`` overrides the named ranker's default (see :mod:`grapher_core.ranking`);
    ``seed_transform`` says how base scores become seeds; ``None`` (default) is the core's one
    rule, :func:`~grapher_core.ranking.seeds.seed_policy`: the retriever's order, or its scores
    for a ranker that reads them (see :mod:`grapher_core.ranking.seeds`);
    ``explain`` is how many neighbours to report per returned candidate (0 to skip).
    The input is never modified: candidates are frozen and their metadata only read.

    ``proximities=None`` (default) detects them from the candidates' metadata on each call
    (:mod:`grapher_core.edges.detect`; the choice is logged once); an explicit sequence, even an
    empty one, is used as given. ``auto_proximities=True`` adds the detected ones to the given
    ones (the LlamaIndex wrapper does, beside its relationship edges).

    Silent no-ops (a field no candidate has, links naming no candidate, a graph without edges,
    a proximity without vectors, a pool smaller than ``top_n * 2``) are reported once per cause
    (logging + :class:`~grapher_core.diagnostics.GraphERWarning`); ``strict=True`` raises
    :class:`~grapher_core.diagnostics.GraphERDiagnosticError` instead.

    Callers holding an embedding model (the LangChain and LlamaIndex wrappers) ask
    :meth:`vector_plan` what to embed, embed exactly that, and hand it to :meth:`run_plan`;
    ``vector_cache`` keeps the vectors between calls (see :mod:`grapher_core.vectors`).

    Bounds, decided here for both wrappers (which pass their documented defaults,
    :data:`DEFAULT_MAX_CANDIDATES` and :data:`DEFAULT_MAX_CHARS_PER_DOC`; the core's own are
    ``None``): ``max_candidates`` reranks the first candidates only (said once),
    ``max_chars_per_doc`` cuts the texts embedded and read by the ranker (results keep the full
    text), ``score_threshold`` drops results whose relevance is below it.
    """

    def __init__(
        self,
        proximities: Sequence[Proximity] | None = None,
        ranker: str | Ranker = "gcs",
        alpha: float | None = None,
        *,
        seed_transform: str | None = None,
        explain: int = 3,
        strict: bool = False,
        auto_proximities: bool | None = None,
        max_candidates: int | None = None,
        max_chars_per_doc: int | None = None,
        score_threshold: float | None = None,
        **ranker_options: Any,
    ) -> None:
        self.auto_proximities = (
            proximities is None if auto_proximities is None else bool(auto_proximities)
        )
        self.proximities = () if proximities is None else proximities
        self.seed_transform = seed_transform
        self.explain = explain
        self._ranker: Ranker = make_ranker(ranker, alpha, **ranker_options)
        self.diagnostics = Diagnostics(strict=bool(strict))
        self.vector_cache = VectorCache()
        self._detected: dict[frozenset[str], tuple[Any, ...]] = {}
        self.max_candidates = max_candidates
        self.max_chars_per_doc = max_chars_per_doc
        self.score_threshold = score_threshold

    # Every setting is validated on assignment as at construction, and a refused value leaves
    # the previous one in place: a reranker shared by threads is never half-configured.

    @property
    def ranker(self) -> Ranker:
        """The ranker; assign a name (``"ppr"``) or a ``Ranker`` to switch (validated)."""
        return self._ranker

    @ranker.setter
    def ranker(self, value: str | Ranker) -> None:
        self._ranker = make_ranker(value)

    @property
    def proximities(self) -> tuple[Proximity, ...]:
        """The given edge builders (instances, validated on assignment)."""
        return self._proximities

    @proximities.setter
    def proximities(self, value: Sequence[Proximity]) -> None:
        self._proximities = check_proximities(value)
        self._detected = {}

    @property
    def seed_transform(self) -> str | None:
        """How base scores become seeds (one of ``SEED_TRANSFORMS``; ``None``: the core's rule
        for the ranker, :func:`~grapher_core.ranking.seeds.seed_policy`)."""
        return self._seed_transform

    @seed_transform.setter
    def seed_transform(self, value: str | None) -> None:
        if value is not None and (not isinstance(value, str) or value not in SEED_TRANSFORMS):
            raise ConfigError(
                f"seed_transform must be None or one of {SEED_TRANSFORMS}, got {value!r}"
            )
        self._seed_transform = value

    @property
    def seed_policy(self) -> str:
        """The seed policy calls use: :attr:`seed_transform`, or the core's rule for the ranker."""
        return seed_policy(self._seed_transform, self._ranker)

    @property
    def explain(self) -> int:
        """How many neighbours to report per returned candidate (0 to skip)."""
        return self._explain

    @explain.setter
    def explain(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"explain must be an integer >= 0, got {value!r}")
        self._explain = value

    @property
    def strict(self) -> bool:
        """Raise instead of warning on silent no-ops."""
        return self.diagnostics.strict

    @property
    def max_candidates(self) -> int | None:
        """How many candidates a call reranks: the first ones in the retriever's order, the
        rest dropped (said once); ``None``: no bound (the core's default)."""
        return self._max_candidates

    @max_candidates.setter
    def max_candidates(self, value: int | None) -> None:
        self._max_candidates = _bound("max_candidates", value)

    @property
    def max_chars_per_doc(self) -> int | None:
        """Texts are embedded and read by the ranker by their first ``max_chars_per_doc``
        characters; results keep the full text. ``None``: whole texts (the core's default)."""
        return self._max_chars_per_doc

    @max_chars_per_doc.setter
    def max_chars_per_doc(self, value: int | None) -> None:
        self._max_chars_per_doc = _bound("max_chars_per_doc", value)

    @property
    def score_threshold(self) -> float | None:
        """Results whose relevance (``RankedCandidate.relevance``, the wrappers'
        ``relevance_score``) is below it are dropped after ranking; ``None``: keep all."""
        return self._score_threshold

    @score_threshold.setter
    def score_threshold(self, value: float | None) -> None:
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(float(value))
        ):
            raise ConfigError(f"score_threshold must be a finite number or None, got {value!r}")
        self._score_threshold = None if value is None else float(value)

    def admit(self, items: Sequence[T]) -> list[T]:
        """The first :attr:`max_candidates` of ``items`` (candidates, or a wrapper's documents
        before it converts them), in the retriever's order; a cut is said once."""
        items = list(items)
        limit = self.max_candidates
        if limit is not None and len(items) > limit:
            self.diagnostics.report(
                ("max-candidates",),
                f"{len(items)} candidates given but max_candidates={limit}: the first {limit} "
                f"in the retriever's order are reranked, the other {len(items) - limit} "
                "dropped; fetch fewer, or raise max_candidates (None: no bound)",
            )
            del items[limit:]
        return items

    def proximities_for(self, candidates: Sequence[Candidate]) -> tuple[Any, ...]:
        """The proximities a call over ``candidates`` uses: the given ones, plus the detected
        ones when auto-detection is on (cached per set of metadata keys present)."""
        if not self.auto_proximities:
            return self.proximities
        keys = frozenset(k for c in candidates for k in c.metadata)
        detected = self._detected.get(keys)
        if detected is None:
            taken = {getattr(p, "field", None) for p in self.proximities}
            # Chunk order stated twice (LlamaIndex PREVIOUS/NEXT relationships given, doc_id +
            # chunk_index detected) is one fact: counted once, as in a pool without the
            # relationships, so both wrappers build the same graph.
            ordered = any(getattr(p, "kind", None) == "contextual" for p in self.proximities)
            detected = tuple(
                p
                for p in detect_proximities(candidates)
                if getattr(p, "field", None) not in taken
                and not (ordered and isinstance(p, AdjacentChunks))
            )
            if len(self._detected) < 64:
                self._detected[keys] = detected
            self.diagnostics.info_once(
                ("detected", describe(detected)),
                f"no proximities given; detected from the metadata: {describe(detected)}",
            )
        return self.proximities + detected

    @property
    def needs_embeddings(self) -> bool:
        """True when the ranker or a proximity reads embeddings (``SemanticKNN``, GAT, MLP):
        callers holding an embedding model should then embed the query and the candidates."""
        return needs_embeddings(self.ranker) or any(needs_embeddings(p) for p in self.proximities)

    @property
    def embedding_model(self) -> Any:
        """The embedder the ranker holds (a learned ranker's packaged MiniLM), or ``None``: it
        embeds the texts a caller without a model of its own leaves missing, and names the
        space of the vectors a store must hold to be reused."""
        if not needs_embeddings(self.ranker):
            return None
        embedder = getattr(self.ranker, "embedder", None)
        return embedder if callable(getattr(embedder, "embed_documents", None)) else None

    def vector_plan(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | Sequence[float] | None = None,
        embedder: object | None = None,
        stored: StoredVectors | None = None,
        needed: bool | None = None,
    ) -> VectorPlan:
        """What a call over ``candidates`` needs embedded (:class:`~grapher_core.vectors.
        VectorPlan`): nothing unless the ranker or a proximity reads vectors (``needed``
        overrides: expansion always reads them); ``embedder`` is the caller's model (it only
        keys the cache: the caller does the embedding), ``stored`` reads vectors a store holds.
        The ranker's own embedder is looked up only when the caller has none. Only the first
        :attr:`max_candidates` are planned (and then ranked); texts are embedded by their first
        :attr:`max_chars_per_doc` characters."""
        candidates = self.admit(candidates)
        needed = (self.needs_embeddings if needed is None else needed) and bool(candidates)
        return plan_vectors(
            validate_candidates(candidates) if needed else candidates,
            needed=needed,
            embedder=embedder,
            fallback=self.embedding_model if needed and embedder is None else None,
            cache=self.vector_cache,
            query=query,
            query_embedding=query_embedding,
            stored=stored,
            max_chars=self.max_chars_per_doc,
        )

    def run_plan(
        self,
        plan: VectorPlan,
        embedded: Any | None = None,
        query_vector: Any | None = None,
        *,
        top_n: int | None = None,
    ) -> Reranking:
        """:meth:`run` over the plan's candidates, with ``embedded`` (one vector per
        ``plan.missing_texts``) and ``query_vector`` filled in, checked and cached."""
        candidates, query_embedding = fill_plan(plan, embedded, query_vector, self.vector_cache)
        return self.run_pool(
            candidates, query=plan.query, query_embedding=query_embedding, top_n=top_n
        )

    def graph(self, candidates: Sequence[Candidate]) -> CandidateGraph:
        """The candidate graph the ranker sees (useful for inspection and plots)."""
        candidates = validate_candidates(candidates)
        return build_graph(candidates, self.proximities_for(candidates))

    def run(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | None = None,
        top_n: int | None = None,
    ) -> Reranking:
        """:meth:`rerank` plus what the graph was (edges per kind, proximities used)."""
        if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
            candidates = list(candidates)  # named as a type error by the validation
        return self.run_pool(
            self.admit(candidates), query=query, query_embedding=query_embedding, top_n=top_n
        )

    def run_pool(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | None = None,
        top_n: int | None = None,
    ) -> Reranking:
        """:meth:`run` without the :attr:`max_candidates` cut: for callers that bounded the
        pool already and may have enlarged it since (expansion adds fetched objects)."""
        candidates, scores = _validated(candidates)
        if top_n is not None and (
            isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 0
        ):
            raise InputError(f"top_n must be a non-negative integer or None, got {top_n!r}")
        if not candidates:
            return Reranking([], top_n=top_n)
        seeds = make_seeds(candidates, self.seed_policy, scores)
        seen = _clipped(candidates, self.max_chars_per_doc)  # what the graph and ranker read
        proximities = self.proximities_for(seen)
        graph, counts = _graph_with_counts(seen, proximities)
        self._diagnose(seen, proximities, graph, counts, top_n)
        context = RankContext(seen, query, query_embedding)
        ranked = np.asarray(self.ranker.rank(graph, seeds, context), dtype=np.float64).ravel()
        if ranked.shape != seeds.shape or not np.all(np.isfinite(ranked)):
            raise InputError(
                f"ranker {self.ranker.name!r} returned {ranked.shape[0]} scores for "
                f"{len(candidates)} candidates, or non-finite scores"
            )
        relevance = relevance_scores(self.ranker, ranked, seeds)
        edges = {kind: int(matrix.nnz) for kind, matrix in graph.by_kind.items()}
        out = _ranked(candidates, graph, ranked, top_n, self.explain, relevance)
        threshold = self.score_threshold
        if threshold is not None:  # relevance rises with the score: a cut of the tail
            out = [r for r in out if (r.score if r.relevance is None else r.relevance) >= threshold]
        return Reranking(out, edges, proximities, graph, seeds, ranked, top_n)

    def _say_alone_weight(self, graph: CandidateGraph, candidates: Sequence[Candidate]) -> None:
        """Say once per share when the ranker damps the pool's only kind of edge (chunk order
        alone, under the default GCS): the edges are there, and why they move little is not a
        mystery."""
        share_of = getattr(self.ranker, "alone_share", None)
        alone = share_of(graph, candidates) if callable(share_of) else None
        if alone is None or alone[1] >= 1.0:
            return
        kind, share = alone
        size = "sentence-sized" if sentence_sized(candidates) else "passage-sized"
        self.diagnostics.info_once(
            ("alone-weight", kind, share),
            f"only {kind} edges in this pool of {size} chunks: GCS passes on {share:g} of their "
            "share (GCSRanker.alone_weights), so a chunk whose only support is its neighbour "
            "stays out of the retriever's top 5 and rises within the top 10 at most; "
            "ranker=GCSRanker(alone_weights={}) lets the neighbours of the best chunks rise "
            "further (grapher eval measures both on your questions)",
        )

    def _diagnose(
        self,
        candidates: Sequence[Candidate],
        proximities: Sequence[Any],
        graph: CandidateGraph,
        counts: Sequence[int],
        top_n: int | None,
    ) -> None:
        """Report silent no-ops; a graph with edges from every proximity costs a few checks."""
        n = len(candidates)
        self._say_alone_weight(graph, candidates)
        if check_pool(self.diagnostics, n, top_n) or (graph.n_edges and all(counts)):
            return  # a pool too small to lift anything is that one cause, said alone
        explained = check_graph(self.diagnostics, candidates, proximities, dict(enumerate(counts)))
        if (
            not explained
            and graph.n_edges == 0
            and getattr(self.ranker, "name", "") != "baseline"
            and not builds_own_graph(self.ranker)
        ):
            if not proximities:
                self.diagnostics.report(
                    ("no-proximities",),
                    "no proximities given and none detected from the "
                    "metadata (no foreign_keys, links, mentions, entities "
                    "or doc_id + chunk_index): the order is the "
                    "retriever's; pass proximities=[...]",
                )
            else:
                self.diagnostics.report(
                    ("no-edges",),
                    f"the graph has 0 edges over {n} candidates "
                    f"({describe(proximities)}): the order is the "
                    "retriever's",
                )

    @classmethod
    def from_config(cls, path: Any, **options: Any) -> GraphReranker:
        """The reranker a ``grapher eval --write-config`` file describes (validated by
        :func:`grapher_core.ranking.config.load_config`); ``options`` add or override
        constructor arguments. ``keep_retriever_order: true`` loads the ``"baseline"`` ranker
        over rank seeds: the input order, unchanged. The config's ``top_n`` is for
        ``rerank(top_n=...)``."""
        from grapher_core.ranking.config import core_options, load_config

        return cls(**{**core_options(load_config(path)), **options})


def _move(before: int, after: int) -> str:
    return MOVES[0] if after < before else MOVES[1] if after > before else MOVES[2]


def _bound(name: str, value: object) -> int | None:
    """A positive integer bound or ``None``."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{name} must be an integer >= 1 or None, got {value!r}")
    return value


def _clipped(candidates: list[Candidate], max_chars: int | None) -> list[Candidate]:
    """The candidates as the graph and ranker read them: texts cut to ``max_chars``."""
    if max_chars is None or all(len(c.text) <= max_chars for c in candidates):
        return candidates
    return [
        c
        if len(c.text) <= max_chars
        else Candidate(c.id, clip_text(c.text, max_chars), c.score, c.metadata, c.embedding)
        for c in candidates
    ]


def check_proximities(proximities: object) -> tuple[Proximity, ...]:
    """The proximities as a tuple, each an instance with ``kind``, ``weight`` and
    ``adjacency(candidates)``; a class given instead of an instance is named as such."""
    if isinstance(proximities, (str, bytes)) or not isinstance(proximities, Iterable):
        raise InputTypeError(f"proximities must be a list of proximities, got {proximities!r}")
    items = tuple(proximities)
    for proximity in items:
        if isinstance(proximity, type):
            raise InputTypeError(
                f"{proximity.__name__} is a class: pass an instance, {proximity.__name__}()"
            )
        if not isinstance(proximity, Proximity):
            raise InputTypeError(
                f"{proximity!r} is not a proximity: it needs `kind`, `weight` "
                "and `adjacency(candidates)`"
            )
    return items


def validate_candidates(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Check types, ids and scores up front so errors name the problem, not a deep frame."""
    return _validated(candidates)[0]


def _validated(candidates: Sequence[Candidate]) -> tuple[list[Candidate], np.ndarray | None]:
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
        candidates = list(candidates)
    items = list(candidates)
    # The common case checked in bulk (C-level map/set passes, no per-item Python frame):
    # only Candidates, non-empty string ids, all distinct, all scores floats.
    if set(map(type, items)) == {Candidate}:
        ids = list(map(_ID, items))
        if set(map(type, ids)) == {str} and all(ids) and len(set(ids)) == len(ids):
            scores = list(map(_SCORE, items))
            if set(map(type, scores)) == {float}:
                array = np.array(scores, dtype=np.float64)
                if np.isfinite(array.sum()) or np.all(np.isfinite(array)):
                    return items, array
            return items, original_scores(items)
    for position, candidate in enumerate(items):
        if not isinstance(candidate, Candidate):
            raise InputTypeError(
                f"candidate at position {position} is a {type(candidate).__name__}, "
                "not a grapher_core.Candidate"
            )
        if not isinstance(candidate.id, str) or not candidate.id:
            raise InputError(f"candidate at position {position} has an empty or non-string id")
    if len({c.id for c in items}) != len(items):
        duplicates = [i for i, count in Counter(c.id for c in items).items() if count > 1]
        raise InputError(f"duplicate candidate ids: {_names(duplicates)}")
    return items, original_scores(items)  # raises on partial, NaN, inf or non-numeric scores


_ID = attrgetter("id")
_SCORE = attrgetter("score")


def _graph_with_counts(
    candidates: Sequence[Candidate], proximities: Sequence[Any]
) -> tuple[CandidateGraph, list[int]]:
    """The graph, and how many edges each proximity gave (for the diagnostics)."""
    if len(proximities) <= 1 or len({p.kind for p in proximities}) == len(proximities):
        graph = build_graph(candidates, proximities)
        return graph, [
            int(graph.by_kind[p.kind].nnz) if p.kind in graph.by_kind else 0 for p in proximities
        ]
    counts = [int(build_graph(candidates, [p]).n_edges) for p in proximities]
    return build_graph(candidates, proximities), counts


def _ranked(
    candidates: Sequence[Candidate],
    graph: CandidateGraph,
    scores: np.ndarray,
    top_n: int | None,
    explain: int,
    relevance: np.ndarray | None = None,
) -> list[RankedCandidate]:
    n = len(candidates)
    order = np.lexsort((np.arange(n), -scores))  # best score first; ties keep the input order
    if top_n is not None:
        order = order[:top_n]
    explanations = _explanations(graph, scores, order, explain) if explain else {}
    # Python floats and ints in one conversion each, not one numpy scalar per field.
    new_scores = scores[order].tolist()
    new_relevance = new_scores if relevance is None else relevance[order].tolist()
    ranked = []
    for new_rank, (i, score, relevant) in enumerate(
        zip(order.tolist(), new_scores, new_relevance, strict=True)
    ):
        candidate = candidates[i]
        ranked.append(
            RankedCandidate(
                id=candidate.id,
                score=score,
                original_score=None if candidate.score is None else float(candidate.score),
                rank=new_rank + 1,
                original_rank=i + 1,
                candidate=candidate,
                explanation=explanations.get(i, ()),
                relevance=relevant,
            )
        )
    return ranked


def _explanations(
    graph: CandidateGraph, scores: np.ndarray, rows: np.ndarray, limit: int
) -> dict[int, tuple[Contribution, ...]]:
    """For each returned candidate, the neighbours with the largest weighted share of score.

    The share of neighbour j in i's score is ``W[i, j] * score[j]`` with ``W`` the row-normalised
    adjacency -- exactly GCS's smoothing term up to the factor ``1 - alpha``, and a faithful
    reading of "who lifted it" for the other rankers. Rows are read straight from the csr
    arrays: only the returned candidates' rows are touched.
    """
    if graph.n_edges == 0 or rows.size == 0:
        return {}
    adjacency = graph.adjacency
    kinds = list(graph.by_kind.items())
    # All returned rows at once: their csr segments, one share per edge, then per row the
    # ``limit`` largest, ties in column order.
    indptr = adjacency.indptr
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    total = int(lengths.sum())
    if total == 0:
        return {}
    segment = np.repeat(np.arange(rows.size), lengths)
    offsets = np.cumsum(lengths) - lengths
    position = np.arange(total) - np.repeat(offsets, lengths)
    entries = np.repeat(starts, lengths) + position
    weights = adjacency.data[entries]
    row_sums = np.bincount(segment, weights=weights, minlength=rows.size)
    shares = weights * scores[adjacency.indices[entries]] / row_sums[segment]
    picked = _top_per_row(shares, segment, position, offsets, lengths, limit)
    neighbours = adjacency.indices[entries[picked]]
    ids = graph.ids
    out: dict[int, tuple[Contribution, ...]] = {}
    single_kind: tuple[str, ...] | None = (kinds[0][0],) if len(kinds) == 1 else None
    picked_segment = segment[picked].tolist()
    picked_neighbour = neighbours.tolist()
    picked_weight = weights[picked].tolist()
    picked_share = shares[picked].tolist()
    row_list = rows.tolist()
    for k, s in enumerate(picked_segment):
        i, j = row_list[s], picked_neighbour[k]
        if single_kind is not None:
            kind = single_kind
        else:
            kind = tuple(name for name, m in kinds if j in m.indices[m.indptr[i] : m.indptr[i + 1]])
        contribution = Contribution(
            neighbour_id=ids[j],
            kinds=kind,
            edge_weight=picked_weight[k],
            contribution=picked_share[k],
        )
        out[i] = (*out.get(i, ()), contribution)
    return out


def _top_per_row(
    shares: np.ndarray,
    segment: np.ndarray,
    position: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
    limit: int,
) -> np.ndarray:
    """Indices into ``shares`` of each segment's ``limit`` largest, segment by segment, best
    first, ties in position order.

    Few long rows (the returned top_n of a dense graph): a (rows x longest) grid padded with
    -inf and ``limit`` rounds of argmax (the first maximum: ties keep their order), each taken
    entry then set to -inf. A sort of every segment gives the same answer but costs ~4x as
    much inside a real rerank (its comparisons mispredict once the data leave the branch
    predictor); it is kept for short segments (cheaper there), long lists, and grids that
    would be large (many long rows: ``top_n=None``).
    """
    rows, longest = lengths.size, int(lengths.max())
    if shares.size < 512 or limit > 8 or rows * longest > 4 * shares.size + 4096:
        return np.lexsort((-shares, segment))[position < limit]  # stable: ties keep order
    grid = np.full((rows, longest), -np.inf)
    grid[segment, position] = shares
    every_row = np.arange(rows)
    rounds = []
    for k in range(min(limit, longest)):
        column = grid.argmax(axis=1)
        live = lengths > k  # rows with a k-th entry left
        rounds.append(offsets[live] + column[live])
        grid[every_row, column] = -np.inf
    chosen = np.concatenate(rounds)
    return chosen[np.argsort(segment[chosen], kind="stable")]
