"""Say what happened: the silent no-ops of a first pipeline, reported once, or raised.

A misspelled metadata field, links that name no candidate, a graph without edges, a proximity
that needs vectors and got none, a pool too small to lift anything: each still returns a
ranking, so without a word it looks like success. :class:`Diagnostics` reports each *cause*
once per reranker (through :mod:`logging`, logger ``"grapher"``, and :mod:`warnings`, category
:class:`GraphERWarning`), or raises :class:`GraphERDiagnosticError` when ``strict=True``.

The checks read only what the reranker already has (matrix sizes, the metadata of the
candidates on the failure path), so a healthy call pays a few comparisons.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from grapher_core.candidates import Candidate
from grapher_core.edges.keys import ForeignKeys
from grapher_core.edges.semantic import SemanticKNN
from grapher_core.errors import GraphERError
from grapher_core.metadata import read_list
from grapher_core.utils.callsite import stacklevel_outside, warn

__all__ = [
    "CorpusFacts",
    "Diagnostics",
    "GraphERDiagnosticError",
    "GraphERWarning",
    "RankerUnfitWarning",
    "logger",
    "proximity_fields",
    "stacklevel_outside",
]

RESERVED_PREFIX = "_grapher"
"""Fields the wrappers fill themselves when the data allows (e.g. LlamaIndex relationships):
their absence is no mistake of the user's, so it is not reported."""
logger = logging.getLogger("grapher")
logger.addHandler(logging.NullHandler())  # a library: records go to the app's handlers


class GraphERWarning(UserWarning):
    """Category of every warning GraphER itself raises: filter it to silence GraphER only."""


class RankerUnfitWarning(GraphERWarning):
    """A ranker says it does not fit these inputs (a shipped checkpoint on edges it was never
    trained on, or measured below the retriever on data like these): ``grapher eval`` and
    ``evaluate_retriever`` never choose a configuration whose ranker raised it. A stable
    category, so nothing has to match the warning's words."""


class GraphERDiagnosticError(GraphERError, ValueError):
    """``strict=True``: a silent no-op (no field, no edges, no vectors...) became an error."""


@dataclass(frozen=True)
class CorpusFacts:
    """What is known of the whole corpus beyond one pool (an evaluation knows it; a reranker
    alone does not): its size, how many objects carry a non-empty value of each field, and
    its ids -- so a pool where no object links is told apart from a field nobody wrote."""

    size: int
    fields: Mapping[str, int] = field(default_factory=dict)
    ids: frozenset[str] = field(default=frozenset(), repr=False)

    @classmethod
    def of(cls, objects: Iterable[tuple[str, Mapping[str, Any]]]) -> CorpusFacts:
        """The facts of ``(id, metadata)`` pairs."""
        counts: dict[str, int] = {}
        ids: set[str] = set()
        for object_id, metadata in objects:
            ids.add(object_id)
            for key, value in metadata.items():
                if value not in (None, "", [], (), "[]"):
                    counts[str(key)] = counts.get(str(key), 0) + 1
        return cls(len(ids), counts, frozenset(ids))


class Diagnostics:
    """Reports each cause once (thread-safe); ``strict`` raises instead.

    ``cause`` is any hashable key (e.g. ``("field-absent", 0)``); the same cause
    is said once for the life of this object, whatever the number of calls.
    """

    def __init__(
        self, strict: bool = False, owner: str = "GraphReranker", corpus: CorpusFacts | None = None
    ) -> None:
        self.strict = strict
        self.owner = owner
        #: what is known of the corpus beyond the pool (set by an evaluation), or ``None``
        self.corpus = corpus
        self._said: set[Hashable] = set()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (a reranker sent to a worker process): the lock stays behind."""
        with self._lock:
            return {
                "strict": self.strict,
                "owner": self.owner,
                "said": set(self._said),
                "corpus": self.corpus,
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            strict=state["strict"], owner=state["owner"], corpus=state.get("corpus")
        )
        self._said = set(state["said"])

    @property
    def said(self) -> frozenset[Hashable]:
        """The causes reported so far (for tests and dashboards)."""
        with self._lock:
            return frozenset(self._said)

    def done(self, cause: Hashable) -> bool:
        """True when ``cause`` was already reported (skip the work of explaining it again)."""
        return not self.strict and cause in self._said

    def report(self, cause: Hashable, message: str) -> None:
        """Warn once for ``cause`` (logging + warnings), or raise under ``strict``.

        The warning points at the user's call: the first frame outside GraphER's packages and
        the frameworks calling it, also from async paths (:mod:`grapher_core.utils.callsite`).
        """
        if self.strict:
            raise GraphERDiagnosticError(f"{self.owner}: {message}")
        self.bound(cause, message)

    def bound(self, cause: Hashable, message: str) -> None:
        """Warn once for ``cause``, also under ``strict``: a bound that did its job (an
        expansion budget reached) is a choice the caller made, not a silent mistake, and a
        time budget hit depends on the machine's load -- raising on it would fail at random."""
        with self._lock:
            if cause in self._said:
                return
            self._said.add(cause)
        logger.warning("%s: %s", self.owner, message)
        warn(f"{self.owner}: {message}", GraphERWarning)

    def info_once(self, cause: Hashable, message: str) -> None:
        """Log (INFO, never a warning or an error) once per cause: choices made for the user."""
        with self._lock:
            if cause in self._said:
                return
            self._said.add(cause)
        logger.info("%s: %s", self.owner, message)


def proximity_fields(proximity: Any) -> tuple[str, ...]:
    """The metadata fields a proximity reads, from its declared attributes (``field``,
    ``target_field``, ``doc_field``, ``index_field``); empty for proximities without them."""
    names = []
    for attribute in ("field", "doc_field", "index_field"):
        value = getattr(proximity, attribute, None)
        if isinstance(value, str) and value:
            names.append(value)
    return tuple(names)


def _present(candidates: Sequence[Candidate], field: str) -> bool:
    return any(c.metadata.get(field) not in (None, "", [], ()) for c in candidates)


def _keys_seen(candidates: Sequence[Candidate], limit: int = 8) -> str:
    seen: dict[str, None] = {}
    for candidate in candidates:
        for key in candidate.metadata:
            if not str(key).startswith("_"):
                seen[str(key)] = None
    names = sorted(seen)
    shown = ", ".join(repr(k) for k in names[:limit])
    if len(names) > limit:
        shown += f" and {len(names) - limit} more"
    return shown or "none"


def check_graph(
    diagnostics: Diagnostics,
    candidates: Sequence[Candidate],
    proximities: Sequence[Any],
    edges: Mapping[int, int],
) -> bool:
    """The per-proximity causes; ``edges`` = edge count per proximity position. Returns True
    when a specific cause explains an empty proximity (reported now or before), so the caller
    does not add a generic "0 edges" warning for the same problem.

    Only proximities that produced no edge are looked at, and a cause already reported is not
    worked out again, so a working graph costs one pass over ``edges``.
    """
    n = len(candidates)
    explained = False
    for position, proximity in enumerate(proximities):
        if edges.get(position, 0) or n < 2:
            continue
        name = type(proximity).__name__
        if getattr(proximity, "needs_embeddings", False) or isinstance(proximity, SemanticKNN):
            with_vectors = sum(1 for c in candidates if c.embedding is not None)
            if with_vectors < 2:
                explained = True
                diagnostics.report(
                    ("no-vectors", position),
                    f"{name} needs vectors but only {with_vectors} of {n} "
                    "candidates have an embedding: pass embeddings (or an "
                    "embedding model to the wrapper)",
                )
            continue
        if any(
            diagnostics.done((cause, position))
            for cause in ("field-absent", "no-links-here", "unresolved-links")
        ):
            explained = True
            continue
        fields = proximity_fields(proximity)
        if fields and all(f.startswith(RESERVED_PREFIX) for f in fields):
            continue  # a wrapper's own optional edges (LlamaIndex relationships): no field, fine
        absent = [f for f in fields if not _present(candidates, f)]
        if absent:
            explained = True
            _say_absent(diagnostics, position, name, absent, candidates)
            continue
        if isinstance(proximity, ForeignKeys):
            found = unresolved_links(proximity, candidates, diagnostics.corpus)
            if found is not None:
                explained = True
                hint, mistake = found
                if mistake:
                    diagnostics.report(("unresolved-links", position), hint)
                else:
                    diagnostics.bound(("unresolved-links", position), hint)
    return explained


def _say_absent(
    diagnostics: Diagnostics,
    position: int,
    name: str,
    absent: Sequence[str],
    candidates: Sequence[Candidate],
) -> None:
    """A proximity's fields hold nothing in this pool. When each is empty on these candidates
    (an empty link list), or carried by other objects of the corpus (a writer that drops
    empty lists leaves the field off objects that link nowhere), this pool simply has no such
    edges: said as that, once, and never an error. Otherwise the field may be misspelled or
    never written: said as a mistake (an error under ``strict``)."""
    corpus = diagnostics.corpus
    empty = [f for f in absent if any(f in c.metadata for c in candidates)]
    elsewhere = [f for f in absent if corpus is not None and corpus.fields.get(f)]
    if all(f in empty or f in elsewhere for f in absent):
        facts = [f"field {f!r} is empty on all {len(candidates)} candidates" for f in empty]
        facts += [
            f"{corpus.fields[f]:,} of the corpus's {corpus.size:,} objects carry {f!r}, none of "
            f"these {len(candidates)}"
            for f in elsewhere
            if f not in empty and corpus is not None
        ]
        diagnostics.bound(
            ("no-links-here", position),
            f"{name}: no links among these candidates ({'; '.join(facts)}): no such edges in "
            "this pool -- the data, not a missing field",
        )
        return
    diagnostics.report(
        ("field-absent", position),
        f"{name} reads metadata field(s) {', '.join(map(repr, absent))} but no candidate has "
        f"them (metadata keys seen: {_keys_seen(candidates)}); check the field name or enrich "
        "the objects first (a writer that drops empty lists, such as list_format='list' for "
        "Chroma, leaves the field off objects that link nowhere: if they were enriched, none of "
        "these links)",
    )


def _scalars(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if isinstance(v, (str, int)) and not isinstance(v, bool)]
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return [str(value)]
    return []


def matching_field(
    candidates: Sequence[Candidate], values: set[str], skip: tuple[str, ...] = ()
) -> str | None:
    """The metadata field whose values name the most of ``values`` (None when none does):
    where links point when they do not name candidate ids (e.g. a table name or a title)."""
    hits: dict[str, int] = {}
    for candidate in candidates:
        for key, value in candidate.metadata.items():
            if key in skip:
                continue
            found = sum(1 for v in _scalars(value) if v in values)
            if found:
                hits[key] = hits.get(key, 0) + found
    return max(hits, key=lambda k: (hits[k], k)) if hits else None


_SEPARATORS = "./#:"


def _shape(value: str) -> str:
    """The separators of an id, in order (``"shop.orders"`` -> ``"."``): how links that name
    ids of the same kind as the candidates' are recognised."""
    return "".join(ch for ch in value if ch in _SEPARATORS)


def unresolved_links(
    proximity: ForeignKeys, candidates: Sequence[Candidate], corpus: CorpusFacts | None = None
) -> tuple[str, bool] | None:
    """Why a :class:`ForeignKeys` with links found no edge, and whether it is a mistake
    (``False``: the links name objects outside the pool, which is the data). The
    ``target_field`` hint is given only where it applies: not when the links name corpus
    objects (``corpus`` known) or look like the candidates' own ids."""
    links = {link for c in candidates for link in read_list(c.metadata.get(proximity.field))}
    if not links:
        return None
    name = f"ForeignKeys({proximity.field!r})"
    sample_link = sorted(links)[0]
    target = proximity.target_field
    where = "candidate id" if target is None else f"value of field {target!r}"
    better = matching_field(candidates, links, skip=(proximity.field,))
    outside = target is None and corpus is not None and bool(links & corpus.ids)
    shapes = {_shape(c.id) for c in candidates} - {""}  # ids without separators tell nothing
    id_like = target is None and bool({_shape(v) for v in links} & shapes)
    mistake = True
    if better is not None and better != target:
        fix = (
            f"the links name values of metadata field {better!r}: use "
            f"ForeignKeys({proximity.field!r}, target_field={better!r})"
        )
    elif outside:
        fix, mistake = "they name objects of the corpus outside this pool: no such edge here", False
    elif id_like:
        fix = "they look like ids of objects outside the fetched pool (fetch more to link them)"
    else:
        fix = (
            "they may all point outside the fetched pool; if they name something else, "
            "set target_field to the metadata field they name"
        )
    sample_own = (
        candidates[0].id
        if target is None
        else (read_list(candidates[0].metadata.get(target)) or ["<absent>"])[0]
    )
    return (
        f"{name}: {len(links)} link values (e.g. {sample_link!r}) but none is a {where} "
        f"among the {len(candidates)} candidates (e.g. {sample_own!r}); {fix}"
    ), mistake


def check_pool(diagnostics: Diagnostics, n: int, top_n: int | None) -> bool:
    """A pool smaller than ``top_n * 2`` leaves the graph nothing to lift from below.

    Returns True when the pool is too small to lift anything at all (fewer than 2 candidates,
    or no more than ``top_n``): every object is returned whatever the graph, so the graph
    checks would only name a consequence of this one cause -- and on 2 nodes a field or
    ``target_field`` hint is a wrong lead -- and the caller skips them.
    """
    if top_n is not None and top_n > 0 and n < 2 * top_n:
        diagnostics.report(
            ("small-pool",),
            f"reranking {n} candidates for top_n={top_n}: the graph can only "
            "reorder what the retriever fetched, so fetch at least top_n * 2 "
            "(LangChain: search_kwargs={'k': ...} or GraphERRetriever(fetch_k=...)"
            "; LlamaIndex: similarity_top_k=...)",
        )
    return n < 2 or (top_n is not None and n <= top_n)


def check_score_key(
    diagnostics: Diagnostics, key: str, metadata: Sequence[Mapping[str, Any]]
) -> None:
    """``score_key`` named but no object carries it: seeds silently come from rank."""
    numeric = sorted(
        {
            str(k)
            for m in metadata
            for k, v in m.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
    )
    hint = f" (numeric keys seen: {', '.join(map(repr, numeric[:6]))})" if numeric else ""
    diagnostics.report(
        ("score-key", key),
        f"score_key={key!r} but no document has it{hint}: seeds come from the input order",
    )


def check_relative_threshold(diagnostics: Diagnostics, threshold: float, policy: str) -> None:
    """A ``score_threshold`` over seeds made from the order (``1/rank``) or scaled to the pool
    (``minmax``) cuts a relative score: the first result is seeded 1.0 for any query, so a
    cut ported from an absolute-relevance reranker (FlashRank, Cohere) keeps a nonsense query's
    top few. Said once per threshold, never raised: the threshold may be meant that way."""
    diagnostics.bound(
        ("relative-threshold", threshold),
        f"score_threshold={threshold:g} cuts a relative score: with {policy} seeds the top "
        "result scores 1.0 for any query, so the cut keeps the first few plus what the graph "
        "lifts, however poor the match; for an absolute cut, seed from your retriever's or an "
        "upstream reranker's scores (seed_transform='raw', LangChain score_key=..., "
        "GraphERRetriever(seeds='score'))",
    )
