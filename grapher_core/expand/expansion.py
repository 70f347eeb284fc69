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

import inspect
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import product
from typing import Any, Protocol

import numpy as np

from grapher_core.candidates import Candidate, RankedCandidate
from grapher_core.diagnostics import Diagnostics
from grapher_core.edges.base import LinkKey, Proximity
from grapher_core.errors import ConfigError, InputError, InputTypeError, StateError
from grapher_core.expand.links import linkable
from grapher_core.expand.pruning import SoftPruner
from grapher_core.expand.source import NeighbourSource, check_fetched, field_values
from grapher_core.ranking.seeds import original_scores, rank_seeds
from grapher_core.request.call import Call, Steps
from grapher_core.request.door import DoorIO, run_call
from grapher_core.request.needs import Embed, Embedded, Fetch
from grapher_core.request.result import Reranking
from grapher_core.request.validation import validate_candidates
from grapher_core.rerank import GraphReranker, RerankingEngine
from grapher_core.utils.callsite import warn_once
from grapher_core.vectors import StoredVectors, VectorPlan, fill_plan

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
    "linkable",
]

DEFAULT_SEEDS = 3
DEFAULT_HOPS = 1
DEFAULT_BUDGET = 10
DEFAULT_MAX_FETCHED = 200
"""Most objects fetched per query: 20 times the objects a default query adds (``budget``), so
choosing the 10 most query-similar has a pool, while a store answer is never unbounded."""
DEFAULT_MAX_SECONDS = 0.2
"""Seconds after the first fetch of a query after which no hop starts: the default single hop
always runs; a second hop runs only if the first one took less."""
DEFAULT_MAX_PER_KEY = 50
"""A link key matching more objects than this is a hub (a category page, a list article) and
is skipped: it links everything and says nothing about any one object."""
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

    What one query may cost (``None``: no bound; each bound reached is said once):
    ``max_fetched`` (default 200): most objects fetched from the source over all hops;
    ``max_seconds`` (default 0.2): no hop starts this long after the query's first fetch (a
    fetch already running is not interrupted, so a query takes at most this plus one hop);
    ``max_per_key`` (default 50): a link key matching more objects in one fetch is a hub and
    its objects are skipped (kept only when another key found them too).
    """

    seeds: int = DEFAULT_SEEDS
    hops: int = DEFAULT_HOPS
    budget: int = DEFAULT_BUDGET
    prune_threshold: float | None = None
    reverse: bool = False
    follow_entities: bool = False
    seed_rule: str = "calibrated"
    max_fetched: int | None = DEFAULT_MAX_FETCHED
    max_seconds: float | None = DEFAULT_MAX_SECONDS
    max_per_key: int | None = DEFAULT_MAX_PER_KEY

    def __post_init__(self) -> None:
        for name, low in (("seeds", 1), ("hops", 1), ("budget", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"expansion {name} must be an integer >= {low}, got {value!r}")
        for name in ("max_fetched", "max_per_key"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ConfigError(
                    f"expansion {name} must be an integer >= 1 or None, got {value!r}"
                )
        seconds = self.max_seconds
        if seconds is not None:
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, (int, float))
                or not math.isfinite(float(seconds))
                or seconds <= 0
            ):
                raise ConfigError(
                    f"expansion max_seconds must be a finite number > 0 or None, got {seconds!r}"
                )
            object.__setattr__(self, "max_seconds", float(seconds))
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
    it cost: ``fetch_calls`` store round trips, ``fetched`` objects returned by the store,
    ``seconds`` from the first fetch to the end of the last hop; ``stopped`` names the bound
    that ended it early (``"max_fetched"`` or ``"max_seconds"``, else ``None``) and
    ``hub_keys`` the link keys skipped as hubs (found now or remembered)."""

    candidates: tuple[Candidate, ...]
    added: tuple[str, ...]
    fetch_calls: int
    fetched: int
    similarities: dict[str, float] = field(default_factory=dict)
    stopped: str | None = None
    hub_keys: tuple[LinkKey, ...] = ()
    seconds: float = 0.0


class HubKeys:
    """Link keys found to be hubs, with the number of objects they matched: later queries skip
    them before any fetch. Bounded (the oldest are forgotten first) and thread-safe; one is
    shared by the expanders a wrapper builds per call."""

    def __init__(self, size: int = 4096) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"HubKeys size must be an integer >= 1, got {size!r}")
        self.size = size
        self._counts: dict[LinkKey, int] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """Picklable and copyable (a wrapper sent to a worker): the lock stays behind."""
        with self._lock:
            return {"size": self.size, "counts": dict(self._counts)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["size"])  # type: ignore[misc]
        self._counts = dict(state["counts"])

    def __len__(self) -> int:
        return len(self._counts)

    def count(self, key: LinkKey) -> int:
        """Objects ``key`` was seen to match in one fetch (0: not known as a hub)."""
        return self._counts.get(key, 0)

    def add(self, key: LinkKey, count: int) -> None:
        """Remember ``key`` as matching at least ``count`` objects."""
        with self._lock:
            self._counts[key] = max(count, self._counts.pop(key, 0))
            while len(self._counts) > self.size:
                del self._counts[next(iter(self._counts))]


class GraphExpander:
    """Collect the k-hop link neighbours of the top candidates from a neighbour source.

    ``expansion``: how far and at what cost (:class:`Expansion`; default: its defaults);
    ``embedder``: embeds fetched objects the source returns without vectors (one batch per
    hop); ``diagnostics``: where a bound reached is said once (an :class:`ExpandingReranker`
    passes its reranker's); ``hubs``: the hub keys remembered across queries.
    """

    def __init__(
        self,
        proximities: Sequence[Proximity],
        source: NeighbourSource,
        expansion: Expansion | None = None,
        *,
        embedder: _Embedder | None = None,
        diagnostics: Diagnostics | None = None,
        hubs: HubKeys | None = None,
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
        if hubs is not None and not isinstance(hubs, HubKeys):
            raise InputTypeError(f"hubs must be a HubKeys, got {type(hubs).__name__}")
        self.expansion = expansion
        self.source = source
        self.embedder = embedder
        self.diagnostics = diagnostics or Diagnostics(owner="GraphExpander")
        self.hubs = HubKeys() if hubs is None else hubs
        self._options = _fetch_options(source.fetch)

    def expand(
        self, candidates: Sequence[Candidate], *, query_embedding: np.ndarray | None = None
    ) -> ExpansionResult:
        """Return the candidates plus their fetched link neighbours, with seed scores: the
        :meth:`steps`, answered by the source and this expander's ``embedder``."""
        return run_call(
            Call(self.steps(candidates, query_embedding=query_embedding)),
            DoorIO.of(self.embedder).answer,
        )

    def steps(
        self,
        candidates: Sequence[Candidate],
        *,
        query_embedding: np.ndarray | None = None,
        fallback: object | None = None,
    ) -> Steps[ExpansionResult]:
        """Expansion as steps of a call: one :class:`Fetch` per hop (and one to read the kept
        objects in full), one :class:`Embed` per hop for fetched objects without vectors
        (``fallback``: the embedder to use when the door has none)."""
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
        started: float | None = None
        stopped: str | None = None
        hub_keys: dict[LinkKey, None] = {}
        for hop in range(self.expansion.hops):
            keys = self._keys(frontier, known_keys, links)
            if self.expansion.max_per_key is not None:
                hubs = [k for k in keys if self.hubs.count(k) > self.expansion.max_per_key]
                hub_keys.update(dict.fromkeys(hubs))
                keys = [k for k in keys if k not in hub_keys]
            room = self.expansion.budget - len(added)
            if not keys or room <= 0:
                break
            if started is not None and self._late(hop, started, fetched_total):
                stopped = "max_seconds"
                break
            limit = None
            if self.expansion.max_fetched is not None:
                limit = self.expansion.max_fetched - fetched_total
            # Score first (the kept ones read in full after) when the hop may bring more
            # objects than it keeps: about one object per key.
            partial = query is not None and "full" in self._options and len(keys) > room
            if started is None:
                started = time.monotonic()
            fetched = yield from self._fetch(keys, limit, full=not partial)
            known_keys.update(keys)
            calls += 1
            fetched_total += len(fetched)
            if limit is not None and len(fetched) >= limit:
                fetched = fetched[:limit]
                stopped = "max_fetched"
                self._said_fetched(hop, limit)
            fetched, hubs = self._without_hubs(fetched, keys)
            hub_keys.update(dict.fromkeys(hubs))
            fresh: dict[str, Candidate] = {}
            for obj in fetched:
                if obj.id and obj.id not in known_ids:
                    fresh.setdefault(obj.id, obj)
            new = yield from self._with_embeddings(list(fresh.values()), query, fallback)
            sims = _cosines(new, query)
            keep = list(range(len(new)))
            if sims is not None:
                if self.expansion.prune_threshold is not None:
                    keep = [i for i in keep if sims[i] >= self.expansion.prune_threshold]
                keep.sort(key=lambda i: -sims[i])  # stable: fetch order among equals
            keep = keep[:room]
            frontier = [new[i] for i in keep]
            kept_sims = {} if sims is None else {new[i].id: float(sims[i]) for i in keep}
            if partial:
                frontier, read = yield from self._read_full(frontier)
                calls += read
            for candidate in frontier:
                known_ids.add(candidate.id)
                if candidate.id in kept_sims:
                    similarity[candidate.id] = kept_sims[candidate.id]
                for proximity in links:
                    known_keys.update(_canonical(k) for k in proximity.own_keys(candidate))
            added.extend(frontier)
            if not frontier or stopped is not None:
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
            stopped,
            tuple(hub_keys),
            0.0 if started is None else time.monotonic() - started,
        )

    def _fetch(
        self, keys: list[LinkKey], limit: int | None, *, full: bool
    ) -> Steps[list[Candidate]]:
        """One store call, asked of the door: ``limit`` and ``full=False`` are passed when
        ``fetch`` takes them; a source without ``limit`` is cut after the call."""
        options: dict[str, Any] = {}
        if limit is not None and "limit" in self._options:
            options["limit"] = limit
        if not full:
            options["full"] = False
        returned = yield Fetch(self.source, tuple(keys), options)
        return check_fetched(self.source, returned)

    def _read_full(self, kept: list[Candidate]) -> Steps[tuple[list[Candidate], int]]:
        """The kept objects a partial fetch returned without text, read by id in one call (one
        the store no longer holds is dropped); returns them and the number of calls made."""
        missing = [c.id for c in kept if not c.text]
        if not missing:
            return kept, 0
        found = yield from self._fetch([((None, i),) for i in missing], len(missing), full=True)
        read = {c.id: c for c in found}
        out = []
        for c in kept:
            if c.text:
                out.append(c)
            elif c.id in read:
                full = read[c.id]
                vector = c.embedding if full.embedding is None else full.embedding
                out.append(Candidate(c.id, full.text, None, full.metadata or c.metadata, vector))
        return out, 1

    def _late(self, hop: int, started: float, fetched: int) -> bool:
        """True (said once) when ``max_seconds`` passed since the first fetch: the hop is
        skipped and what was fetched so far is ranked."""
        limit = self.expansion.max_seconds
        elapsed = time.monotonic() - started
        if limit is None or elapsed < limit:
            return False
        self.diagnostics.bound(
            ("expansion-budget", "max_seconds"),
            f"expansion stopped at max_seconds={limit:g}: hop {hop + 1} of "
            f"{self.expansion.hops} would start {elapsed:.2f} s after the query's first fetch "
            f"({fetched} objects fetched so far, ranked as usual); raise "
            "Expansion(max_seconds=...) (wrappers: expand_max_seconds; None: no bound), "
            "or use fewer hops",
        )
        return True

    def _said_fetched(self, hop: int, limit: int) -> None:
        self.diagnostics.bound(
            ("expansion-budget", "max_fetched"),
            f"expansion reached max_fetched={self.expansion.max_fetched} objects fetched for "
            f"one query (hop {hop + 1} of {self.expansion.hops} was given {limit}): the store "
            "may hold more link neighbours, not fetched, and later hops are skipped; raise "
            "Expansion(max_fetched=...) (wrappers: expand_max_fetched; None: no bound), or "
            "expand from fewer seeds",
        )

    def _without_hubs(
        self, fetched: list[Candidate], keys: Sequence[LinkKey]
    ) -> tuple[list[Candidate], list[LinkKey]]:
        """Drop the objects only hub keys found (a key matching more than ``max_per_key``
        of them); the hubs are remembered and the first one found is said once. Id keys match
        one object at most and are never hubs."""
        cap = self.expansion.max_per_key
        wanted: dict[tuple[str | None, ...], dict[tuple[str, ...], LinkKey]] = {}
        for key in keys:
            if any(f is not None for f, _v in key):
                fields = tuple(f for f, _v in key)
                wanted.setdefault(fields, {})[tuple(v for _f, v in key)] = key
        if cap is None or not wanted or len(fetched) <= cap:
            return fetched, []
        found: list[set[LinkKey]] = []
        counts: Counter[LinkKey] = Counter()
        for obj in fetched:
            mine: set[LinkKey] = set()
            for fields, values in wanted.items():
                for combo in product(*(field_values(obj.id, obj.metadata, f) for f in fields)):
                    if combo in values:
                        mine.add(values[combo])
            found.append(mine)
            counts.update(mine)
        hubs = [k for k, n in counts.most_common() if n > cap]
        if not hubs:
            return fetched, []
        for key in hubs:
            self.hubs.add(key, counts[key])
        self.diagnostics.bound(
            ("expansion-hub",),
            f"link key {_shown(hubs[0])} matched {counts[hubs[0]]} objects in one fetch, more "
            f"than max_per_key={cap}: a hub (like a category page) links everything and says "
            "little about any one object, so its objects are skipped and such keys are not "
            "fetched again by this reranker; raise Expansion(max_per_key=...) (wrappers: "
            "expand_max_per_key; None: no cap) to follow them",
        )
        hub_set = set(hubs)
        kept = [o for o, mine in zip(fetched, found, strict=True) if not mine or mine - hub_set]
        return kept, hubs

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

    def _with_embeddings(
        self, new: list[Candidate], query: np.ndarray | None, fallback: object | None
    ) -> Steps[list[Candidate]]:
        """Fetched objects without vectors, embedded by the door (one batch per hop)."""
        missing = [i for i, c in enumerate(new) if c.embedding is None]
        if query is None or not missing:
            return new
        answer = yield Embed(tuple(new[i].text for i in missing), None, fallback)
        if not isinstance(answer, Embedded) or answer.vectors is None:
            return new  # the door has no model: the objects are seeded without a cosine
        vectors = np.asarray(answer.vectors, dtype=np.float32)
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
        steps = self.expander.steps(
            candidates, query_embedding=query_embedding, fallback=self.reranker.embedding_model
        )
        expansion = run_call(Call(steps), DoorIO.of(self.expander.embedder).answer)
        return self._ranked(candidates, expansion, plan.query, query_embedding, top_n)

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
        """:meth:`run` and the expansion's record (what was fetched, at what cost): the
        request's steps, answered by the source and this reranker's ``embedder``."""
        steps = self._steps(
            candidates, query=query, query_embedding=query_embedding, embedder=None, top_n=top_n
        )
        return run_call(Call(steps), DoorIO.of(self.expander.embedder).answer)

    def call(
        self,
        candidates: Sequence[Candidate],
        *,
        query: str | None = None,
        query_embedding: np.ndarray | Sequence[float] | None = None,
        embedder: object | None = None,
        top_n: int | None = None,
    ) -> Call[Reranking]:
        """One request, sans-IO (see :meth:`GraphReranker.call`): the candidates' vectors,
        then one fetch per hop (and the fetched objects' vectors), then the ranking."""
        return Call(
            self.steps(
                candidates,
                query=query,
                query_embedding=query_embedding,
                embedder=embedder,
                top_n=top_n,
            )
        )

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
            return replace(result, ranked=_marked(result.ranked, expansion))
        result = self.reranker.run_pool(
            list(expansion.candidates), query=query, query_embedding=query_embedding
        )
        alphas = self._alphas(expansion, query_embedding)
        pruned = _soft_pruned(result.ranked, alphas, self.drop_below, top_n)
        return replace(result, ranked=_marked(pruned, expansion), top_n=top_n)

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


def _fetch_options(fetch: Callable[..., Any]) -> frozenset[str]:
    """Which of the optional keywords ``limit`` and ``full`` a source's ``fetch`` takes (all of
    them through ``**kwargs``); read once per expander, not per call."""
    try:
        parameters = list(inspect.signature(fetch).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: assume the bare protocol
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return frozenset({"limit", "full"})
    return frozenset(
        p.name
        for p in parameters
        if p.name in ("limit", "full") and p.kind is not inspect.Parameter.POSITIONAL_ONLY
    )


def _shown(key: LinkKey) -> str:
    """A link key as a reader writes it: ``title='Films'``, ``doc_id='d' & chunk_index='3'``."""
    return " & ".join(f"{'id' if f is None else f}={v!r}" for f, v in key)


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
