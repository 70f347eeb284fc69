"""What an edge builder is: the :class:`Proximity` protocol and the pair->matrix helper.

Every builder works through an inverted index (value -> candidates) or a sparse product, so the
cost follows the number of edges, never n^2 pairs. A builder returns an ``n x n`` non-negative
``scipy.sparse.csr_matrix`` where ``A[i, j]`` is the strength of the edge i -> j; the graph layer
scales it by the builder's ``weight``, drops self-links and sums the kinds.

Writing your own is a small protocol (see :class:`Proximity`)::

    class SameAuthor:
        kind = "authorship"
        weight = 1.0
        def adjacency(self, candidates):
            return links_to_matrix(...)  # any n x n non-negative sparse matrix
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from grapher_core.candidates import Candidate

LinkKey = tuple[tuple[str | None, str], ...]
"""Where a link points, for expansion beyond the candidates (:mod:`grapher_core.expand`):
``((field, value), ...)``, all of which must match; ``field`` ``None`` means the object id."""


def link_value(value: object) -> str:
    """The canonical string form of a metadata value in a :data:`LinkKey`: integers (also
    ``3.0`` and ``"3"``) as their decimal digits, strings stripped, other scalars via ``str``."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


@runtime_checkable
class Proximity(Protocol):
    """What the graph builder needs from an edge builder.

    ``kind`` names the edges in explanations and typed rankers; ``weight`` scales this kind
    against the others when they are summed into one adjacency matrix.
    """

    @property
    def kind(self) -> str: ...

    @property
    def weight(self) -> float: ...

    def adjacency(self, candidates: Sequence[Candidate]) -> sp.csr_matrix:
        """Return the ``n x n`` non-negative adjacency among ``candidates`` for this kind."""
        ...


def links_to_matrix(
    rows: Iterable[int] | np.ndarray,
    cols: Iterable[int] | np.ndarray,
    n: int,
    data: Iterable[float] | np.ndarray | None = None,
    *,
    symmetric: bool = False,
    binary: bool = True,
) -> sp.csr_matrix:
    """Build an ``n x n`` csr matrix from edge lists, dropping self-links.

    ``binary`` collapses repeated edges to weight 1; otherwise repeated edges add up.
    ``symmetric`` adds the reverse of every edge (for binary matrices: the union).
    """
    r = np.asarray(list(rows) if not isinstance(rows, np.ndarray) else rows, dtype=np.int64)
    c = np.asarray(list(cols) if not isinstance(cols, np.ndarray) else cols, dtype=np.int64)
    if data is None:
        d = np.ones(len(r), dtype=np.float64)
    else:
        d = np.asarray(list(data) if not isinstance(data, np.ndarray) else data, dtype=np.float64)
    keep = r != c
    r, c, d = r[keep], c[keep], d[keep]
    if symmetric:
        r, c, d = np.concatenate([r, c]), np.concatenate([c, r]), np.concatenate([d, d])
    matrix = sp.csr_matrix((d, (r, c)), shape=(n, n))
    matrix.sum_duplicates()
    if binary and matrix.nnz:
        matrix.data[:] = 1.0
    return matrix


def index_by(values: Iterable[tuple[int, Hashable]]) -> dict[Hashable, list[int]]:
    index: dict[Hashable, list[int]] = defaultdict(list)
    for position, value in values:
        index[value].append(position)
    return index
