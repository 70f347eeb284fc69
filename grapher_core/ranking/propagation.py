"""Graph rankers that move seed scores along edges: GCS and PPR, as functions on
(adjacency, seeds) and as :class:`~grapher_core.ranking.base.Ranker` objects.

``alpha`` means what it means in the paper: the weight kept on the seed scores at every step
(PPR's teleport probability). Larger alpha = closer to the base retriever's order.

Default alphas are the values ``grapher-bench tune`` picks on ``spider_train`` (grid 0.1..0.9,
hybrid MiniLM + BM25 retriever, PR@10 of multi-table queries); see docs/benchmarks.md.
The paper tuned on BIRD train, which is not available here.

GCS comes in two normalisations. ``"row"`` is the paper's Algorithm 1: a node takes the plain
average of its neighbours, so every spoke of a well-ranked hub is lifted to just under the hub
(ten tables referencing ``studies`` all jump above the retriever's second and third tables).
``"degree"`` (the :class:`GCSRanker` default) divides an edge ``i -> j`` by
``d_i^b * d_j^(1 - b)`` (``b = degree_exponent``, 0.75): a hub's lift is shared among its
spokes instead of copied to each, a node's lift grows with the number of its neighbours that
agree, and a node linked to everything receives far less than the sum of its neighbours.
``b = 0.5`` is the symmetric ``D^-1/2 A D^-1/2``, which lifts a node linked to every candidate
from rank 50 to rank 4 with rank seeds (0.75: rank 8; row: rank 19); the training splits do
not tell 0.5 from 0.8 apart. Chosen on training splits only (``spider_train``, BIRD train, the
multi-hop train sets; hybrid and dense retrievers; rank seeds): see docs/benchmarks.md
"Default ranking".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
import scipy.sparse as sp

try:  # scipy's compiled csr kernels: the same ones `@` ends in, without their dispatch cost
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
    from scipy.sparse._sparsetools import csr_scale_columns as _csr_scale_columns
    from scipy.sparse._sparsetools import csr_scale_rows as _csr_scale_rows
except ImportError:  # pragma: no cover
    _csr_matvec = None
    _csr_scale_columns = None
    _csr_scale_rows = None

from grapher_core.candidates import Candidate
from grapher_core.edges.entities import ProductFactor
from grapher_core.edges.graph import CandidateGraph
from grapher_core.errors import ConfigError, InputError
from grapher_core.ranking.base import (
    ALPHA,
    MAX_ITER_SPEC,
    RANKER_NAME,
    TOL,
    RankContext,
    check_alpha,
    kind_weights_spec,
)
from grapher_core.utils.callsite import warn, warn_once
from grapher_core.utils.schema import DeclaredFields, Schema, Spec, check_fields

DEFAULT_GCS_ALPHA = 0.1


DEFAULT_PPR_ALPHA = 0.3  # spider_train, hybrid, rank seeds (0.8 was chosen on score seeds)


DEFAULT_MAX_ITER = 10_000

NORMALISATIONS: tuple[str, ...] = ("degree", "row")
DEFAULT_DEGREE_EXPONENT = 0.75

DEFAULT_ALONE_WEIGHTS: tuple[tuple[str, float], ...] = (("contextual", 0.8),)
"""The share of its normalised weight an edge of a kind passes on in degree-normalised GCS when
that kind is the pool's only evidence (no edge of another kind) and the pool's chunks are
passage-sized (beside other kinds :data:`BESIDE_WEIGHTS` applies). Chunk order alone is weak
evidence once
seeds come from rank: at full share the best chunk's neighbour, supported by nothing else, jumps
to 2nd over the retriever's second and third results, which costs single-answer questions
(squad_chunks gold@5 -1.1 hybrid, -1.3 dense; a hyperlinked manual with its links left out,
PR@5 -25). At 0.8 such a neighbour lands 7th at best (``ALONE_NEIGHBOUR_BEST_RANK``, tested),
so the retriever's top 5 changes only for chunks it already ranked near it, while neighbours
still rise within the top 10; at 0.85 it lands 6th and passage-sized pools already lose
questions at PR@10 (squad_chunks) and PR@5 (a manual). A user whose
answers span consecutive chunks sets ``GCSRanker(alone_weights={})`` (``grapher eval`` tries it
on their questions); ``kind_weights`` scales a kind always."""

SENTENCE_ALONE_WEIGHTS: tuple[tuple[str, float], ...] = (("contextual", 0.85),)
"""The same share for sentence-sized chunks (:func:`sentence_sized`). A sentence rarely holds a
whole answer and often does not name its subject ("He was born ..."), so its neighbours carry
more of the answer than a passage's do (the reason for sentence-window retrieval). 0.85 is the
largest share on the study's grid that still keeps a chunk supported only by being next to the
best one out of the top 5 (6th at best, ``SENTENCE_ALONE_NEIGHBOUR_BEST_RANK``); on the
sentence-level multi-hop sets it is at or above 0.8 in every cell with each of three retrievers
(docs/benchmarks.md, "Default ranking")."""

BESIDE_WEIGHTS: tuple[tuple[str, float], ...] = (("contextual", 0.9),)
"""The share of its normalised weight an edge of a kind passes on in degree-normalised GCS when
the pool has edges of other kinds too (chunk order beside hyperlinks or title mentions) and its
chunks are passage-sized. There chunk order carries a link's lift along the section it lands
in, which is what lifts a linked answer's second chunk; at full share it also lifts the best
chunk's neighbours past the retriever's next results: a Python-Markdown manual re-split by
LangChain's splitter, links kept, gold@5 12 -> 11 of 14; squad_chunks with chunk order and
title mentions, PR@5 below the retriever with each of bm25, dense and hybrid (93.6 / 88.2 /
95.8 vs 94.4 / 88.8 / 96.7), level at 0.9. 0.9 is the largest of {0.9, 0.95, 1} with no PR@5
or gold@5 cell below the retriever on these pools (squad_chunks hybrid PR@10 stays 0.3 below:
98.1 vs 98.4, as at full share); docs/user_corpora.md and docs/benchmarks.md "Default ranking".
``GCSRanker(beside_weights={})`` passes the whole share."""

SENTENCE_BESIDE_WEIGHTS: tuple[tuple[str, float], ...] = ()
"""The same for sentence-sized chunks: the whole share. On the sentence-level multi-hop sets with
chunk order and title mentions, 0.9 costs PR@5 with every retriever (hotpotqa_sentences 38.3 vs
40.7 hybrid, 2wikimultihopqa_sentences 24.5 vs 26.9) and full share is above the retriever in
every cell, as a sentence's neighbours carry more of its answer (:data:`SENTENCE_ALONE_WEIGHTS`)."""

SENTENCE_CHUNK_CHARS = 300
"""A pool is sentence-sized when the median length of its non-empty candidate texts is at most
this many characters (about 50 English words). Sentence-split sets sit near 120 characters, the
usual splitter chunks (and the passage-sized sets here) at 700 and more, so the line is not
fitted to either side."""

ALONE_NEIGHBOUR_BEST_RANK = 7
"""Under the default share for passage-sized chunks, alpha and 1/rank seeds, the best rank a
chunk reaches when its only support is being next to the retriever's best chunk."""

SENTENCE_ALONE_NEIGHBOUR_BEST_RANK = 6
"""The same bound under the share for sentence-sized chunks."""

_AUTO_ALONE_KINDS = frozenset(k for k, _ in (*DEFAULT_ALONE_WEIGHTS, *SENTENCE_ALONE_WEIGHTS))
"""The kinds the ``"auto"`` alone shares damp at some chunk size (the others never)."""
_AUTO_BESIDE_KINDS = frozenset(k for k, _ in (*BESIDE_WEIGHTS, *SENTENCE_BESIDE_WEIGHTS))
"""The same for the ``"auto"`` beside shares."""

AUTO_ALONE_WEIGHTS = "auto"
"""``GCSRanker.alone_weights`` default: :data:`SENTENCE_ALONE_WEIGHTS` on sentence-sized pools,
:data:`DEFAULT_ALONE_WEIGHTS` otherwise; an explicit mapping applies to every pool."""


def sentence_sized(candidates: Sequence[Candidate]) -> bool:
    """Whether the median non-empty candidate text is at most :data:`SENTENCE_CHUNK_CHARS`
    long; a pool without text is not (the passage share is the cautious one)."""
    lengths = [len(c.text.strip()) for c in candidates if c.text and c.text.strip()]
    if not lengths:
        return False
    return float(np.median(lengths)) <= SENTENCE_CHUNK_CHARS


def _check_inputs(adjacency: Any, seeds: Any, alpha: float) -> tuple[sp.csr_matrix, np.ndarray]:
    s = np.array(seeds, dtype=np.float64).ravel()
    if not np.isfinite(s.sum()) and not np.all(np.isfinite(s)):
        raise InputError("seeds must be finite numbers (found NaN or inf)")
    if type(adjacency) is sp.csr_matrix and adjacency.dtype == np.float64:
        a = adjacency  # only read below: no copy, no re-validation of the index arrays
    else:
        a = sp.csr_matrix(adjacency, dtype=np.float64)
    if a.shape != (s.size, s.size):
        raise InputError(f"adjacency has shape {a.shape} but there are {s.size} seeds")
    # min catches negatives and NaN (it propagates), max catches inf: two passes, no copy
    if a.nnz and not (a.data.min() >= 0 and a.data.max() < np.inf):
        raise InputError("adjacency must have finite, non-negative weights")
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha must be in (0, 1), got {alpha!r}")
    return a, s


def _row_sums(matrix: sp.csr_matrix) -> np.ndarray:
    """Row sums of a csr matrix by one mat-vec with ones: no scipy dispatch, no copy."""
    n_rows, n_cols = matrix.shape
    if _csr_matvec is None:  # pragma: no cover - scipy without the private kernel
        return np.asarray(matrix.sum(axis=1)).ravel()
    sums = np.zeros(n_rows)
    _csr_matvec(n_rows, n_cols, matrix.indptr, matrix.indices, matrix.data, np.ones(n_cols), sums)
    return sums


def _row_normalised_data(adjacency: sp.csr_matrix, scale: float = 1.0) -> np.ndarray:
    """``scale * A[i, j] / sum_k A[i, k]`` as a new data array for ``adjacency``'s structure
    (rows without edges stay zero); the row sums by one mat-vec with ones, no scipy dispatch."""
    n_rows, n_cols = adjacency.shape
    sums = _row_sums(adjacency)
    factors = np.divide(scale, sums, out=np.zeros_like(sums), where=sums > 0)
    if _csr_scale_rows is not None:  # in place on one copy: no repeated-factor array
        data = adjacency.data.copy()
        _csr_scale_rows(n_rows, n_cols, adjacency.indptr, adjacency.indices, data, factors)
        return data
    return adjacency.data * np.repeat(factors, np.diff(adjacency.indptr))  # pragma: no cover


def _degree_scalings(
    adjacency: sp.csr_matrix,
    exponent: float,
    scale: float = 1.0,
    degrees_of: sp.csr_matrix | None = None,
    factor: ProductFactor | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(receive, send)`` with ``scale * D^-b A D^(b-1) = diag(receive) A diag(send)``, ``d``
    the mean of in- and out-weight of ``degrees_of`` (default ``adjacency``, through its
    product ``factor`` when given)."""
    source = adjacency if degrees_of is None else degrees_of
    if factor is not None and degrees_of is None:  # the same sums, through the incidence
        rows, columns = factor.row_and_column_sums()
    else:
        columns = np.bincount(source.indices, weights=source.data, minlength=source.shape[1])
        rows = _row_sums(source)
    sums = 0.5 * (rows + columns)
    safe = np.where(sums > 0, sums, 1.0)
    receive = safe**-exponent
    send = safe ** (exponent - 1.0)
    receive *= scale
    return receive, send


def _degree_normalised_data(
    adjacency: sp.csr_matrix,
    exponent: float,
    scale: float = 1.0,
    degrees_of: sp.csr_matrix | None = None,
) -> np.ndarray:
    """``scale * A[i, j] / (d_i^b * d_j^(1 - b))`` (``b = exponent``) as a new data array for
    ``adjacency``'s structure, ``d`` the mean of in- and out-weight of ``degrees_of`` (default
    ``adjacency``; the degree, for the symmetric graphs edges build). On a symmetric graph
    ``D^-b A D^(b-1)`` is similar to ``D^-1/2 A D^-1/2`` and to the row-normalised ``D^-1 A``:
    the same spectrum, so the same iteration converges; a ``degrees_of`` with larger weights
    than ``adjacency`` (kinds weighted below 1) only shrinks it.

    It runs on every query, so it is two scaling passes of scipy's csr kernels over one copy
    of the data (row sums by a mat-vec, column sums by ``bincount``), not a chain of numpy
    temporaries of the size of the edge list."""
    n_rows, n_cols = adjacency.shape
    receive, send = _degree_scalings(adjacency, exponent, scale, degrees_of)
    if _csr_scale_rows is None or _csr_scale_columns is None:  # pragma: no cover
        counts = np.diff(adjacency.indptr)
        return adjacency.data * np.repeat(receive, counts) * send[adjacency.indices]
    data = adjacency.data.copy()
    _csr_scale_rows(n_rows, n_cols, adjacency.indptr, adjacency.indices, data, receive)
    _csr_scale_columns(n_rows, n_cols, adjacency.indptr, adjacency.indices, data, send)
    return data


def _factored_kernel(
    factor: ProductFactor, receive: np.ndarray, send: np.ndarray | None
) -> Callable[..., None]:
    """``kernel(n, n, indptr, indices, data, x, y)``: ``y += diag(receive) A diag(send) x``
    through ``A``'s product factor (the csr arguments are ignored): two compiled mat-vecs over
    the incidence, ``receive`` folded into the left factor's values once per call."""
    n, inner = factor.n, factor.inner
    scale_in = factor.scale if send is None else factor.scale * send
    left_data = np.repeat(receive, np.diff(factor.left_indptr))
    z, w = np.empty(n), np.empty(inner)
    multiply, matvec = np.multiply, _csr_matvec
    right = (factor.right_indptr, factor.right_indices, factor.right_data)
    left = (factor.left_indptr, factor.left_indices, left_data)

    def kernel(*args: Any) -> None:
        x, y = args[5], args[6]
        multiply(x, scale_in, out=z)
        w.fill(0.0)
        matvec(inner, n, *right, z, w)
        matvec(n, inner, *left, w, y)

    return kernel


FACTOR_SHARE = 0.5
"""GCS iterates through a graph's product factor when its entries (both factors) are at most
this share of the graph's edges: a factored mat-vec is two compiled calls and a scaling, so
it pays only where the incidence is much smaller than the product (hub-dense pools)."""


def _uses_factor(a: sp.csr_matrix, factor: ProductFactor | None) -> bool:
    return (
        factor is not None
        and _csr_matvec is not None
        and factor.n == a.shape[0]
        and factor.left_indices.size + factor.right_indices.size <= FACTOR_SHARE * a.nnz
    )


def row_normalise(adjacency: sp.csr_matrix) -> sp.csr_matrix:
    """``W[i, j] = A[i, j] / sum_k A[i, k]``; rows with no edges stay zero."""
    return sp.csr_matrix(
        (_row_normalised_data(adjacency), adjacency.indices.copy(), adjacency.indptr.copy()),
        shape=adjacency.shape,
    )


def _iterate(
    step: Callable[[np.ndarray], np.ndarray],
    start: np.ndarray,
    tol: float,
    max_iter: int,
    name: str,
) -> np.ndarray:
    p = start
    for _ in range(max_iter):
        nxt = step(p)
        delta = float(np.abs(nxt - p).sum())
        p = nxt
        if delta < tol:
            return p
    warn(f"{name} did not converge in {max_iter} iterations (tol={tol})")
    return p


GCS_SOLVE_MAX_NODES = 600


EXTRAPOLATIONS = 8
"""At most this many dominant-mode jumps (:class:`_DominantMode`) per call; the plain
iteration runs on after them, so a poor estimate can cost steps but not convergence."""

SETTLED = 0.05
"""The ratio of successive pass steps has settled when two in a row differ by at most this
share, and the measured mode agrees with it to the same share."""

SLOW_RATIO = 0.1
"""A jump is tried only while a pass shrinks the step by less than this factor (``l^2``,
``|l| > 0.32``); faster modes die out on their own within a few passes."""


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a . b`` without BLAS: ``@`` on long vectors wakes BLAS's threads, which on a busy
    machine made each call cost milliseconds and slowed the mat-vecs after it (n = 20 000:
    the whole iteration 4x slower)."""
    return float(np.add.reduce(a * b))


class _DominantMode:
    """Removes the slowest mode of ``p <- base + T p`` when it is alone, by one exact jump.

    Once one eigenvalue ``l`` of ``T`` is left (the step ratio per pass settles at ``l^2``),
    ``p_k = p* + c l^k v``, so two consecutive signed steps ``d1``, ``d2`` give
    ``l = d1.d2 / d1.d1`` and ``p* = p + l / (1 - l) d2``. Degree-normalised GCS needs it: on
    an asymmetric graph (entity weights shared by unequal entity counts) ``D^-b A D^(b-1)``
    has a top eigenvalue near, not at, 1, and the start ``s`` has a component on it (exactly
    none when it is 1), which the plain iteration sheds only at ``((1 - alpha) l_W)^k``
    (``l_W = 0.995`` on the zipf n = 200 pool of ``grapher-bench bench-latency``: 137 mat-vecs,
    23 with the jump). The stopping rule stays the plain one, tested on two plain steps after
    the last jump, so the guarantee is unchanged."""

    __slots__ = ("left", "measuring", "previous", "ratio")

    def __init__(self, jumps: int) -> None:
        self.left = jumps
        self.measuring = False
        self.previous = self.ratio = 0.0

    def after_pass(
        self,
        p: np.ndarray,
        middle: np.ndarray,
        first: np.ndarray | None,
        step: np.ndarray,
        delta: float,
        scratch: np.ndarray,
    ) -> None:
        """Record a pass (``first -> middle -> p``, ``step = p - middle``, ``delta`` its L1);
        after a measuring pass (``first`` kept), jump ``p`` in place if the mode is clean."""
        ratio = delta / self.previous if self.previous else 0.0
        if first is not None:
            self.measuring = False
            np.subtract(middle, first, out=scratch)
            norm = _dot(scratch, scratch)
            slope = _dot(scratch, step) / norm if norm > 0 else 0.0
            if 0.0 < abs(slope) < 1.0 and abs(slope * slope - ratio) <= SETTLED * ratio:
                p += np.multiply(step, slope / (1.0 - slope), out=scratch)
                self.left -= 1
                self.previous = self.ratio = 0.0
                return
        settled = abs(ratio - self.ratio) <= SETTLED * ratio
        self.measuring = self.left > 0 and ratio > SLOW_RATIO and settled
        self.previous, self.ratio = delta, ratio


def _matvec(
    n: int, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray
) -> Callable[..., Any]:
    """``kernel(n, n, indptr, indices, data, x, y)``: ``y += A x`` (scipy's csr kernel)."""
    if _csr_matvec is not None:
        return cast(Callable[..., Any], _csr_matvec)
    matrix = sp.csr_matrix((data, indices, indptr), shape=(n, n))  # pragma: no cover

    def _fallback(  # pragma: no cover - scipy without the private kernel
        _r: int, _c: int, _p: Any, _i: Any, _d: Any, vector: np.ndarray, out: np.ndarray
    ) -> None:
        out += matrix @ vector

    return _fallback  # pragma: no cover


def _iterate_affine(
    transition: sp.csr_matrix | tuple[np.ndarray, np.ndarray, np.ndarray],
    base: np.ndarray,
    start: np.ndarray,
    tol: float,
    max_iter: int,
    name: str,
    damping: float = 0.0,
    extrapolate: bool = False,
    kernel: Callable[..., Any] | None = None,
) -> np.ndarray:
    """``p <- transition @ p + base`` until ``||p_new - p||_1 < tol``, with no allocation.

    ``damping`` (``1 - alpha`` for GCS, where ``transition = damping * W`` with ``W``
    row-stochastic or zero per row) changes only the start: the iteration begins at
    ``q_0 = (p_1 + damping * p_0) / (1 + damping)`` instead of ``p_0 = start``. The sequence
    ``q_k = (p_{k+1} + damping * p_k) / (1 + damping)`` obeys the same recursion
    (``q_{k+1} = base + transition q_k``), has the same fixed point and the same stopping rule,
    but carries no component on the eigenvalue ``-damping``: the mode that makes Algorithm 1
    crawl at ``0.9^k`` on bipartite-like graphs (a foreign-key star; 188 -> 38 steps on a
    spider_dev top-200 at alpha 0.1), and no other mode grows (``|l + d| / (1 + d) <= 1``).
    ``extrapolate`` removes a slow mode that is left alone later (:class:`_DominantMode`).
    Convergence is tested every second step (the result is then at most one step further
    along). This is the hot loop of GCS: it calls scipy's csr mat-vec kernel directly, or
    ``kernel`` (same signature, ``y += transition @ x``: a product factor's, for instance).
    """
    n = start.size
    if isinstance(transition, tuple):  # (indptr, indices, data) of a csr matrix
        indptr, indices, data = transition
    else:
        indptr, indices, data = transition.indptr, transition.indices, transition.data
    if kernel is None:
        kernel = _matvec(n, indptr, indices, data)
    copyto, subtract, absolute, total = np.copyto, np.subtract, np.absolute, np.add.reduce
    p, nxt, step, scratch = start.copy(), np.empty(n), np.empty(n), np.empty(n)
    if damping:
        copyto(nxt, base)
        kernel(n, n, indptr, indices, data, p, nxt)  # nxt += transition @ p
        p *= damping
        p += nxt
        p /= 1.0 + damping
    mode = _DominantMode(EXTRAPOLATIONS) if extrapolate else None
    # Two steps per pass (the second ends with p holding the newer iterate), convergence
    # tested after the second: the same arithmetic and stopping point as one step at a time.
    for _ in range(max_iter // 2):
        first = p.copy() if mode is not None and mode.measuring else None
        copyto(nxt, base)
        kernel(n, n, indptr, indices, data, p, nxt)
        copyto(p, base)
        kernel(n, n, indptr, indices, data, nxt, p)
        delta = total(absolute(subtract(p, nxt, out=step), out=scratch))  # ||p - nxt||_1
        if delta < tol:
            return p
        if mode is not None:
            mode.after_pass(p, nxt, first, step, float(delta), scratch)
    if max_iter % 2:  # the odd last step, tested as well
        copyto(nxt, base)
        kernel(n, n, indptr, indices, data, p, nxt)
        p, nxt = nxt, p
        if total(absolute(subtract(p, nxt, out=step), out=step)) < tol:
            return p
    warn(f"{name} did not converge in {max_iter} iterations (tol={tol})")
    return p


def _solve_fixed_point(a: sp.csr_matrix, data: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``p = base + T p`` (``T`` = ``data`` on ``a``'s structure) by one dense LU over the nodes
    with out-edges; a node without any is ``base`` in closed form."""
    transition = sp.csr_matrix((data, a.indices, a.indptr), shape=a.shape)
    active = np.flatnonzero(np.diff(transition.indptr))
    if active.size > GCS_SOLVE_MAX_NODES:
        raise InputError(
            f"method='solve' is for at most {GCS_SOLVE_MAX_NODES} connected "
            f"nodes, got {active.size}; use method='iterate'"
        )
    p = base.copy()  # rows without edges: p_i = alpha * s_i at the fixed point
    block = transition[active]
    inside = block[:, active].toarray()
    # Edges from an active node to a node without out-edges use that node's known value.
    rhs = base[active] + block @ p - inside @ p[active]
    p[active] = np.linalg.solve(np.eye(active.size) - inside, rhs)
    return p


def _checked_degrees_of(a: sp.csr_matrix, exponent: float, degrees_of: Any) -> sp.csr_matrix | None:
    """``degrees_of`` after checking it and the exponent (taken as it is when already a float
    csr matrix: the ranker passes its graph's adjacency)."""
    if not 0.5 <= exponent <= 1.0:
        raise InputError(f"degree_exponent must be in [0.5, 1], got {exponent!r}")
    degrees = degrees_of
    if degrees_of is not None and not (
        type(degrees_of) is sp.csr_matrix and degrees_of.dtype == np.float64
    ):
        degrees = sp.csr_matrix(degrees_of, dtype=np.float64)
    if degrees is not None and degrees.shape != a.shape:
        raise InputError(f"degrees_of has shape {degrees.shape}, adjacency {a.shape}")
    return cast("sp.csr_matrix | None", degrees)


def _degree_data(a: sp.csr_matrix, scale: float, exponent: float, degrees_of: Any) -> np.ndarray:
    """:func:`_degree_normalised_data` after :func:`_checked_degrees_of`."""
    degrees = _checked_degrees_of(a, exponent, degrees_of)
    return _degree_normalised_data(a, exponent, scale, degrees)


def gcs_scores(
    adjacency: Any,
    seeds: Any,
    alpha: float = DEFAULT_GCS_ALPHA,
    tol: float = 1e-8,
    max_iter: int = DEFAULT_MAX_ITER,
    method: str = "iterate",
    normalisation: str = "row",
    degree_exponent: float = DEFAULT_DEGREE_EXPONENT,
    degrees_of: Any = None,
    factor: ProductFactor | None = None,
) -> np.ndarray:
    """Graph Cohesive Smoothing, Algorithm 1 of the paper (``normalisation="row"``, the
    default of this function, which the GAT's input features keep).

    ``W`` = row-normalised ``adjacency`` (rows without edges stay zero); ``p0 = s``;
    ``p <- alpha * s + (1 - alpha) * W p`` until ``||p_new - p||_1 < tol``; return
    ``max(p, s)`` element-wise. A node's score is a weighted average of its neighbours' scores
    pulled towards its own seed, and never falls below its seed. Seeds are expected to be
    non-negative (the reranker makes them so): an isolated node then keeps exactly its seed.

    ``method="iterate"`` (default) runs the iteration with sparse mat-vecs and one exact
    extrapolation step per iteration (see ``_iterate_affine``: same fixed point, same stopping
    guarantee, up to 5x fewer steps on foreign-key graphs), and in the degree form a jump past a
    slow mode once it is alone (``_DominantMode``: 6x fewer steps on hub-dense entity graphs):
    cost grows with the number of edges, and it stays single-threaded. ``"solve"`` computes its
    fixed point ``p* = alpha (I - (1 - alpha) W)^-1 s`` with one dense LU over the nodes that
    have edges (isolated nodes are ``alpha * s`` in closed form): the same result to within
    ``tol``, useful as a reference; it is O(n^3), limited to ``GCS_SOLVE_MAX_NODES`` connected
    nodes, and multi-threaded BLAS can stall badly on a busy machine (measured: 0.5 ms alone,
    100 ms with the cores oversubscribed), so it is never the default. ``"auto"`` =
    ``"iterate"``.

    ``normalisation="degree"`` replaces ``W`` by ``D^-b A D^(b-1)`` (``b = degree_exponent``,
    see the module docstring): a score is then no longer an average, so it may pass the best
    neighbour's when several strong neighbours agree; it still never falls below its seed.
    ``degrees_of`` (same shape) gives the degrees when they should not come from
    ``adjacency`` itself: :class:`GCSRanker` passes the unweighted graph beside the one whose
    kinds it weighted, so a kind weighted 0.5 transmits half its normalised share.

    ``factor``: ``adjacency`` as the product it was counted by (a graph's
    ``adjacency_factor``); the iteration then runs through it where that costs fewer
    operations than the edges (:data:`FACTOR_SHARE`: hub-dense entity pools), with the same
    result up to rounding (tested to 1e-9 against the csr iteration).
    """
    a, s = _check_inputs(adjacency, seeds, alpha)
    if method not in ("auto", "iterate", "solve"):  # "auto" = "iterate", kept for callers
        raise InputError(f"method must be 'auto', 'iterate' or 'solve', got {method!r}")
    if normalisation not in NORMALISATIONS:
        raise InputError(f"normalisation must be one of {NORMALISATIONS}, got {normalisation!r}")
    if a.nnz == 0:
        return np.maximum(alpha * s, s)
    base = alpha * s
    if method != "solve" and _uses_factor(a, factor):
        assert factor is not None  # _uses_factor checked it
        scalings = _scalings(a, factor, normalisation, alpha, degree_exponent, degrees_of)
        kernel = _factored_kernel(factor, *scalings)
        transition: tuple[np.ndarray, np.ndarray, np.ndarray] = (a.indptr, a.indices, a.data)
    else:
        kernel = None
        if normalisation == "row":
            data = _row_normalised_data(a, 1.0 - alpha)  # (1 - alpha) W on a's structure
        else:
            data = _degree_data(a, 1.0 - alpha, degree_exponent, degrees_of)
        if method == "solve":
            return np.maximum(_solve_fixed_point(a, data, base), s)
        transition = (a.indptr, a.indices, data)
    p = _iterate_affine(
        transition,
        base,
        s,
        tol,
        max_iter,
        "gcs_scores",
        1.0 - alpha,
        extrapolate=normalisation == "degree",  # row: Algorithm 1's literal steps
        kernel=kernel,
    )
    return np.maximum(p, s)


def _scalings(
    a: sp.csr_matrix,
    factor: ProductFactor,
    normalisation: str,
    alpha: float,
    exponent: float,
    degrees_of: Any,
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(receive, send)``: GCS's ``(1 - alpha) W = diag(receive) A diag(send)`` (row form:
    no ``send``), the same factors the csr path applies to the data."""
    if normalisation == "row":
        sums = factor.row_and_column_sums()[0]
        return np.divide(1.0 - alpha, sums, out=np.zeros_like(sums), where=sums > 0), None
    degrees = _checked_degrees_of(a, exponent, degrees_of)
    return _degree_scalings(a, exponent, 1.0 - alpha, degrees, factor)


def ppr_scores(
    adjacency: Any,
    seeds: Any,
    alpha: float = DEFAULT_PPR_ALPHA,
    tol: float = 1e-10,
    max_iter: int = DEFAULT_MAX_ITER,
) -> np.ndarray:
    """Personalized PageRank with the seeds as personalisation.

    ``P[i, j] = A[i, j] / sum_k A[k, j]`` (column-normalised: node j's score flows to its
    neighbours); ``v = s / sum(s)``; ``p <- alpha * v + (1 - alpha) * (P p + d(p) v)`` where
    ``d(p)`` is the mass on *dangling* nodes (no edges), which teleports back along ``v`` -- so
    no mass leaks and the result sums to 1. Seeds must be non-negative; all-zero seeds give a
    uniform personalisation.
    """
    a, s = _check_inputs(adjacency, seeds, alpha)
    if s.size == 0:
        return s
    if s.min() < 0:
        raise InputError("ppr_scores needs non-negative seeds (they form a probability vector)")
    peak = s.max()
    # Scale by the largest seed first: the sum of finite seeds can pass the float maximum
    # (inf), and s / inf would be all zeros.
    v = s / peak if peak > 0 else np.ones(s.size)
    v = v / v.sum()
    column_sums = np.asarray(a.sum(axis=0)).ravel()
    dangling = column_sums == 0
    inverse = np.divide(1.0, column_sums, out=np.zeros_like(column_sums), where=~dangling)
    transition = (a @ sp.diags(inverse)).tocsr()
    transition.data *= 1.0 - alpha
    damping = 1.0 - alpha

    def step(p: np.ndarray) -> np.ndarray:
        return transition @ p + (alpha + damping * p[dangling].sum()) * v

    return _iterate(step, v, tol, max_iter, "ppr_scores")


def _check_iteration(tol: object, max_iter: object) -> None:
    """The iteration settings of :func:`gcs_scores` / :func:`ppr_scores`, bounded as a
    ranker's are (``MAX_ITER_SPEC`` and ``TOL`` of :mod:`grapher_core.ranking.base`)."""
    TOL.check("tol", tol)
    MAX_ITER_SPEC.check("max_iter", max_iter)


@dataclass(frozen=True)
class GCSRanker(DeclaredFields):
    """Graph Cohesive Smoothing (:func:`gcs_scores`); ``normalisation="row"`` is the paper's
    exact Algorithm 1, ``"degree"`` (default) the degree-aware form that does not lift every
    spoke of a hub (see the module docstring)."""

    FIELDS: ClassVar[Schema] = {
        "alpha": ALPHA,
        "tol": TOL,
        "max_iter": MAX_ITER_SPEC,
        "method": Spec("str", choices=("auto", "iterate", "solve")),
        "normalisation": Spec("str", choices=NORMALISATIONS),
        "degree_exponent": Spec("float", low=0.5, high=1.0),
        "kind_weights": kind_weights_spec(),
        "alone_weights": kind_weights_spec(allow_auto=True),
        "beside_weights": kind_weights_spec(allow_auto=True),
        "name": RANKER_NAME,
    }
    alpha: float = DEFAULT_GCS_ALPHA
    tol: float = 1e-8
    max_iter: int = DEFAULT_MAX_ITER
    method: str = "auto"
    normalisation: str = "degree"
    degree_exponent: float = DEFAULT_DEGREE_EXPONENT
    kind_weights: tuple[tuple[str, float], ...] | Mapping[str, float] = ()
    alone_weights: tuple[tuple[str, float], ...] | Mapping[str, float] | str = AUTO_ALONE_WEIGHTS
    beside_weights: tuple[tuple[str, float], ...] | Mapping[str, float] | str = AUTO_ALONE_WEIGHTS
    name: str = "gcs"

    def __post_init__(self) -> None:
        """Refuse a bad setting here, not at the first query."""
        object.__setattr__(self, "alpha", check_alpha(self.alpha))
        check_fields(self)
        object.__setattr__(self, "kind_weights", _kind_weights("kind_weights", self.kind_weights))
        for name in ("alone_weights", "beside_weights"):
            value = getattr(self, name)
            if isinstance(value, str):
                if value != AUTO_ALONE_WEIGHTS:
                    raise ConfigError(
                        f"{name} must be {AUTO_ALONE_WEIGHTS!r}, (kind, weight) pairs or a "
                        f"dict, got {value!r}"
                    )
            else:
                object.__setattr__(self, name, _kind_weights(name, value))

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        weighted = self._weighted(graph, context.candidates)
        unweighted = weighted is graph.adjacency
        return gcs_scores(
            weighted,
            seeds,
            self.alpha,
            self.tol,
            self.max_iter,
            self.method,
            self.normalisation,
            self.degree_exponent,
            None if unweighted else graph.adjacency,
            graph.adjacency_factor if unweighted else None,
        )

    def alone_weights_for(self, candidates: Sequence[Candidate]) -> tuple[tuple[str, float], ...]:
        """The alone shares that apply to this pool: under ``"auto"`` the sentence-sized ones
        when :func:`sentence_sized` says so, the passage-sized ones otherwise."""
        return _by_chunk_size(
            self.alone_weights, SENTENCE_ALONE_WEIGHTS, DEFAULT_ALONE_WEIGHTS, candidates
        )

    def alone_share(
        self, graph: CandidateGraph, candidates: Sequence[Candidate] = ()
    ) -> tuple[str, float] | None:
        """The pool's only edge kind and the share :meth:`alone_weights_for` lets it pass on,
        when that changes anything (degree form only: row normalisation cancels a kind's scale
        wherever it is alone); ``None`` otherwise. The reranker says it when it damps."""
        present = [kind for kind, matrix in graph.by_kind.items() if matrix.nnz]
        if self.normalisation != "degree" or len(present) != 1:
            return None
        if isinstance(self.alone_weights, str) and present[0] not in _AUTO_ALONE_KINDS:
            return None  # no share for this kind at any chunk size: no need to size the chunks
        share = dict(self.alone_weights_for(candidates)).get(present[0], 1.0)
        return None if share == 1.0 else (present[0], share)

    def beside_shares(
        self, graph: CandidateGraph, candidates: Sequence[Candidate] = ()
    ) -> tuple[tuple[str, float], ...]:
        """The kinds :attr:`beside_weights` damps in this pool (degree form, two or more kinds
        present; under ``"auto"`` :data:`BESIDE_WEIGHTS` for passage-sized chunks,
        :data:`SENTENCE_BESIDE_WEIGHTS` for sentence-sized ones), with their shares; empty
        otherwise. The reranker says it when it damps."""
        present = {kind for kind, matrix in graph.by_kind.items() if matrix.nnz}
        if self.normalisation != "degree" or len(present) < 2:
            return ()
        if isinstance(self.beside_weights, str) and not present & _AUTO_BESIDE_KINDS:
            return ()  # no share for these kinds at any chunk size: no need to size the chunks
        pairs = _by_chunk_size(
            self.beside_weights, SENTENCE_BESIDE_WEIGHTS, BESIDE_WEIGHTS, candidates
        )
        return tuple((kind, share) for kind, share in pairs if kind in present and share != 1.0)

    def _weighted(
        self, graph: CandidateGraph, candidates: Sequence[Candidate] = ()
    ) -> sp.csr_matrix:
        """The adjacency with each kind's edges scaled by :attr:`kind_weights`, and by
        :meth:`alone_share` or, beside other kinds, :attr:`beside_weights` (degree form only)."""
        if self.normalisation != "degree":
            return graph.adjacency
        weights = dict(self.kind_weights)
        alone = self.alone_share(graph, candidates)
        shares = dict([alone] if alone is not None else self.beside_shares(graph, candidates))
        for kind, share in shares.items():
            weights[kind] = weights.get(kind, 1.0) * share
        if all(weights.get(k, 1.0) == 1.0 for k, m in graph.by_kind.items() if m.nnz):
            return graph.adjacency
        parts = [matrix * weights.get(kind, 1.0) for kind, matrix in graph.by_kind.items()]
        return sp.csr_matrix(sum(parts[1:], parts[0]))


def _by_chunk_size(
    setting: Any,
    sentences: tuple[tuple[str, float], ...],
    passages: tuple[tuple[str, float], ...],
    candidates: Sequence[Candidate],
) -> tuple[tuple[str, float], ...]:
    """A share setting's pairs for this pool: under ``"auto"`` ``sentences`` or ``passages`` by
    :func:`sentence_sized`; explicit pairs apply to every pool."""
    if isinstance(setting, str):
        return sentences if sentence_sized(candidates) else passages
    return cast(tuple[tuple[str, float], ...], setting)  # pairs since __post_init__


def _kind_weights(field: str, weights: Any) -> tuple[tuple[str, float], ...]:
    """``{kind: weight}`` or ``((kind, weight), ...)`` as sorted pairs, finite and >= 0."""
    if isinstance(weights, Mapping):
        weights = tuple(weights.items())
    try:
        pairs = tuple(sorted((str(kind), float(weight)) for kind, weight in weights))
    except (TypeError, ValueError) as error:
        raise ConfigError(
            f"{field} must be (kind, weight) pairs or a dict, got {weights!r}"
        ) from error
    if any(not (0.0 <= weight < float("inf")) for _, weight in pairs):
        raise ConfigError(f"{field} must be finite and >= 0, got {weights!r}")
    return pairs


PPR_CAN_LOSE = (
    "ppr can rank below the retriever's own order: on chunk adjacency it does (hybrid PR@10 "
    "squad_chunks 97.0 vs 98.4, hotpotqa_sentences 42.5 vs 48.6); on tables it is sometimes "
    "ahead of GCS, the default, on passages behind it (docs/benchmarks.md); measure it on "
    "your data before relying on it"
)
"""Said once when a PPR ranker is built: picking it must not be a silent loss."""


@dataclass(frozen=True)
class PPRRanker(DeclaredFields):
    """Personalized PageRank (:func:`ppr_scores`); known to over-rank hubs, and below the
    retriever's order on chunk-adjacency sets: said once when one is built."""

    FIELDS: ClassVar[Schema] = {
        "alpha": ALPHA,
        "tol": TOL,
        "max_iter": MAX_ITER_SPEC,
        "name": RANKER_NAME,
    }
    alpha: float = DEFAULT_PPR_ALPHA
    tol: float = 1e-10
    max_iter: int = DEFAULT_MAX_ITER
    name: str = "ppr"

    def __post_init__(self) -> None:
        """Refuse a bad setting here, not at the first query."""
        object.__setattr__(self, "alpha", check_alpha(self.alpha))
        check_fields(self)
        warn_once(PPR_CAN_LOSE)

    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        return ppr_scores(graph.adjacency, seeds, self.alpha, self.tol, self.max_iter)
