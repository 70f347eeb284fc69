"""A message-passing kernel replayed as one CUDA graph per padded graph size.

On a GPU a learned ranker's call on a few hundred candidates is dozens of small kernels whose
launches cost more than their arithmetic (measured for the GAT on an H100: 2.1 ms a call,
microseconds of math). A CUDA graph records the kernel sequence once and replays it with one
launch, but it fixes every tensor's shape and address. So a call is padded to a *size bucket*
(nodes and edges each rounded up to a power of two) and copied into that bucket's static
buffers, and the bucket's graph, captured on its first call, is replayed.

The kernel must be a function of per-node rows, per-call tensors, the edge list and per-edge
rows that sends messages along edges only and is otherwise row-wise, with no host sync and no
data-dependent shape. Then padding changes no real node's output: padding edges are
self-loops on the first padding node, so no real node receives a message from a padding node.
Stale padding rows left by an earlier call are never read by a real node; only the edge list is
rewritten past the call's edges on every call.

On any other device the same padded buffers run eagerly, with no graph: that path exists so
that the padding and buffer reuse are tested on machines without a GPU, and no ranker picks it
there.

Whether the replay pays is measured, not assumed (:class:`PathChooser`): padding a 87k-edge
graph to 131,072 edges measured slower on an H200 than the unpadded kernel it saves launches
of, so a ranker times its paths on the first call of each device and size bucket, checks each
against the model's own forward, and keeps the fastest equal one for the process.
"""

from __future__ import annotations

import functools
import statistics
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from grapher_core.errors import GraphERError, InputError
from grapher_core.utils.callsite import warn_once

__all__ = [
    "CALIBRATION_REPEATS",
    "CALIBRATION_TOLERANCE",
    "EDGE_BUCKETS",
    "MAX_GRAPHS",
    "NODE_BUCKETS",
    "GraphedKernel",
    "Kernel",
    "PathChoice",
    "PathChooser",
    "Run",
    "Tensors",
    "Timer",
    "calibration_bucket",
    "check_edge_index",
    "check_host_edges",
    "size_bucket",
]

NODE_BUCKETS: tuple[int, int] = (64, 4096)
"""Smallest and largest node bucket. Above 4,096 nodes (or the largest edge bucket) a call
runs unpadded: the kernels are long enough there that launches are no longer the cost, and a
padded graph's buffers grow with the bucket."""
EDGE_BUCKETS: tuple[int, int] = (1024, 1 << 17)
"""Smallest and largest edge bucket: 131,072 holds the 87k edges of a dense 2,000-candidate
entity pool (2,000 candidates x 43 shared-entity edges each)."""
MAX_GRAPHS = 16
"""Captured graphs kept per kernel, least recently used dropped first. They share one memory
pool, so the pool is as large as the largest bucket used, not the sum."""
WARMUP_RUNS = 2
"""Eager runs on a side stream before capture, so that lazy initialisation (cuBLAS handles
and workspaces) happens outside the graph, as the CUDA-graph documentation asks."""

Tensors = Sequence[torch.Tensor]
Kernel = Callable[[Tensors, Tensors, torch.Tensor, Tensors], torch.Tensor]
"""``kernel(nodes, shared, edge_index, edges)``: per-node tensors (first dimension n), per-call
tensors, the ``(2, E)`` edge list and per-edge tensors (first dimension E); returns a tensor
whose first dimension is n."""


def _power_of_two_at_least(value: int) -> int:
    return 1 << max(0, value - 1).bit_length()


def size_bucket(n_nodes: int, n_edges: int) -> tuple[int, int] | None:
    """``(nodes, edges)`` a call of this size is padded to, or ``None`` when it is too large to
    keep a graph for. The node bucket always holds one padding node beyond the call's nodes,
    the target of the padding edges."""
    if n_nodes < 0 or n_edges < 0:
        raise InputError(f"sizes must be >= 0, got {n_nodes} nodes and {n_edges} edges")
    nodes = _power_of_two_at_least(max(n_nodes + 1, NODE_BUCKETS[0]))
    edges = _power_of_two_at_least(max(n_edges, EDGE_BUCKETS[0]))
    if nodes > NODE_BUCKETS[1] or edges > EDGE_BUCKETS[1]:
        return None
    return nodes, edges


def calibration_bucket(n_nodes: int, n_edges: int) -> tuple[int, int]:
    """The size class a path choice is measured and cached for: nodes (plus the padding node)
    and edges rounded up to powers of two, like :func:`size_bucket` but without its upper
    limits (graphs past them get a choice too, among the unpadded paths)."""
    if n_nodes < 0 or n_edges < 0:
        raise InputError(f"sizes must be >= 0, got {n_nodes} nodes and {n_edges} edges")
    nodes = _power_of_two_at_least(max(n_nodes + 1, NODE_BUCKETS[0]))
    return nodes, _power_of_two_at_least(max(n_edges, EDGE_BUCKETS[0]))


def check_edge_index(edge_index: torch.Tensor, n: int) -> None:
    """Refuse, by name, an edge whose end is not one of the ``n`` nodes (one device sync): on a
    GPU it would fault, and in padded buffers it would read a padding row."""
    if edge_index.numel():
        low, high = torch.stack(torch.aminmax(edge_index)).tolist()
        if low < 0 or high >= n:
            raise InputError(f"edge_index holds a node outside [0, {n})")


def check_host_edges(edge_index: np.ndarray, n: int) -> None:
    """:func:`check_edge_index` on a numpy edge list, before it goes to a device (no sync)."""
    if edge_index.size and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise InputError(f"edge_index holds a node outside [0, {n})")


@dataclass
class _Slot:
    """One bucket's static buffers (addresses the captured graph reads and writes) and how to
    run it once they hold a call's inputs. Mutable: the buffers are rewritten in place."""

    nodes: list[torch.Tensor]
    shared: list[torch.Tensor]
    edge_index: torch.Tensor
    edges: list[torch.Tensor]
    output: torch.Tensor | None = None
    replay: Callable[[], None] | None = None


def _padded(tensor: torch.Tensor, rows: int) -> torch.Tensor:
    return tensor.new_zeros((rows, *tensor.shape[1:]))


class GraphedKernel:
    """``kernel`` (see :data:`Kernel`) run in padded, reused buffers: a CUDA graph per bucket
    on CUDA, eagerly elsewhere. Calls from several threads take turns (the buffers are
    shared); a graph that fails to capture is said once, and the kernel runs unpadded from
    then on, with the same results."""

    def __init__(self, kernel: Kernel, name: str, max_graphs: int = MAX_GRAPHS) -> None:
        self.kernel = kernel
        self.name = name
        self.max_graphs = max_graphs
        self._slots: OrderedDict[tuple[int, int], _Slot] = OrderedDict()
        self._lock = threading.Lock()
        self._pool: Any = None  # torch.cuda._POOL_HANDLE, private to torch
        self.captures = 0
        self.capture_failed = False

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without buffers, graphs or lock (a reranker sent to a worker process):
        they are made again there, on first use."""
        state = self.__dict__.copy()
        for name in ("_slots", "_lock", "_pool"):
            del state[name]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._slots = OrderedDict()
        self._lock = threading.Lock()
        self._pool = None

    def release(self, size: tuple[int, int]) -> None:
        """Drop one bucket's buffers and graph (a bucket where the replay lost to an unpadded
        path keeps no memory for it)."""
        with self._lock:
            self._slots.pop(size, None)

    @property
    def buckets(self) -> tuple[tuple[int, int], ...]:
        """The buckets holding buffers (and, on CUDA, a graph), least recently used first."""
        return tuple(self._slots)

    def __call__(
        self,
        nodes: Tensors,
        shared: Tensors,
        edge_index: torch.Tensor,
        edges: Tensors,
        edges_checked: bool = False,
    ) -> torch.Tensor:
        """The kernel's output for the call's ``n`` nodes: a tensor of its own, not a view of
        the buffers. ``edges_checked``: the caller made the edges within the graph, so the
        check (a device sync) is skipped."""
        n, n_edges = nodes[0].shape[0], edge_index.shape[1]
        size = size_bucket(n, n_edges)
        if size is None or self.capture_failed:
            return self.kernel(nodes, shared, edge_index, edges)
        if not edges_checked:
            check_edge_index(edge_index, n)
        with self._lock:
            slot = self._slot(size, nodes, shared, edges)
            for buffer, given in zip(slot.nodes, nodes, strict=True):
                buffer[:n].copy_(given)
            for buffer, given in zip(slot.shared, shared, strict=True):
                buffer.copy_(given)
            slot.edge_index[:, :n_edges].copy_(edge_index)
            slot.edge_index[:, n_edges:].fill_(n)  # loops on the first padding node
            for buffer, given in zip(slot.edges, edges, strict=True):
                buffer[:n_edges].copy_(given)
            if slot.replay is None:
                self._prepare(slot)
            if self.capture_failed:
                return self.kernel(nodes, shared, edge_index, edges)
            assert slot.replay is not None
            slot.replay()
            assert slot.output is not None
            return slot.output[:n].clone()

    def _slot(
        self, size: tuple[int, int], nodes: Tensors, shared: Tensors, edges: Tensors
    ) -> _Slot:
        """The bucket's buffers, made zeroed on first use; the least recently used bucket's
        graph and buffers are dropped past ``max_graphs``."""
        slot = self._slots.get(size)
        device = nodes[0].device
        if slot is not None and slot.edge_index.device == device:
            self._slots.move_to_end(size)
            return slot
        n_nodes, n_edges = size
        with torch.inference_mode(False):  # normal tensors: writable inside inference mode or not
            slot = _Slot(
                nodes=[_padded(t, n_nodes) for t in nodes],
                shared=[torch.zeros_like(t) for t in shared],
                edge_index=torch.zeros(2, n_edges, dtype=torch.long, device=device),
                edges=[_padded(t, n_edges) for t in edges],
            )
        self._slots[size] = slot
        self._slots.move_to_end(size)
        while len(self._slots) > self.max_graphs:
            self._slots.popitem(last=False)
        return slot

    def _run(self, slot: _Slot) -> torch.Tensor:
        return self.kernel(slot.nodes, slot.shared, slot.edge_index, slot.edges)

    def _prepare(self, slot: _Slot) -> None:
        """Capture the bucket's graph on CUDA; elsewhere its "replay" is an eager run."""
        if slot.edge_index.device.type != "cuda":

            def run_eagerly() -> None:
                slot.output = self._run(slot)

            slot.replay = run_eagerly
            return
        try:
            slot.output, slot.replay = self._capture(slot)
            self.captures += 1
        except RuntimeError as error:  # a kernel the graph cannot hold: run unpadded instead
            self.capture_failed = True
            self._slots.clear()
            warn_once(
                f"{self.name}: CUDA graph capture failed ({error}); it runs without CUDA "
                "graphs from now on, with the same scores, more slowly",
                logger=__name__,
            )

    def _capture(self, slot: _Slot) -> tuple[torch.Tensor, Callable[[], None]]:
        device = slot.edge_index.device
        with torch.cuda.device(device):  # the capture stream is made on the current device
            return self._capture_on(slot, device)

    def _capture_on(
        self, slot: _Slot, device: torch.device
    ) -> tuple[torch.Tensor, Callable[[], None]]:
        current = torch.cuda.current_stream(device)
        side = torch.cuda.Stream(device)
        side.wait_stream(current)
        with torch.cuda.stream(side):
            for _ in range(WARMUP_RUNS):
                self._run(slot)
        current.wait_stream(side)
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        # thread_local: other threads' CUDA work (an embedder, another ranker) is not an
        # error during this thread's capture
        with torch.cuda.graph(graph, pool=self._pool, capture_error_mode="thread_local"):
            output = self._run(slot)

        def replay() -> None:
            with torch.cuda.device(device):  # launched on the current device's stream
                graph.replay()

        return output, replay


CALIBRATION_REPEATS = 10
"""Timed runs of each path in a calibration, interleaved (the median counts): on a GPU a
200-candidate call is about a millisecond, so four paths (one check and ten timed runs each)
cost tens of milliseconds once per size class and process, a 2,000-candidate one a few
hundred at most."""
CALIBRATION_TOLERANCE = 1e-4
"""A path is equal to forward when no score differs by more than this, absolute plus
relative to the largest score (the paths measured agree to 2e-6)."""

Run = Callable[[str], torch.Tensor]
"""``run(path)``: the call's scores by that path."""
Timer = Callable[[str, Callable[[], object]], float]
"""``timer(path, call)``: seconds one ``call()`` of ``path`` took (tests inject timings)."""


@dataclass(frozen=True)
class PathChoice:
    """The path a device and size class run, and why: ``measured`` choices carry each path's
    median time in ms (fastest first) and the paths left out with the reason."""

    path: str
    reason: str
    measured: bool = False
    timings_ms: tuple[tuple[str, float], ...] = ()
    excluded: tuple[tuple[str, str], ...] = field(default=())


def _max_difference(got: torch.Tensor, reference: torch.Tensor) -> float:
    if got.shape != reference.shape:
        return float("inf")
    difference = (got.detach().float() - reference.detach().float()).abs().max()
    value = float(difference) if got.numel() else 0.0
    return value if value == value else float("inf")  # NaN: unequal


class PathChooser:
    """Which path runs a call, by measurement: on the first call of a ``key`` (device and size
    class) every candidate path runs on that call's inputs, those unequal to ``"forward"``
    (the model itself, the reference) are left out, the rest are timed ``repeats`` times,
    interleaved, and the fastest median wins; the choice is kept for the process (per
    chooser). A path that fails is left out; when the reference itself fails with anything
    but a :class:`GraphERError` (which names a bad input and is raised), the ``fallback``
    choice is kept, saying so. ``timer`` defaults to the wall clock around ``call`` and
    ``sync`` (a device synchronisation); tests pass timings."""

    def __init__(
        self,
        repeats: int = CALIBRATION_REPEATS,
        tolerance: float = CALIBRATION_TOLERANCE,
        timer: Timer | None = None,
    ) -> None:
        self.repeats = repeats
        self.tolerance = tolerance
        self.timer = timer
        self._choices: dict[Any, PathChoice] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its choices (measured on this machine) or lock."""
        state = self.__dict__.copy()
        del state["_choices"], state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._choices = {}
        self._lock = threading.Lock()

    @property
    def choices(self) -> dict[Any, PathChoice]:
        """The choices made so far, by key (a copy)."""
        with self._lock:
            return dict(self._choices)

    def choose(
        self,
        key: Any,
        candidates: Sequence[str],
        run: Run | None,
        fallback: PathChoice,
        sync: Callable[[], None] = lambda: None,
    ) -> PathChoice:
        """The kept choice for ``key``; else, with ``run``, a measured one (kept); without
        ``run``, ``fallback`` (not kept: nothing was measured)."""
        with self._lock:
            known = self._choices.get(key)
            if known is not None or run is None:
                return fallback if known is None else known
            choice = self._measure(candidates, run, fallback, sync)
            self._choices[key] = choice
            return choice

    def _measure(
        self, candidates: Sequence[str], run: Run, fallback: PathChoice, sync: Callable[[], None]
    ) -> PathChoice:
        try:
            reference = run("forward")
        except GraphERError:
            raise
        except Exception as error:
            return replace(
                fallback, reason=f"calibration failed (forward raised {error!r}); {fallback.reason}"
            )
        excluded: list[tuple[str, str]] = []
        equal: list[str] = []
        largest = float(reference.detach().abs().max()) if reference.numel() else 0.0
        bound = self.tolerance * (1.0 + largest)
        for path in candidates:
            if path == "forward":
                equal.append(path)
                continue
            try:
                difference = _max_difference(run(path), reference)  # also its warm-up
            except Exception as error:
                excluded.append((path, f"raised {type(error).__name__}: {error}"))
                continue
            if difference <= bound:
                equal.append(path)
            else:
                excluded.append((path, f"unequal to forward (max |diff| {difference:.1e})"))
        medians = self._timed(equal, run, sync)
        ranked = sorted(medians.items(), key=lambda item: item[1])
        winner = ranked[0][0]
        timings = ", ".join(f"{path} {ms:.3g} ms" for path, ms in ranked)
        reason = (
            f"fastest measured here (median of {self.repeats}): {timings}; "
            f"scores within {self.tolerance:g} of forward"
        )
        if excluded:
            reason += "; left out: " + "; ".join(f"{p} {why}" for p, why in excluded)
        return PathChoice(winner, reason, True, tuple(ranked), tuple(excluded))

    def _timed(self, paths: Sequence[str], run: Run, sync: Callable[[], None]) -> dict[str, float]:
        """Median ms per path over ``repeats`` interleaved rounds (rotated order)."""
        timer = self.timer or _wall_timer(sync)
        samples: dict[str, list[float]] = {path: [] for path in paths}
        order = list(paths)
        for repeat in range(self.repeats):
            shift = repeat % len(order)
            for path in order[shift:] + order[:shift]:
                samples[path].append(timer(path, functools.partial(run, path)))
        return {path: 1e3 * statistics.median(values) for path, values in samples.items()}


def _wall_timer(sync: Callable[[], None]) -> Timer:
    def timer(_path: str, call: Callable[[], object]) -> float:
        sync()
        started = time.perf_counter()
        call()
        sync()
        return time.perf_counter() - started

    return timer
