"""torch-geometric's import-time ``torch.jit.script`` notice, silenced in one place.

torch-geometric decorates functions with ``torch.jit.script`` when it is imported; torch says
that is deprecated -- a ``DeprecationWarning`` up to torch 2.13, a ``FutureWarning`` from 2.14,
which Python shows by default. It is torch-geometric's notice, not the user's, and it came on
every first GAT, MLP or QA-GNN rerank; every import of torch-geometric here goes through
:func:`quiet_jit_notice`, which ignores that one message in both categories.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

__all__ = ["JIT_NOTICE", "quiet_jit_notice"]

JIT_NOTICE = r".*torch\.jit\.script.*"
"""The message ignored (as a ``warnings`` filter regex)."""


@contextlib.contextmanager
def quiet_jit_notice() -> Iterator[None]:
    """Import torch-geometric inside this block: its ``torch.jit.script`` notice is ignored,
    as a ``DeprecationWarning`` or a ``FutureWarning``; every other warning is untouched."""
    with warnings.catch_warnings():
        for category in (DeprecationWarning, FutureWarning):
            warnings.filterwarnings("ignore", message=JIT_NOTICE, category=category)
        yield
