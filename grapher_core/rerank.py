"""GraphReranker: candidates -> graph -> ranker -> ranked candidates with explanations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from grapher_core.candidates import Candidate, RankedCandidate
from grapher_core.diagnostics import (
    Diagnostics,
    check_graph,
    check_pool,
    check_relative_threshold,
)
from grapher_core.edges.base import Proximity
from grapher_core.edges.detect import describe, detect_proximities, missing_order_hint
from grapher_core.edges.graph import CandidateGraph, build_graph
from grapher_core.edges.keys import AdjacentChunks
from grapher_core.edges.links import ChunkLinks
from grapher_core.errors import InputError, InputTypeError
from grapher_core.ranking.base import RankContext, Ranker, builds_own_graph, needs_embeddings
from grapher_core.ranking.calibration import relevance_scores, score_scale
from grapher_core.ranking.explain import ranked_candidates
from grapher_core.ranking.propagation import sentence_sized
from grapher_core.ranking.registry import make_ranker
from grapher_core.ranking.seeds import make_seeds, seed_policy
from grapher_core.request.call import Call, Steps
from grapher_core.request.door import DoorIO, run_call
from grapher_core.request.needs import Embed, Embedded, ReadStored
from grapher_core.request.result import Reranking
from grapher_core.request.validation import (
    check_bound,
    check_explain,
    check_proximities,
    check_score_threshold,
    check_seed_transform,
    validate_candidates,
    validated_candidates,
)
from grapher_core.vectors import (
    QUERY,
    VectorCache,
    check_vector,
    clip_text,
    fill_plan,
    plan_vectors,
)

__all__ = [
    "DEFAULT_MAX_CANDIDATES",
    "DEFAULT_MAX_CHARS_PER_DOC",
    "GraphReranker",
    "Reranking",
    "RerankingEngine",
]

T = TypeVar("T")

REEMBED_NOTE_AT = 10
"""Texts embedded in one call, for want of a store's vectors, from which the cost is said once:
a learned ranker then pays the whole pool's embedding on every new query."""

DEFAULT_MAX_CANDIDATES = 1000
"""The wrappers' default bound on the documents/nodes reranked per call: a retriever asked for
far more than a reranker can use (the paper reranks 200) costs graph building and embedding
time, and it is said once rather than paid silently. The core's own default is no bound."""
DEFAULT_MAX_CHARS_PER_DOC = 10_000
"""The wrappers' default cut of a text before it is embedded or read by a ranker (about 2,500
tokens: MiniLM reads only the first ~256, larger models rarely benefit more); outputs keep the
full text. It bounds the cost of a pathological document (a whole book in one chunk)."""


class RerankingEngine:
    """What every engine (:class:`GraphReranker`, the expanding and ego-graph ones) shares: a
    request is its :meth:`steps`; :meth:`call` makes them a sans-IO call for a door, and
    :meth:`run` answers that call with the engine's own IO (:meth:`own_io`)."""

    def steps(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | Sequence[float] | None = None,
        embedder: object | None = None,
        top_n: int | None = None,
    ) -> Steps[Reranking]:
        raise NotImplementedError

    def own_io(self) -> DoorIO:
        """The IO :meth:`run` answers with: no model but the core's own, no store; sources
        fetched directly."""
        return DoorIO()

    def call(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | Sequence[float] | None = None,
        embedder: object | None = None,
        top_n: int | None = None,
    ) -> Call[Reranking]:
        """One request over ``candidates``, sans-IO: it asks its door for what it needs
        (stored vectors, embeddings, fetches), then ranks. ``embedder`` names the door's model
        (the embedding space of the cache; the door does the embedding)."""
        return Call(
            self.steps(
                candidates,
                query=query,
                query_embedding=query_embedding,
                embedder=embedder,
                top_n=top_n,
            )
        )

    def run(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | None = None,
        top_n: int | None = None,
    ) -> Reranking:
        """:meth:`rerank` plus what the graph was (edges per kind, proximities used): the
        request's :meth:`call`, answered by :meth:`own_io`."""
        call = self.call(candidates, query=query, query_embedding=query_embedding, top_n=top_n)
        return run_call(call, self.own_io().answer)

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

    Every door runs a request as :meth:`call`: the call asks the door for the vectors it needs
    (stored, then embedded -- exactly the texts the cache does not hold) and ranks;
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
        self._seed_transform = check_seed_transform(value)

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
        self._explain = check_explain(value)

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
        self._max_candidates = check_bound("max_candidates", value)

    @property
    def max_chars_per_doc(self) -> int | None:
        """Texts are embedded and read by the ranker by their first ``max_chars_per_doc``
        characters; results keep the full text. ``None``: whole texts (the core's default)."""
        return self._max_chars_per_doc

    @max_chars_per_doc.setter
    def max_chars_per_doc(self, value: int | None) -> None:
        self._max_chars_per_doc = check_bound("max_chars_per_doc", value)

    @property
    def score_threshold(self) -> float | None:
        """Results whose relevance (``RankedCandidate.relevance``, the wrappers'
        ``relevance_score``) is below it are dropped after ranking; ``None``: keep all."""
        return self._score_threshold

    @score_threshold.setter
    def score_threshold(self, value: float | None) -> None:
        self._score_threshold = check_score_threshold(value)

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
            ordered = any(_states_order(p, keys) for p in self.proximities)
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

    def graph(self, candidates: Sequence[Candidate]) -> CandidateGraph:
        """The candidate graph the ranker sees (useful for inspection and plots)."""
        candidates = validate_candidates(candidates)
        return build_graph(candidates, self.proximities_for(candidates))

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
        if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
            candidates = list(candidates)  # named as a type error by the validation
        filled, vector = yield from self.vector_steps(
            self.admit(candidates), query=query, query_embedding=query_embedding, embedder=embedder
        )
        return self.run_pool(filled, query=query, query_embedding=vector, top_n=top_n)

    def vector_steps(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | Sequence[float] | None = None,
        embedder: object | None = None,
        needed: bool | None = None,
    ) -> Steps[tuple[list[Candidate], np.ndarray | None]]:
        """The candidates with the vectors the call reads filled in (given > stored > cached >
        embedded), and the query vector. Nothing is asked for when nothing reads vectors
        (``needed`` overrides: expansion always reads them); the door's ``embedder`` only keys
        the cache, the ranker's own is named as the fallback when the door has none."""
        needed = (self.needs_embeddings if needed is None else needed) and bool(candidates)
        if not needed:  # nothing reads vectors: nothing to ask, nothing to copy
            query_vector = None if query_embedding is None else check_vector(query_embedding, QUERY)
            return list(candidates), query_vector
        candidates = validate_candidates(candidates)
        stored = None
        without = tuple(c.id for c in candidates if c.embedding is None)
        if without:
            held = yield ReadStored(without)
            stored = None if held is None else (lambda _ids: held)
        plan = plan_vectors(
            candidates,
            needed=needed,
            embedder=embedder,
            fallback=self.embedding_model if needed and embedder is None else None,
            cache=self.vector_cache,
            query=query,
            query_embedding=query_embedding,
            stored=stored,
            max_chars=self.max_chars_per_doc,
        )
        if stored is None and len(plan.missing_texts) >= REEMBED_NOTE_AT:
            self.diagnostics.bound(
                ("re-embedding",),
                f"this call embeds {len(plan.missing_texts)} candidate texts that arrived "
                "without vectors and are not cached: every new pool costs its embedding "
                "(seconds per query on a CPU for long chunks). Hand the reranker the store's "
                "vectors instead -- LangChain: GraphERReranker(vector_store=store) or "
                "GraphERRetriever; LlamaIndex: GraphERPostprocessor(vector_store="
                "index.vector_store)",
            )
        answer = Embedded()
        if plan.missing_texts or plan.query_text is not None:
            answer = yield Embed(plan.missing_texts, plan.query_text, plan.fallback)
            if not isinstance(answer, Embedded):
                raise InputTypeError(f"an Embed need is answered with Embedded, got {answer!r}")
        return fill_plan(plan, answer.vectors, answer.query, self.vector_cache)

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
        candidates, scores = validated_candidates(candidates)
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
        out = ranked_candidates(candidates, graph, ranked, top_n, self.explain, relevance)
        threshold = self.score_threshold
        if threshold is not None:  # relevance rises with the score: a cut of the tail
            policy = "rank" if scores is None else self.seed_policy
            if policy in ("rank", "minmax") and score_scale(self.ranker) != "logit":
                check_relative_threshold(self.diagnostics, threshold, policy)
            out = [r for r in out if (r.score if r.relevance is None else r.relevance) >= threshold]
        return Reranking(out, edges, proximities, graph, seeds, ranked, top_n)

    def _say_alone_weight(self, graph: CandidateGraph, candidates: Sequence[Candidate]) -> None:
        """Say once per share when the ranker damps the pool's only kind of edge (chunk order
        alone, under the default GCS): the edges are there, and why they move little is not a
        mystery."""
        share_of = getattr(self.ranker, "alone_share", None)
        alone = share_of(graph, candidates) if callable(share_of) else None
        beside_of = getattr(self.ranker, "beside_shares", None)
        shares = beside_of(graph, candidates) if callable(beside_of) and alone is None else ()
        for kind, share in shares:
            self.diagnostics.info_once(
                ("beside-weight", kind, share),
                f"{kind} edges beside other kinds in this pool: GCS passes on {share:g} of "
                "their share (GCSRanker.beside_weights), so they carry a link's lift along the "
                "section it lands in without lifting the best chunk's neighbours past the "
                "retriever's next results; ranker=GCSRanker(beside_weights={}) passes it all",
            )
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

    def _say_links_without_order(
        self, graph: CandidateGraph, candidates: Sequence[Candidate], proximities: Sequence[Any]
    ) -> None:
        """Say once when links between chunked pages come without chunk order: a link then
        lands on one chunk and nothing carries it along its section, which is where links
        alone lost to the retriever on hyperlinked manuals; the hint names the fix."""
        cause = ("links-without-order",)
        contextual = graph.by_kind.get("contextual")
        if (
            self.diagnostics.done(cause)
            or not any(isinstance(p, ChunkLinks) for p in proximities)
            or (contextual is not None and contextual.nnz)
        ):
            return
        hint = missing_order_hint(candidates)
        if hint is not None:
            self.diagnostics.info_once(
                cause,
                "links between chunked pages but no chunk order: a link lifts the chunk it "
                "lands on and nothing carries it along its section (links alone were below "
                "the retriever at PR@10 on two hyperlinked manuals, docs/user_corpora.md); " + hint,
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
        self._say_links_without_order(graph, candidates, proximities)
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
                    "metadata (no foreign_keys, links, mentions, entities, "
                    "doc_id + chunk_index or source + start_index): the order is the "
                    "retriever's; pass proximities=[...]"
                    + (f"; {hint}" if (hint := missing_order_hint(candidates)) else ""),
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
        ``rerank(top_n=...)``. A config that expands is refused: this reranker has no
        neighbour source (``engine_for(RerankSettings.from_config(path), source)``, both in
        :mod:`grapher_core.request.settings`, builds one that expands)."""
        from grapher_core.ranking.config import core_options, load_config, refuse_unexpanded

        config = load_config(path)
        refuse_unexpanded(
            config,
            has_source=False,
            door="GraphReranker",
            fix="build the expanding reranker with engine_for(RerankSettings.from_config("
            "path), source) over your neighbour source (both in grapher_core.request.settings)",
            where=str(path),
        )
        return cls(**{**core_options(config), **options})


def _states_order(proximity: Any, keys: frozenset[str]) -> bool:
    """Whether a given proximity states chunk order in a pool whose metadata has ``keys``: a
    contextual one whose field the pool carries (LlamaIndex relationships on nodes that have
    none state nothing, and chunk order detected from metadata then stands)."""
    if getattr(proximity, "kind", None) != "contextual":
        return False
    field = getattr(proximity, "field", None)
    return not isinstance(field, str) or field in keys


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
