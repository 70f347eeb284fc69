"""What every learned ranker reads before its network, in one place.

The GAT/MLP, G-RAG and query-aware GNN rankers all need the same three things: the query
vector, one vector per candidate (given ones used as they are, the others embedded in one
batch), both checked against the checkpoint's embedding dimension, and a scope that limits
torch's threads for one call (:func:`~grapher_core.utils.threads.torch_threads`). Each ranker
passes its own dimension check, so errors name its checkpoint. Every vector is converted by
:func:`as_vector` / :func:`as_matrix`: a ragged, non-numeric, mis-shaped or non-finite one is
refused with a :class:`~grapher_core.errors.GraphERError` naming the object and both
dimensions, never a numpy error from deep inside a network. Texts sent to an embedder have
their lone surrogates replaced by U+FFFD (tokenizers refuse them), said once. Arrays reach the
network's device through :func:`to_device` only, in training and in ranking alike, or, for
a ranking call's several arrays on a GPU, through :func:`arrays_to_device` (one packed copy).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.enrich.concepts import sanitise_texts
from grapher_core.errors import EmbeddingMismatchError, InputError
from grapher_core.vectors import stacked_rows

if TYPE_CHECKING:
    from grapher_core.edges.graph import CandidateGraph
    from grapher_core.embeddings import Embedder
    from grapher_core.ranking.base import RankContext

__all__ = [
    "DeviceTables",
    "PackedArrays",
    "arrays_to_device",
    "as_matrix",
    "as_vector",
    "check_rank_inputs",
    "default_embedder_checked",
    "object_vectors",
    "query_vector",
    "to_device",
]


def to_device(array: np.ndarray, device: str) -> Any:
    """``array`` as a tensor on ``device``: how every batch, target and table gets there (a
    tensor made on the default device and used beside the model's is a CUDA error)."""
    import torch

    return torch.from_numpy(np.ascontiguousarray(array)).to(device)


_WORD = np.dtype(np.float32)


@dataclass(frozen=True)
class PackedArrays:
    """Several float32 / integer arrays laid out in one float32 buffer (integers as int32
    words, checked to fit), so that they cross to a GPU in one copy: ``layout`` holds each
    array's start, shape and dtype."""

    buffer: np.ndarray
    layout: tuple[tuple[int, tuple[int, ...], str], ...]

    @staticmethod
    def pack(arrays: Sequence[np.ndarray], out: np.ndarray | None = None) -> PackedArrays:
        """Lay ``arrays`` out in ``out`` (a float32 buffer at least as long, reused between
        calls) or a new buffer."""
        sizes = [int(np.asarray(a).size) for a in arrays]
        total = sum(sizes)
        buffer = np.empty(total, dtype=_WORD) if out is None else out[:total]
        layout = []
        start = 0
        for array, size in zip(arrays, sizes, strict=True):
            array = np.asarray(array)
            kind = array.dtype.kind
            if kind == "f":
                buffer[start : start + size] = array.reshape(-1)
            elif kind in "iu":
                if size and (array.min() < -(2**31) or array.max() >= 2**31):
                    raise InputError(f"an index array holds values past int32: {array.dtype}")
                buffer[start : start + size].view(np.int32)[:] = array.reshape(-1)
            else:
                raise InputError(f"cannot pack an array of dtype {array.dtype}")
            layout.append((start, tuple(array.shape), array.dtype.str))
            start += size
        return PackedArrays(buffer, tuple(layout))

    def unpack(self, words: Any) -> list[Any]:
        """The arrays again, as views of ``words`` (this buffer as a torch tensor, on any
        device); integer arrays come back as int64 tensors (one cast each, on the device)."""
        import torch

        out = []
        for start, shape, dtype in self.layout:
            size = int(np.prod(shape, dtype=np.int64))
            part = words[start : start + size]
            if np.dtype(dtype).kind == "f":
                out.append(part.view(shape))
            else:
                out.append(part.view(torch.int32).view(shape).to(torch.int64))
        return out


class _Staging(threading.local):
    """A pinned host buffer per thread, grown as needed, and the event that marks its last
    copy done: the next call waits on it (already passed after a call's result came back)
    before writing the buffer again."""

    buffer: Any = None
    copied: Any = None


_staging = _Staging()


def arrays_to_device(arrays: Sequence[np.ndarray], device: str) -> list[Any]:
    """``arrays`` as tensors on ``device``. On CUDA in one host-to-device copy: packed into a
    reused pinned buffer (:class:`PackedArrays`) and copied without blocking the host, then
    viewed apart on the device; elsewhere as :func:`to_device` (on CPU, no copy at all)."""
    import torch

    target = torch.device(device)
    if target.type != "cuda":
        return [to_device(a, device) for a in arrays]
    total = sum(int(np.asarray(a).size) for a in arrays)
    if _staging.copied is not None:
        _staging.copied.synchronize()  # the buffer's last copy has left it
    if _staging.buffer is None or _staging.buffer.numel() < total:
        _staging.buffer = torch.empty(max(total, 1 << 16), dtype=torch.float32, pin_memory=True)
    packed = PackedArrays.pack(arrays, _staging.buffer.numpy())
    words = _staging.buffer[: packed.buffer.size].to(target, non_blocking=True)
    _staging.copied = torch.cuda.Event()
    _staging.copied.record(torch.cuda.current_stream(target))
    return packed.unpack(words)


class DeviceTables:
    """Arrays every batch indexes into (embedding tables), moved to each device once: a batch
    carries row indices on the device, and the table they index must be there too."""

    def __init__(self, *arrays: np.ndarray) -> None:
        self.arrays = arrays
        self._moved: dict[str, tuple[Any, ...]] = {}

    def on(self, device: str) -> tuple[Any, ...]:
        if device not in self._moved:
            self._moved[device] = tuple(to_device(a, device) for a in self.arrays)
        return self._moved[device]


DimensionCheck = Callable[[int], None]
"""Raises, naming both dimensions, when a vector's size is not the checkpoint's."""


def _numeric(value: object, what: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError, OverflowError) as error:  # ragged, text, objects
        raise InputError(f"{what} is not numeric ({type(value).__name__}: {error})") from None
    return array


def as_vector(value: object, dim: int | None, what: str) -> np.ndarray:
    """``value`` as a float32 vector (a ``(d,)`` or ``(1, d)`` array); with ``dim``, of that
    size and finite, else an error naming ``what`` and both dimensions."""
    array = _numeric(value, what)
    if array.ndim == 0 or (array.ndim == 2 and array.shape[0] != 1) or array.ndim > 2:
        expected = f"({dim},)" if dim else "one vector"
        raise InputError(f"{what}: expected {expected}, got an array of shape {array.shape}")
    vector = array.reshape(-1)
    if dim is not None:
        if vector.size != dim:
            raise EmbeddingMismatchError(f"{what}: expected {dim}-d, got {vector.size}-d")
        if not np.all(np.isfinite(vector)):
            raise InputError(f"{what} contains NaN or inf")
    return vector


def as_matrix(value: object, dim: int | None, what: str, rows: int | None = None) -> np.ndarray:
    """``value`` as a float32 ``(rows, dim)`` matrix of finite values, else an error naming
    ``what``, the expected and the actual shape."""
    array = _numeric(value, what)
    if array.ndim != 2 or (rows is not None and array.shape[0] != rows):
        expected = f"({'k' if rows is None else rows}, {dim if dim else 'd'})"
        raise InputError(f"{what}: expected shape {expected}, got {array.shape}")
    if dim is not None and array.shape[1] != dim:
        raise EmbeddingMismatchError(f"{what}: expected {dim}-d rows, got {array.shape[1]}-d")
    if not np.all(np.isfinite(array)):
        raise InputError(f"{what} contains NaN or inf")
    return array


def check_rank_inputs(graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> int:
    """The number of candidates, after checking that graph, seeds and candidates agree."""
    n = graph.n
    size = np.asarray(seeds).size
    if len(context.candidates) != n or size != n:
        raise InputError(
            f"graph has {n} nodes but got {len(context.candidates)} candidates and {size} seeds"
        )
    return n


def default_embedder_checked(check_name: Callable[[str | None], None]) -> Embedder:
    """The packaged embedding model, refused by ``check_name`` when the checkpoint was trained
    on another one (a learned ranker builds it lazily, only when no vectors were given)."""
    from grapher_core.embeddings import default_embedder

    embedder = default_embedder()
    check_name(embedder.name)
    return embedder


def query_vector(
    context: RankContext,
    embedder: Callable[[], Embedder],
    check_dimension: DimensionCheck,
    ranker: str,
) -> np.ndarray:
    """The query's vector: the given one, else the query text embedded."""
    if context.query_embedding is not None:
        vector = as_vector(context.query_embedding, None, f"the {ranker} query_embedding")
    elif context.query:
        text = sanitise_texts([context.query], ["the query"], f"the {ranker} ranker")[0]
        vector = as_vector(embedder().embed_query(text), None, "the embedder's query vector")
    else:
        raise InputError(
            f"the {ranker} ranker needs the query: pass query= (text) or "
            "query_embedding= to rerank()"
        )
    check_dimension(vector.size)
    if not np.all(np.isfinite(vector)):
        raise InputError("query_embedding contains NaN or inf")
    return vector


def object_vectors(
    candidates: Sequence[Candidate],
    dim: int,
    embedder: Callable[[], Embedder],
    check_dimension: DimensionCheck,
) -> np.ndarray:
    """One float32 row per candidate: its own vector, else its text embedded (one batch)."""
    given = [c.embedding for c in candidates]
    stacked = stacked_rows(given)  # the common case: numpy vectors of one length
    if stacked is not None and stacked.dtype != np.float32:
        stacked = stacked.astype(np.float32) if stacked.dtype.kind in "fiu" else None
    if (
        stacked is not None
        and stacked.shape == (len(candidates), dim)
        and np.isfinite(stacked).all()
    ):
        return stacked
    out = np.empty((len(candidates), dim), dtype=np.float32)
    missing: list[int] = []
    for i, candidate in enumerate(candidates):
        if candidate.embedding is None:
            missing.append(i)
            continue
        vector = as_vector(candidate.embedding, None, f"the embedding of {candidate.id!r}")
        if vector.size != dim:
            check_dimension(vector.size)  # raises, naming the dimensions
        out[i] = vector
    if missing:
        empty = [candidates[i].id for i in missing if not candidates[i].text]
        if empty:
            raise InputError(f"candidates without embedding and without text: {empty[:5]}")
        texts = sanitise_texts(
            [candidates[i].text for i in missing],
            [candidates[i].id for i in missing],
            "the learned ranker's embedder",
        )
        vectors = _numeric(embedder().embed_documents(texts), "the embedder's document vectors")
        if vectors.ndim != 2 or vectors.shape[0] != len(missing):
            raise InputError(
                f"the embedder returned an array of shape {vectors.shape} for {len(missing)} "
                f"texts; expected ({len(missing)}, {dim})"
            )
        if vectors.shape[1] != dim:
            check_dimension(int(vectors.shape[1]))
        out[missing] = vectors
    if not np.all(np.isfinite(out)):
        bad = [c.id for c, row in zip(candidates, out, strict=True) if not np.all(np.isfinite(row))]
        raise InputError(f"candidate embeddings contain NaN or inf: {bad[:5]}")
    return out
