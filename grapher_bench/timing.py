"""The one timer of the latency commands: median and p95 of repeated calls after warm-up."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

__all__ = ["median_p95_ms"]


def median_p95_ms(
    function: Callable[[], Any],
    repeats: int,
    *,
    warmup: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[float, float]:
    """Median and p95 of ``repeats`` calls, in ms, after ``warmup`` untimed calls (warm caches
    and imports, as a long-running service would have). ``clock=time.process_time`` gives the
    CPU time of this process: on a shared machine, what a call costs without waiting for a
    core."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        function()
    samples = []
    for _ in range(repeats):
        started = clock()
        function()
        samples.append((clock() - started) * 1e3)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.95 * len(samples)))]
