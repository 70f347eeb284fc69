"""Where GraphER's warnings point: the user's line, through frameworks and worker threads.

A warning is only useful at the line that can change what caused it. Inside a reranking the
stack holds GraphER's own frames, a framework's (LangChain's callback machinery, LlamaIndex's
instrumentation dispatcher, pydantic's validators) and, on the async paths, a worker thread's.
:func:`warn` skips GraphER's and the registered frameworks' frames; work handed to a thread by
:func:`off_loop` keeps its warnings and raises them again on the awaiting coroutine, whose stack
reaches the user's ``await``.

A leaf module (stdlib only), so every part of the core can warn through it without an import
circle.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable
from contextvars import ContextVar
from importlib.util import find_spec
from typing import Any, TypeVar

__all__ = [
    "off_loop",
    "skip_frames_of",
    "skipped_prefixes",
    "stacklevel_outside",
    "warn",
    "warn_once",
]

T = TypeVar("T")

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OWN_PREFIXES: tuple[str, ...] = tuple(
    os.path.join(_ROOT, package) + os.sep
    for package in ("grapher_core", "langchain_grapher", "llama_index_grapher")
)
"""GraphER's own packages: their frames are never the user's."""

# The event loop and thread pool sit between a task's coroutine and whoever started it.
_RUNTIME_PREFIXES: tuple[str, ...] = (
    os.path.dirname(os.path.abspath(asyncio.__file__)) + os.sep,
    os.path.dirname(os.path.abspath(concurrent.futures.__file__)) + os.sep,
    os.path.abspath(threading.__file__),
)

_skipped: tuple[str, ...] = OWN_PREFIXES + _RUNTIME_PREFIXES
_skipped_lock = threading.Lock()

_deferred: ContextVar[list[tuple[str, type[Warning]]] | None] = ContextVar(
    "grapher_deferred_warnings", default=None
)


def skip_frames_of(*packages: str) -> None:
    """Skip the frames of ``packages`` (top-level names; not imported, only located) too when
    looking for the user's line: a wrapper registers the framework that calls it."""
    global _skipped
    found: list[str] = []
    for name in packages:
        try:
            spec = find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        locations = list(spec.submodule_search_locations or [])
        if not locations and spec.origin:
            locations = [os.path.dirname(spec.origin)]
        found += [os.path.abspath(location) + os.sep for location in locations]
    with _skipped_lock:
        _skipped = _skipped + tuple(p for p in found if p not in _skipped)


def skipped_prefixes() -> tuple[str, ...]:
    """The path prefixes whose frames a warning never points at (for tests and debugging)."""
    return _skipped


def stacklevel_outside(prefixes: tuple[str, ...] | None = None) -> int:
    """The ``stacklevel`` of the first frame whose file is under none of ``prefixes`` (default:
    GraphER's packages, the event loop's and thread pool's modules and the frameworks registered
    with :func:`skip_frames_of`), seen from the caller of this function -- so a warning points at
    the user's line (Python 3.12's ``skip_file_prefixes`` by hand)."""
    skipped = _skipped if prefixes is None else prefixes
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(skipped):
        frame = frame.f_back
        level += 1
    return level


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` at the user's line; inside :func:`off_loop` work the warning is kept
    and raised by the awaiting coroutine instead (a worker thread's stack has no user line)."""
    sink = _deferred.get()
    if sink is not None:
        sink.append((message, category))
        return
    warnings.warn(message, category, stacklevel=stacklevel_outside())


_said: set[str] = set()
_said_lock = threading.Lock()


def warn_once(
    message: str, category: type[Warning] = UserWarning, *, logger: str = "grapher"
) -> bool:
    """:func:`warn` the first time ``message`` is seen in this process, logged too (``logger``:
    the caller's logger name); later calls do nothing. Returns whether it was said now."""
    with _said_lock:
        if message in _said:
            return False
        _said.add(message)
    logging.getLogger(logger).warning(message)
    warn(message, category)
    return True


async def off_loop(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``await function(*args, **kwargs)`` run in a worker thread (``asyncio.to_thread``: the
    context variables -- tracing spans, callbacks -- go with it), so CPU-bound work never stalls
    the event loop; GraphER's warnings raised there point at the caller's ``await``."""
    sink: list[tuple[str, type[Warning]]] = []

    def work() -> T:
        token = _deferred.set(sink)
        try:
            return function(*args, **kwargs)
        finally:
            _deferred.reset(token)

    try:
        return await asyncio.to_thread(work)
    finally:
        for message, category in sink:
            warnings.warn(message, category, stacklevel=stacklevel_outside())
