"""The expander: the k-hop link neighbours of the top candidates, as steps of a call.

Each hop is one :class:`~grapher_core.request.needs.Fetch` of the frontier's link keys (hubs
skipped, bounded by :class:`~grapher_core.expand.reach.Expansion`), the fetched objects' missing
vectors one :class:`~grapher_core.request.needs.Embed`; pruning and the budget keep the most
query-similar. The door answers the IO; every decision is here.
"""

from __future__ import annotations

import inspect
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any, Protocol

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.diagnostics import Diagnostics
from grapher_core.edges.base import LinkKey, Proximity
from grapher_core.errors import ConfigError, InputTypeError
from grapher_core.expand.links import linkable
from grapher_core.expand.reach import Expansion, ExpansionResult, HubKeys, check_expansion
from grapher_core.expand.seeding import calibration, cosines, seed_scores, unit
from grapher_core.expand.source import (
    NeighbourSource,
    canonical_key,
    check_fetched,
    field_values,
    shown_key,
)
from grapher_core.ranking.seeds import original_scores, rank_seeds
from grapher_core.request.call import Call, Steps
from grapher_core.request.door import DoorIO, run_call
from grapher_core.request.needs import Embed, Embedded, Fetch
from grapher_core.request.validation import validate_candidates
from grapher_core.utils.text import clean_texts
from grapher_core.vectors import check_batch

__all__ = ["GraphExpander", "fetch_options"]


class _Embedder(Protocol):
    def embed_documents(self, texts: list[str]) -> Any: ...


@dataclass
class _Walk:
    """One expansion's state, hop to hop: what is known, what was added, what it cost."""

    links: list[Any]
    query: Any
    known_ids: set[str]
    known_keys: set[LinkKey] = field(default_factory=set)
    frontier: list[Candidate] = field(default_factory=list)
    added: list[Candidate] = field(default_factory=list)
    similarity: dict[str, float] = field(default_factory=dict)
    hub_keys: dict[LinkKey, None] = field(default_factory=dict)
    calls: int = 0
    fetched: int = 0
    started: float | None = None
    stopped: str | None = None

    def learn(self, candidate: Candidate) -> None:
        """Its own link keys are known: a hop never fetches what is already in hand."""
        for proximity in self.links:
            self.known_keys.update(canonical_key(k) for k in proximity.own_keys(candidate))


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
        expansion = check_expansion(expansion)
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
        self._options = fetch_options(source.fetch)

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
        query = unit(query_embedding)
        if not items or self.expansion.budget == 0:
            return ExpansionResult(tuple(items), (), 0, 0)
        walk = self._walk(items, scores, query)
        for hop in range(self.expansion.hops):
            keys = self._hop_keys(walk)
            room = self.expansion.budget - len(walk.added)
            if not keys or room <= 0:
                break
            if walk.started is not None and self._late(hop, walk.started, walk.fetched):
                walk.stopped = "max_seconds"
                break
            # Score first (the kept ones read in full after) when the hop may bring more
            # objects than it keeps: about one object per key.
            partial = query is not None and "full" in self._options and len(keys) > room
            fetched = yield from self._hop_fetch(walk, hop, keys, partial)
            frontier = yield from self._hop_keep(walk, fetched, room, partial, fallback)
            walk.frontier = frontier
            walk.added.extend(frontier)
            if not frontier or walk.stopped is not None:
                break
        return self._result(items, scores, walk)

    def _walk(self, items: list[Candidate], scores: np.ndarray | None, query: Any) -> _Walk:
        """A walk from the top ``seeds`` candidates, their own link keys already known."""
        links = [
            p.for_candidates(items) if callable(getattr(p, "for_candidates", None)) else p
            for p in self.links
        ]
        walk = _Walk(links=links, query=query, known_ids={c.id for c in items})
        for candidate in items:
            walk.learn(candidate)
        order = range(len(items)) if scores is None else np.argsort(-scores, kind="stable")
        walk.frontier = [items[int(i)] for i in list(order)[: self.expansion.seeds]]
        return walk

    def _hop_keys(self, walk: _Walk) -> list[LinkKey]:
        """The frontier's unknown link keys, hubs (known from earlier queries) left out."""
        keys = self._keys(walk.frontier, walk.known_keys, walk.links)
        if self.expansion.max_per_key is None:
            return keys
        hubs = [k for k in keys if self.hubs.count(k) > self.expansion.max_per_key]
        walk.hub_keys.update(dict.fromkeys(hubs))
        return [k for k in keys if k not in walk.hub_keys]

    def _hop_fetch(
        self, walk: _Walk, hop: int, keys: list[LinkKey], partial: bool
    ) -> Steps[list[Candidate]]:
        """One hop's fetch, cut at ``max_fetched`` (said once) and without hub-only objects."""
        limit = None
        if self.expansion.max_fetched is not None:
            limit = self.expansion.max_fetched - walk.fetched
        if walk.started is None:
            walk.started = time.monotonic()
        fetched = yield from self._fetch(keys, limit, full=not partial)
        walk.known_keys.update(keys)
        walk.calls += 1
        walk.fetched += len(fetched)
        if limit is not None and len(fetched) >= limit:
            fetched = fetched[:limit]
            walk.stopped = "max_fetched"
            self._said_fetched(hop, limit)
        fetched, hubs = self._without_hubs(fetched, keys)
        walk.hub_keys.update(dict.fromkeys(hubs))
        return fetched

    def _hop_keep(
        self,
        walk: _Walk,
        fetched: list[Candidate],
        room: int,
        partial: bool,
        fallback: object | None,
    ) -> Steps[list[Candidate]]:
        """The new objects this hop keeps: pruned, the most query-similar first, at most
        ``room``; read in full when the fetch was partial; remembered by the walk."""
        fresh: dict[str, Candidate] = {}
        for obj in fetched:
            if obj.id and obj.id not in walk.known_ids:
                fresh.setdefault(obj.id, obj)
        new = yield from self._with_embeddings(list(fresh.values()), walk.query, fallback)
        sims = cosines(new, walk.query)
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
            walk.calls += read
        for candidate in frontier:
            walk.known_ids.add(candidate.id)
            if candidate.id in kept_sims:
                walk.similarity[candidate.id] = kept_sims[candidate.id]
            walk.learn(candidate)
        return frontier

    def _result(
        self, items: list[Candidate], scores: np.ndarray | None, walk: _Walk
    ) -> ExpansionResult:
        """The candidates plus what the walk added, seeded (see the module docstring)."""
        added, similarity = walk.added, walk.similarity
        if (
            scores is None
            and added
            and all(c.id in similarity for c in added)
            and calibration(items, rank_seeds(len(items)), walk.query) is not None
        ):
            # No retriever scores: candidates keep their rank seeds, now written as scores, so
            # fetched objects can be placed among them by query similarity.
            scores = rank_seeds(len(items))
            items = [
                Candidate(c.id, c.text, float(s), c.metadata, c.embedding)
                for c, s in zip(items, scores, strict=True)
            ]
        scored = seed_scores(
            items, scores, added, similarity, walk.query, floor=self.expansion.seed_rule == "floor"
        )
        return ExpansionResult(
            tuple(items) + tuple(scored),
            tuple(c.id for c in scored),
            walk.calls,
            walk.fetched,
            similarity,
            walk.stopped,
            tuple(walk.hub_keys),
            0.0 if walk.started is None else time.monotonic() - walk.started,
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
            f"link key {shown_key(hubs[0])} matched {counts[hubs[0]]} objects in one fetch, more "
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
                    canonical = canonical_key(key)
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
        names = [new[i].id for i in missing]
        texts = clean_texts([new[i].text for i in missing], names, "the embedding model")
        answer = yield Embed(tuple(texts), None, fallback)
        if not isinstance(answer, Embedded) or answer.vectors is None:
            return new  # the door has no model: the objects are seeded without a cosine
        vectors = check_batch(
            answer.vectors, len(missing), query.shape[0], names=[repr(n) for n in names]
        )
        out = list(new)
        for i, vector in zip(missing, vectors, strict=True):
            c = new[i]
            out[i] = Candidate(c.id, c.text, c.score, c.metadata, vector)
        return out


def fetch_options(fetch: Callable[..., Any]) -> frozenset[str]:
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
