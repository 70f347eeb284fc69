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

import hashlib
import json
import os
import tempfile
import warnings
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate, CorpusObject
from grapher_core.diagnostics import Diagnostics, GraphERWarning, stacklevel_outside
from grapher_core.edges.base import LinkKey
from grapher_core.errors import ConfigError, InputError, InputTypeError, SidecarError
from grapher_core.expand.expansion import marked
from grapher_core.expand.links import linkable
from grapher_core.expand.pruning import unit_rows
from grapher_core.expand.reach import ExpansionResult
from grapher_core.expand.relations import relations_between
from grapher_core.expand.seeding import seed_scores, unit
from grapher_core.expand.source import NeighbourSource, canonical_key, check_fetched
from grapher_core.ranking.seeds import original_scores
from grapher_core.request.call import Call, Steps
from grapher_core.request.door import run_call
from grapher_core.request.needs import Fetch
from grapher_core.request.result import Reranking
from grapher_core.request.validation import validate_candidates
from grapher_core.rerank import GraphReranker, RerankingEngine
from grapher_core.utils.npz import DEFAULT_MAX_NPZ_BYTES, MAX_WIDTH, ArraySpec, read_npz

__all__ = [
    "DEFAULT_MAX_MEMBERS",
    "DEFAULT_MAX_SIDECAR_BYTES",
    "MAX_VECTOR_DIM",
    "EgoGraphIndex",
    "EgoGraphReranker",
    "corpus_fingerprint",
    "corpus_links",
]

DEFAULT_MAX_MEMBERS = 30
"""Most objects per ego-graph (the centre, then neighbours hop by hop): hubs stay bounded."""

DEFAULT_MAX_SIDECAR_BYTES = DEFAULT_MAX_NPZ_BYTES
"""Most bytes loading a sidecar may hold, every working copy counted (checked from the zip
directory and the array headers before anything is read); ``EgoGraphIndex.load(path,
max_bytes=...)`` changes it."""

MAX_VECTOR_DIM = MAX_WIDTH
"""Widest ego-graph vector a sidecar may declare (65,536; MiniLM's are 384)."""

#: The fields of a sidecar ``.npz`` (``fingerprint`` is absent from files of older versions),
#: what each is returned as and what checking it costs: vectors come back as finite float64
#: (converted and checked while read), members are sorted once to find repeats (a few int64
#: copies), the ids are one JSON text parsed into Python strings (about ten times its bytes).
#: Real vectors compress about 1.1:1 (binary ones 30:1): a large member past 64:1 is a bomb.
_SIDECAR_FIELDS = {
    "vectors": ArraySpec(
        "f", 2, max_width=MAX_VECTOR_DIM, max_ratio=64, dtype="float64", finite=True
    ),
    "indptr": ArraySpec("iu", 1, max_ratio=256, dtype="int64", cost=2),
    "members": ArraySpec("iu", 1, max_ratio=256, dtype="int64", cost=5),
    "hops": ArraySpec("iu", 1, dtype="int64"),
    "ids": ArraySpec("U", 1, max_ratio=256, cost=10),
    "fingerprint": ArraySpec("U", 1),
}
_NORM_TOLERANCE = 1e-3  # float32 rows saved from unit float64 rows


def corpus_fingerprint(ids: Sequence[str]) -> str:
    """sha256 of the ids in order: two indexes (or an index and a corpus) with the same
    fingerprint hold the same objects in the same positions."""
    payload = json.dumps(list(ids)).encode("ascii")  # ASCII-escaped: lone surrogates too
    return hashlib.sha256(payload).hexdigest()


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
                index.setdefault(canonical_key(key), []).append(position)
    neighbours: list[dict[int, None]] = [{} for _ in nodes]
    for position, node in enumerate(nodes):
        for proximity in links:
            for key in proximity.link_keys(node):
                for other in index.get(canonical_key(key), ()):
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
        if isinstance(max_members, bool) or not isinstance(max_members, int) or max_members < 1:
            raise InputError(f"max_members must be an integer >= 1, got {max_members!r}")
        vectors = unit_rows(_finite_matrix(node_vectors, "node_vectors"))
        if vectors.shape[0] != len(objects):
            raise InputError(f"got {vectors.shape[0]} node vectors for {len(objects)} objects")
        seen: set[str] = set()
        for o in objects:
            if o.id in seen:
                raise InputError(f"object id {o.id!r} appears twice: ego-graphs are keyed by id")
            seen.add(o.id)
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
        query = unit(np.asarray(query_embedding))
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

    @property
    def fingerprint(self) -> str:
        """:func:`corpus_fingerprint` of the ids: what a corpus is checked against."""
        return corpus_fingerprint(self.ids)

    def save(self, path: str | Path) -> None:
        """A sidecar ``.npz`` at exactly ``path`` (vectors, membership, the ids as JSON and
        their fingerprint), written atomically: a killed save never leaves half a file."""
        path = Path(path)
        descriptor, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                np.savez_compressed(
                    handle,
                    vectors=self.vectors.astype(np.float32),
                    indptr=np.asarray(self.indptr, dtype=np.int64),
                    members=np.asarray(self.members, dtype=np.int64),
                    hops=np.asarray([self.hops], dtype=np.int64),
                    ids=np.asarray([json.dumps(list(self.ids))]),
                    fingerprint=np.asarray([self.fingerprint]),
                )
            os.replace(name, path)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise

    @classmethod
    def load(
        cls,
        path: str | Path,
        *,
        corpus: Sequence[str | CorpusObject | Candidate] | None = None,
        max_bytes: int = DEFAULT_MAX_SIDECAR_BYTES,
    ) -> EgoGraphIndex:
        """Read a :meth:`save` file, checking everything before trusting it.

        Sizes first (the zip directory, each member's compression ratio, each array header
        and every working copy against ``max_bytes``, so nothing is inflated or allocated past
        it; vectors at most :data:`MAX_VECTOR_DIM` wide), then dtypes, shapes, finite unit vectors,
        monotone ``indptr``, members in range with each centre first, ``hops >= 1`` and the
        ids against their fingerprint. With ``corpus`` (ids or objects) the index is checked
        against it too (:meth:`check_corpus`). Problems raise
        :class:`~grapher_core.errors.SidecarError` naming the file and the field; no pickle.
        """
        path = Path(path)
        ids: list[str] = []

        def check_shapes(
            shapes: Mapping[str, tuple[int, ...]], read: Callable[[str], np.ndarray]
        ) -> None:
            ids.extend(_check_shapes(path, shapes, read))

        arrays = read_npz(
            path,
            _SIDECAR_FIELDS,
            optional=frozenset({"fingerprint"}),
            max_bytes=max_bytes,
            check_shapes=check_shapes,
        )
        index = _validated(path, arrays, ids)
        if corpus is not None:
            index.check_corpus(corpus, source=str(path))
        return index

    def check_corpus(
        self, corpus: Sequence[str | CorpusObject | Candidate], *, source: str = "the index"
    ) -> None:
        """Refuse an index built from another corpus (an id of the index is not in
        ``corpus``: its members could never be fetched); warn when ``corpus`` has objects
        the index does not know (built from an older version: they have no ego-graph)."""
        ids = [c if isinstance(c, str) else c.id for c in corpus]
        if corpus_fingerprint(ids) == self.fingerprint:
            return
        known = set(ids)
        missing = [i for i in self.ids if i not in known]
        if missing:
            raise SidecarError(
                f"{source}: built from another corpus: {len(missing)} of its {len(self.ids)} "
                f"ids are not in the corpus given (first: {missing[0]!r}); rebuild it with "
                "EgoGraphIndex.build"
            )
        extra = len(known - set(self.ids))
        if extra:
            warnings.warn(
                f"{source}: built from an older version of the corpus: {extra} of its "
                f"{len(known)} objects have no ego-graph; rebuild it with EgoGraphIndex.build",
                GraphERWarning,
                stacklevel=stacklevel_outside(),
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
        if objects:
            self.check_corpus(objects)
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


def _finite_matrix(value: Any, what: str) -> np.ndarray:
    """``value`` as a 2-D float64 matrix of finite numbers, or an ``InputError`` naming it."""
    try:
        matrix = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InputError(f"{what} must be a 2-D array of numbers ({error})") from None
    if matrix.ndim != 2:
        raise InputError(f"{what} must be 2-D (one row per object), got shape {matrix.shape}")
    bad = ~np.isfinite(matrix).all(axis=1)
    if bad.any():
        raise InputError(
            f"{what}: row {int(np.argmax(bad))} holds NaN or infinite values "
            f"({int(bad.sum())} such rows)"
        )
    return matrix


def _check_shapes(
    path: Path, shapes: Mapping[str, tuple[int, ...]], read: Callable[[str], np.ndarray]
) -> list[str]:
    """The ids, and the shapes checked against their number before the large arrays are
    read."""

    def fail(field: str, message: str) -> SidecarError:
        return SidecarError(f"{path}: field {field!r}: {message}")

    for field in ("ids", "hops", "fingerprint"):
        if field in shapes and shapes[field] != (1,):
            raise fail(field, f"shape {shapes[field]}, expected (1,)")
    ids = _ids(path, read("ids"))
    n = len(ids)
    if shapes["vectors"][0] != n or shapes["vectors"][1] < 1:
        raise fail("vectors", f"shape {shapes['vectors']}, expected ({n}, d >= 1) for {n} ids")
    if shapes["indptr"] != (n + 1,):
        raise fail("indptr", f"shape {shapes['indptr']}, expected ({n + 1},) for {n} ids")
    if not n <= shapes["members"][0] <= n * n:
        raise fail(
            "members",
            f"{shapes['members'][0]} members for {n} ego-graphs (one each at least, each "
            "object at most once per ego-graph)",
        )
    return ids


def _ids(path: Path, array: np.ndarray) -> list[str]:
    """The ids of a sidecar: one JSON list of distinct strings."""
    try:
        ids = json.loads(str(array[0]))
    except (ValueError, RecursionError) as error:
        raise SidecarError(
            f"{path}: field 'ids': not a JSON list ({type(error).__name__})"
        ) from None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise SidecarError(f"{path}: field 'ids': not a JSON list of strings")
    if len(set(ids)) != len(ids):
        raise SidecarError(f"{path}: field 'ids': an id appears twice")
    return ids


def _validated(path: Path, arrays: dict[str, np.ndarray], ids: list[str]) -> EgoGraphIndex:
    """An index from arrays whose shapes are checked (and ``ids`` parsed): now the values."""

    def fail(field: str, message: str) -> SidecarError:
        return SidecarError(f"{path}: field {field!r}: {message}")

    n = len(ids)
    if "fingerprint" in arrays and str(arrays["fingerprint"][0]) != corpus_fingerprint(ids):
        raise fail("fingerprint", "does not match the ids (the file was edited or damaged)")
    hops = int(arrays["hops"][0])
    if hops < 1:
        raise fail("hops", f"must be >= 1, got {hops}")
    vectors = arrays["vectors"]  # finite float64, shapes checked by _check_shapes
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))  # no (n, d) temporary
    odd = (norms != 0) & (np.abs(norms - 1.0) > _NORM_TOLERANCE)
    if odd.any():
        row = int(np.argmax(odd))
        raise fail("vectors", f"row {row} has norm {norms[row]:.4g}, expected 1 (unit rows)")
    indptr, members = arrays["indptr"], arrays["members"]
    total = members.shape[0]
    if int(indptr.min()) < 0 or int(indptr.max()) > total:
        raise fail("indptr", f"pointers must lie in [0, {total}] ({total} members)")
    if indptr[0] != 0 or indptr[-1] != total or (np.diff(indptr) < 1).any():
        raise fail(
            "indptr",
            f"must run from 0 to {total} ({total} members) and increase at every step (each "
            "ego-graph holds its centre)",
        )
    if total and (int(members.min()) < 0 or int(members.max()) >= n):
        bad = int(members.min()) if int(members.min()) < 0 else int(members.max())
        raise fail("members", f"positions must lie in [0, {n}) ({n} ids), found {bad}")
    if n and not np.array_equal(members[indptr[:-1]], np.arange(n)):
        raise fail("members", "each ego-graph must start with its centre")
    groups = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    if members.size and np.unique(groups * n + members).size != members.size:
        raise fail("members", "an ego-graph lists a member twice")
    return EgoGraphIndex(tuple(ids), vectors, indptr, members, hops)


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
            unit_rows(_finite_matrix(embedder.embed_documents(texts), "edge_embedder vectors")),
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


class EgoGraphReranker(RerankingEngine):
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
        self._diagnostics = Diagnostics(owner="EgoGraphReranker")

    def join(self, candidates: Sequence[Candidate], query_embedding: Any) -> ExpansionResult:
        """Candidates plus the members of the top-``n`` ego-graphs (new ones only): the
        :meth:`join_steps`, the members fetched from the source directly."""
        return run_call(Call(self.join_steps(candidates, query_embedding)))

    def join_steps(
        self, candidates: Sequence[Candidate], query_embedding: Any
    ) -> Steps[ExpansionResult]:
        """The join as steps of a call: one :class:`Fetch` of the chosen ego-graphs' members."""
        items = validate_candidates(candidates)
        query = None if query_embedding is None else unit(np.asarray(query_embedding))
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
        returned = yield Fetch(self.source, tuple(((None, i),) for i in wanted))
        fetched = check_fetched(self.source, returned)
        fresh = {c.id: c for c in fetched if c.id in wanted}
        if not fresh:
            self._diagnostics.report(
                "foreign-index",
                f"the neighbour source holds none of the {len(wanted)} ego-graph members asked "
                "for: is the index built from another corpus? (check it with "
                "EgoGraphIndex.load(path, corpus=...))",
            )
        added = [fresh[i] for i in wanted if i in fresh]
        similarity = {}
        for c in added:
            if c.embedding is not None:
                v = np.asarray(c.embedding, dtype=np.float64).ravel()
                norm = float(np.linalg.norm(v))
                similarity[c.id] = float(v @ query / norm) if norm else 0.0
        scored = seed_scores(
            items, original_scores(items), added, similarity, query, floor=self.seed_rule == "floor"
        )
        return ExpansionResult(
            tuple(items) + tuple(scored), tuple(c.id for c in scored), 1, len(fetched), similarity
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
        filled, vector = yield from self.reranker.vector_steps(
            self.reranker.admit(candidates),
            query=query,
            query_embedding=query_embedding,
            embedder=embedder,
            needed=True,
        )
        joined = yield from self.join_steps(filled, vector)
        result = self.reranker.run_pool(
            list(joined.candidates), query=query, query_embedding=vector, top_n=top_n
        )
        return replace(result, ranked=marked(result.ranked, joined))

    @property
    def needs_embeddings(self) -> bool:
        """Always True: ego-graphs are chosen by query cosine."""
        return True

    @property
    def embedding_model(self) -> Any:
        """The wrapped reranker's own embedder (see :attr:`GraphReranker.embedding_model`)."""
        return self.reranker.embedding_model
