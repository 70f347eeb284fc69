"""Conceptual edges: candidates that name the same entities, weighted by the paper's
``|E_i ∩ E_j| / |E_j|``, built with sorted hash keys and one sparse product."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
import scipy.sparse as sp

from grapher_core.edges.checks import FIELD_NAME, KIND, WEIGHT, check_proximity
from grapher_core.utils.callsite import warn
from grapher_core.utils.schema import DeclaredFields, Schema, Spec

try:  # scipy's compiled sparse kernels, called without scipy's per-call dispatch and checks
    from scipy.sparse._sparsetools import csr_matmat as _csr_matmat
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
    from scipy.sparse._sparsetools import csr_tocsc as _csr_tocsc
except ImportError:  # pragma: no cover
    _csr_matmat = None

from grapher_core.candidates import Candidate
from grapher_core.metadata import normalised_set, read_list


@dataclass(frozen=True)
class ProductFactor:
    """An entity graph as the product it was counted by: ``A = left @ right @ diag(scale)``,
    ``left`` the ``(n, m)`` candidate x (entity, then one column per candidate) incidence and
    ``right`` its ``(m, n)`` transpose whose last ``n`` rows cancel the diagonal (csr arrays,
    float64 values). A mat-vec through it costs ``2 (entries + n)`` multiply-adds instead of
    ``nnz(A)``: on a hub-dense pool of 200 (31,412 edges from 1,311 entity holdings) six
    times fewer, which is what GCS's iteration spends its time on. Equal to ``A`` up to the
    rounding of a different summation order (tested to 1e-12)."""

    n: int
    inner: int
    left_indptr: np.ndarray
    left_indices: np.ndarray
    right_indptr: np.ndarray
    right_indices: np.ndarray
    right_data: np.ndarray
    scale: np.ndarray

    def scaled(self, weight: float) -> ProductFactor:
        """The factor of ``weight * A``."""
        return ProductFactor(
            self.n, self.inner, self.left_indptr, self.left_indices, self.right_indptr,
            self.right_indices, self.right_data, self.scale * weight,
        )  # fmt: skip

    def counts_times(self, x: np.ndarray) -> np.ndarray:
        """``left @ right @ x``: the shared-entity counts (symmetric, zero diagonal) times
        ``x``."""
        inner = np.zeros(self.inner)
        right = (self.right_indptr, self.right_indices, self.right_data)
        _csr_matvec(self.inner, self.n, *right, x, inner)
        out = np.zeros(self.n)
        ones = np.ones(self.left_indices.size)
        _csr_matvec(self.n, self.inner, self.left_indptr, self.left_indices, ones, inner, out)
        return out

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``A @ x`` through the factor."""
        return self.counts_times(x * self.scale)

    def row_and_column_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """``A @ 1`` and ``A^T @ 1`` (the counts are symmetric: ``scale * (counts @ 1)``)."""
        return self.counts_times(self.scale), self.scale * self.counts_times(np.ones(self.n))


def entity_keys(value: object) -> np.ndarray:
    """The distinct normalised entities of a metadata value, as 64-bit hash keys.

    Hash keys let the entity graph be built with numpy alone; equal entities get equal keys
    within a process (a collision between two different entities has probability ~n^2/2^64).
    Lists and strings are parsed once and cached, since the same objects come back query
    after query in a running service. The array is read-only (it views the cached bytes).
    """
    return np.frombuffer(_key_bytes(value), dtype=np.int64)


def _key_bytes(value: object) -> bytes:
    """:func:`entity_keys` as the bytes of its int64 array, through the cache when the value
    is a string or a list of hashable items."""
    if value is None:
        return b""
    if type(value) is list:
        try:
            key: tuple[object, ...] | str = tuple(value)
            found = _KEY_BYTES.get(key)
        except TypeError:  # unhashable items: parse without the cache
            return _parsed_key_bytes(value)
    elif type(value) is str:
        key = value
        found = _KEY_BYTES.get(key)
    else:
        return _parsed_key_bytes(value)
    if found is None:
        found = _parsed_key_bytes(value)
        _remember(key, found)
    return found


def _parsed_key_bytes(value: object) -> bytes:
    entities = normalised_set(read_list(value))
    keys = np.fromiter((hash(e) for e in sorted(entities)), dtype=np.int64, count=len(entities))
    return keys.tobytes()


KEY_CACHE_SIZE = 1 << 16
"""Distinct entity lists (and strings) whose keys stay cached; past it the older half is
forgotten."""

_KEY_BYTES: dict[tuple[object, ...] | str, bytes] = {}
"""A list's items (as a tuple) or a string -> its entity keys' bytes. Bytes, not arrays: a
pool's keys are then one ``b"".join`` (a few us) instead of a ``np.concatenate`` of one small
array per candidate (25 us for 200)."""

_KEY_LOCK = threading.Lock()


def _remember(key: tuple[object, ...] | str, blob: bytes) -> None:
    with _KEY_LOCK:
        if len(_KEY_BYTES) >= KEY_CACHE_SIZE:  # keep the newer half (dicts keep insertion order)
            newer = list(_KEY_BYTES.items())[KEY_CACHE_SIZE // 2 :]
            _KEY_BYTES.clear()
            _KEY_BYTES.update(newer)
        _KEY_BYTES[key] = blob


def _keys_of(candidates: Sequence[Candidate], field: str) -> tuple[np.ndarray, np.ndarray]:
    """Every candidate's :func:`entity_keys` of ``field``, concatenated, and how many each
    has. This runs once per candidate per query: when every value is a list (the common
    case) the cache is read by one ``map``; the keys come out of one ``b"".join``."""
    values: list[Any] = [candidate.metadata.get(field) for candidate in candidates]
    found: list[bytes | None] | None = None
    if set(map(type, values)) == {list}:
        try:
            found = list(map(_KEY_BYTES.get, map(tuple, values)))
        except TypeError:  # unhashable items: each value on its own below
            found = None
    if found is None:
        found = [None] * len(values)
    blobs = cast("list[bytes]", found)
    if None in found:
        blobs = [_key_bytes(v) if b is None else b for v, b in zip(values, found, strict=True)]
    lengths = np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs))
    lengths >>= 3  # bytes -> int64 keys
    return np.frombuffer(b"".join(blobs), dtype=np.int64), lengths


DENSE_COUNTS_MAX_N = 2048
"""Up to this many candidates, and when the pairs would fill a good part of it, pair counts go
into a dense ``n x n`` array (32 MB at most) with one ``bincount``; otherwise the pair cells
are sorted (scanning millions of mostly empty cells costs more than that)."""


EDGE_BUDGET_FLOOR = 100_000
"""Entity pairs always allowed, whatever ``edge_budget`` (a few MB of work arrays): 2.5 times
a complete graph on 200 candidates (the usual pool), so the graphs of the benchmarks' top-200
pools are built exactly as the paper says (their largest is measured in docs/speed.md)."""


_logger = logging.getLogger(__name__)


_warned: set[tuple[str, str]] = set()


_warned_lock = threading.Lock()


def _warn_once(cause: tuple[str, str], message: str) -> None:
    """Say it once per process and cause (logging + warnings), not once per query."""
    with _warned_lock:
        if cause in _warned:
            _logger.debug(message)
            return
        _warned.add(cause)
    _logger.warning(message)
    warn(message, RuntimeWarning)


def _entity_groups(keys: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``owner`` (candidate of each entry, grouped by entity) and the size of each group."""
    order = np.argsort(keys)
    sorted_keys = keys[order]
    owner = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)[order]
    boundary = np.empty(sorted_keys.size, dtype=bool)
    boundary[:1] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=boundary[1:])
    starts = np.flatnonzero(boundary)
    sizes = np.empty_like(starts)  # the gaps between group starts (np.diff + np.append: 5 us)
    np.subtract(starts[1:], starts[:-1], out=sizes[:-1])
    sizes[-1:] = sorted_keys.size - starts[-1:]
    return owner, sizes


def _pairs_to_matrix(
    owner: np.ndarray, sizes: np.ndarray, lengths: np.ndarray, n: int
) -> sp.csr_matrix:
    """:func:`_pairs_and_factor`'s matrix alone."""
    return _pairs_and_factor(owner, sizes, lengths, n)[0]


def _pairs_and_factor(
    owner: np.ndarray, sizes: np.ndarray, lengths: np.ndarray, n: int
) -> tuple[sp.csr_matrix, ProductFactor | None]:
    """``|E_i ∩ E_j| / |E_j|`` from entity groups (``owner`` lists the holders group by group,
    ``sizes`` each > 1; ``lengths`` is ``|E_j|``): the product ``B B^T`` of the candidate x entity
    incidence counted by scipy's compiled sparse product, without its diagonal (tested against
    ``B diag(1/|E|) B^T``).

    Why not numpy: enumerating every pair of holders materialises ``sum(h^2)`` entries in several
    int64 temporaries (2 MB and ~570 fresh pages per call on a hub-dense pool of 200), while the
    sparse product keeps one row of counts in a small buffer and writes only the edges. The
    kernels are scipy's private ``_sparsetools`` (already used for GCS's mat-vec); without them
    :func:`_pairs_to_matrix_numpy` gives the same matrix.
    """
    if _csr_matmat is None:  # pragma: no cover - scipy without the private kernels
        return _pairs_to_matrix_numpy(owner, sizes, lengths, n), None
    groups, entries = sizes.size, owner.size
    pairs = int(np.dot(sizes, sizes))  # sum h^2 >= the product's entries, diagonal included
    index: Any = np.int32 if max(pairs, n + 1) < _INT32_MAX else np.int64
    # A count is at most the smaller entity list: the narrowest integer that holds it keeps
    # the count buffers (as many entries as the pairs) small.
    longest = int(lengths.max())
    count = np.int8 if longest <= 127 else np.int16 if longest <= 32767 else np.int32
    # B^T as csr: one row per entity (its holders, value 1), then one row per candidate i
    # holding only i, with value -d_i (d_i = i's shared entities): in B B^T that cancels the
    # diagonal count exactly, and the product drops entries that sum to 0, so no edge i -> i
    # is ever written. B (one row per candidate, its entities, value 1) by the compiled
    # transpose.
    held = np.bincount(owner, minlength=n)
    t_indptr = np.empty(groups + n + 1, dtype=index)
    t_indptr[0] = 0
    np.cumsum(sizes, out=t_indptr[1 : groups + 1])
    t_indptr[groups + 1 :] = np.arange(entries + 1, entries + n + 1)
    t_indices = np.concatenate([owner, np.arange(n)]).astype(index)
    t_data = np.ones(entries + n, dtype=count)
    np.negative(held, out=t_data[entries:], casting="unsafe")
    ones = np.ones(entries + n, dtype=count)
    b_indptr = np.empty(n + 1, dtype=index)
    b_indices = np.empty(entries + n, dtype=index)
    b_data = np.empty(entries + n, dtype=count)
    _csr_tocsc(groups + n, n, t_indptr, t_indices, ones, b_indptr, b_indices, b_data)
    # C = B B^T (off the diagonal) into buffers of the upper bound (no counting pass); rows
    # come out unsorted.
    c_indptr = np.empty(n + 1, dtype=index)
    c_indices = np.empty(pairs + n, dtype=index)
    c_counts = np.empty(pairs + n, dtype=count)
    _csr_matmat(
        n,
        n,
        b_indptr,
        b_indices,
        b_data,
        t_indptr,
        t_indices,
        t_data,
        c_indptr,
        c_indices,
        c_counts,
    )
    nnz = int(c_indptr[-1])
    # C is symmetric, so its compiled transpose is C again with every row's columns sorted:
    # canonical csr.
    indptr = np.empty(n + 1, dtype=index)
    indices = np.empty(nnz, dtype=index)
    counts = np.empty(nnz, dtype=count)
    _csr_tocsc(n, n, c_indptr, c_indices[:nnz], c_counts[:nnz], indptr, indices, counts)
    del c_indices, c_counts
    # 1 / |E_j| by np.take: its int64 copy of the indices (as large as ``data``) is freed
    # before GCS copies ``data``, which then reuses that block. Scaling in place instead
    # (csr_scale_columns) lowers this function's peak but made glibc return the top of the
    # heap after every call in the bench process (154 page faults per Zipf rerank against 0).
    inverse = 1.0 / np.maximum(lengths, 1)
    data = np.take(inverse, indices)
    data *= counts
    matrix = _canonical_csr(data, indices, indptr, n)
    factor = ProductFactor(
        n, groups + n, b_indptr, b_indices, t_indptr, t_indices, t_data.astype(np.float64), inverse
    )
    return matrix, factor


_INT32_MAX = int(np.iinfo(np.int32).max)


def _csr_fields() -> dict[str, Any] | None:
    """What scipy's csr_matrix constructor stores besides its three arrays and shape (its
    ``maxprint``), read once from one it built; ``None`` when it stores anything else (another
    scipy keeps more state): :func:`_canonical_csr` then uses the constructor."""
    probe = sp.csr_matrix(
        (np.zeros(0), np.zeros(0, dtype=np.int32), np.zeros(2, dtype=np.int32)), shape=(1, 1)
    )
    arrays = {"data", "indices", "indptr", "_shape"}
    fields = dict(vars(probe))
    if not arrays <= fields.keys() <= arrays | {"maxprint"}:
        return None
    return {name: value for name, value in fields.items() if name not in arrays}


_CSR_FIELDS = _csr_fields()


def _canonical_csr(
    data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, n: int
) -> sp.csr_matrix:
    """``sp.csr_matrix((data, indices, indptr), shape=(n, n))`` for the arrays
    :func:`_pairs_and_factor` made: float64 data, int32 indices sorted within each row and
    below ``n``, fresh (not views). The constructor's work on them -- an index dtype search,
    shape and length checks, pruning -- finds nothing to change and costs 16-35 us of a 0.9 ms
    rerank, so the instance gets its fields directly where scipy keeps exactly those (checked
    once per process, and tested equal to the constructor's); otherwise, or with int64 indices
    (which the constructor may narrow), the constructor builds it."""
    if _CSR_FIELDS is None or indices.dtype != np.int32 or indptr.dtype != np.int32:
        return sp.csr_matrix((data, indices, indptr), shape=(n, n))
    matrix = cast(sp.csr_matrix, object.__new__(sp.csr_matrix))
    fields = matrix.__dict__
    fields.update(_CSR_FIELDS)
    fields["_shape"] = (n, n)
    fields["indices"] = indices
    fields["indptr"] = indptr
    fields["data"] = data
    return matrix


def _pairs_to_matrix_numpy(
    owner: np.ndarray, sizes: np.ndarray, lengths: np.ndarray, n: int
) -> sp.csr_matrix:
    """:func:`_pairs_to_matrix` in numpy alone (the fallback, and a second path for tests).
    ``owner`` lists the holders group by group (``sizes``, each > 1); ``lengths`` is ``|E_j|``.
    Same matrix as the sparse product ``B diag(1/|E|) B^T`` without its diagonal (tested).
    Work and memory follow the pairs (``sum(h^2)`` over entities held by ``h`` candidates):
    numpy builds them in a few vectorised calls, then counts either land in a dense array
    (pairs filling a good part of ``n x n``: one ``bincount``, no sort) or are sorted and
    counted as runs; the csr arrays come out int32 and canonical, built without scipy's
    re-validation passes.
    """
    group_size = np.repeat(sizes, sizes)  # size of the group of each entry
    pairs_before = np.cumsum(group_size) - group_size  # where each entry's pairs begin
    group_start = np.repeat(np.cumsum(sizes) - sizes, sizes)
    # entry k pairs with the entries group_start[k] .. group_start[k] + size - 1 (itself too)
    partner = np.arange(int(group_size.sum()), dtype=np.int64)
    partner -= np.repeat(pairs_before - group_start, group_size)
    right = owner[partner]
    inverse_length = 1.0 / np.maximum(lengths, 1)
    codes = np.repeat(owner * n, group_size)
    codes += right  # left * n + right: the cell of each pair
    if n <= DENSE_COUNTS_MAX_N and n * n <= 4 * codes.size:
        counts = np.bincount(codes, minlength=n * n)
        counts[:: n + 1] = 0  # the diagonal
        flat = np.flatnonzero(counts)
        data = counts[flat] * inverse_length[flat % n]
    else:  # few pairs for the cells: sort them and count the runs
        codes.sort()
        first = np.empty(codes.size, dtype=bool)
        first[:1] = True
        np.not_equal(codes[1:], codes[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        flat = codes[starts]
        diagonal = flat // n == flat % n
        multiplicity = np.diff(np.append(starts, codes.size))
        flat, multiplicity = flat[~diagonal], multiplicity[~diagonal]
        data = multiplicity * inverse_length[flat % n]
    cols = (flat % n).astype(np.int32)
    indptr = np.searchsorted(flat, np.arange(0, n * n + 1, n, dtype=np.int64)).astype(np.int32)
    return sp.csr_matrix((data, cols, indptr), shape=(n, n))


def _share_rule(value: Any) -> str | None:
    """``max_share`` is a fraction; a count belongs in ``max_holders`` (said with the value)."""
    if float(value) <= 1.0:
        return None
    holders = int(value) if float(value).is_integer() else "..."
    return (
        f"max_share is a fraction of the candidates in (0, 1]; for a number of candidates "
        f"use max_holders={holders}"
    )


@dataclass(frozen=True)
class SharedEntities(DeclaredFields):
    """Conceptual proximity: objects that name the same entities.

    ``A[i, j] = |E_i ∩ E_j| / |E_j|`` (paper A.3: normalised by the *target's* entity count,
    so an object listing many entities spreads its emphasis thin). Entities are compared after
    :func:`grapher_core.metadata.normalise_entity` (case and whitespace).

    Hub entities ("american", "first") link everything to everything: an entity held by ``h``
    candidates makes ``h (h - 1)`` edges. Three rules ignore them (an ignored entity does not
    count in ``|E_j|`` either):

    * ``max_share``: a fraction in (0, 1]; entities held by more than this share of the
      candidates are ignored (``1`` and ``1.0`` both mean "no cap").
    * ``max_holders``: an integer >= 1; entities held by more than this many candidates are
      ignored.
    * ``edge_budget`` (default 8): the bound that keeps memory and time linear in the number
      of candidates for any input. When the entities would make more than
      ``max(100 000, edge_budget * n)`` pairs (a pair: two holders of one entity), the most
      widely held entities are ignored, largest first, until the rest fit, and a warning
      says so (once per field). The floor leaves
      pools of a few hundred candidates as the paper builds them (the benchmarks' top-200
      pools never reach it); ``None`` removes the bound (one entity shared by 20 000
      candidates is then 400 M edges and gigabytes).
    """

    FIELDS: ClassVar[Schema] = {
        "field": FIELD_NAME,
        "kind": KIND,
        "weight": WEIGHT,
        "max_share": Spec("float", optional=True, low=0.0, open_low=True, rule=_share_rule),
        "max_holders": Spec("int", optional=True, low=1),
        "edge_budget": Spec("float", optional=True, low=0.0, open_low=True),
    }
    field: str = "entities"
    kind: str = "conceptual"
    weight: float = 1.0
    max_share: float | None = None
    max_holders: int | None = None
    edge_budget: float | None = 8.0

    def __post_init__(self) -> None:
        check_proximity(self)

    def adjacency(self, candidates: Sequence[Candidate]) -> sp.csr_matrix:
        return self.factored(candidates)[0]

    def factored(
        self, candidates: Sequence[Candidate]
    ) -> tuple[sp.csr_matrix, ProductFactor | None]:
        """:meth:`adjacency` and, when it has edges, the product it was counted by
        (:class:`ProductFactor`: GCS iterates through it on hub-dense pools)."""
        n = len(candidates)
        keys, lengths = _keys_of(candidates, self.field)
        if n < 2 or not keys.size:
            return sp.csr_matrix((n, n)), None
        owner, sizes = _entity_groups(keys, lengths)
        limit = self._max_holders(n)
        budget = self._pair_budget(n)
        if budget is not None:
            limit = self._fit_budget(sizes, limit, budget, n)
        if limit is not None and sizes.size and sizes.max() > limit:
            kept = sizes <= limit
            owner = owner[np.repeat(kept, sizes)]
            sizes = sizes[kept]
            lengths = np.bincount(owner, minlength=n)  # |E_j| counts the kept entities only
        multi = sizes > 1  # an entity held once links nobody
        if not multi.any():
            return sp.csr_matrix((n, n)), None
        owner = owner[np.repeat(multi, sizes)]
        return _pairs_and_factor(owner, sizes[multi], lengths, n)

    def _max_holders(self, n: int) -> float | None:
        """How many candidates may hold an entity before it counts as a hub (None: no cap)."""
        limits = []
        if self.max_share is not None and float(self.max_share) < 1.0:
            limits.append(float(self.max_share) * n)
        if self.max_holders is not None:
            limits.append(float(self.max_holders))
        return min(limits) if limits else None

    def _fit_budget(
        self, sizes: np.ndarray, limit: float | None, budget: int, n: int
    ) -> float | None:
        """The holder limit that keeps the pairs within ``budget`` (largest entities dropped
        first); ``limit`` unchanged when they already fit."""
        allowed = sizes if limit is None else sizes[sizes <= limit]
        if int((allowed * (allowed - 1)).sum()) <= budget:
            return limit
        values, counts = np.unique(allowed, return_counts=True)
        cumulative = np.cumsum(values * (values - 1) * counts)  # pairs of entities <= value
        fitting = int(values[cumulative <= budget].max()) if cumulative[0] <= budget else 1
        dropped = int((allowed > fitting).sum())
        _warn_once(
            ("edge_budget", self.field),
            (
                f"SharedEntities({self.field!r}): {dropped} entities held by more than {fitting} "
                f"of {n} candidates were ignored to keep the graph within edge_budget="
                f"{self.edge_budget:g} (at most {budget} entity pairs); set max_share or "
                "max_holders to choose the hub rule yourself, or edge_budget=None for the "
                "unbounded graph"
            ),
        )
        return float(fitting)

    def _pair_budget(self, n: int) -> int | None:
        if self.edge_budget is None:
            return None
        return max(EDGE_BUDGET_FLOOR, int(float(self.edge_budget) * n))
