"""Torch's thread count for one block: a process-wide setting, limited and restored around a call
(a leaf module, so the embedder and the learned rankers share it without importing each other)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["torch_threads"]


@contextlib.contextmanager
def torch_threads(threads: int | None, device: str) -> Iterator[None]:
    """Run the block on ``threads`` torch threads (CPU only), then restore the previous count."""
    import torch

    previous = torch.get_num_threads()
    limit = threads is not None and device == "cpu" and previous != threads
    if limit:
        torch.set_num_threads(int(threads))  # type: ignore[arg-type]  # costs under a µs
    try:
        yield
    finally:
        if limit:
            torch.set_num_threads(previous)
