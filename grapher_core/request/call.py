"""A sans-IO request: the steps of one rerank, run by whoever answers its needs.

An engine writes a request as a generator that yields :mod:`~grapher_core.request.needs` and
returns the :class:`~grapher_core.request.result.Reranking`; :class:`Call` is the single-use
handle a door drives (``start``, then ``send`` each answer, then ``result``). Every decision --
what to embed, what to fetch, when expansion stops, how seeds are made -- is inside the
generator, the same for every door.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Generic, TypeVar

from grapher_core.errors import StateError
from grapher_core.request.needs import Need

__all__ = ["Call", "Steps"]

R = TypeVar("R")
Steps = Generator[Need, Any, R]
"""A request's steps: yields needs, receives their answers, returns its result."""


class Call(Generic[R]):
    """One request, single use. ``start()`` runs to the first need (or to the end);
    ``send(answer)`` answers it and runs to the next; ``result()`` is the outcome. CPU work
    happens inside ``start`` and ``send``: an async driver runs them off the event loop."""

    def __init__(self, steps: Steps[R]) -> None:
        self._steps = steps
        self._started = False
        self._need: Need | None = None
        self._done = False
        self._result: R | None = None

    def start(self) -> Need | None:
        """Run to the first need; ``None`` when the request needs no IO at all."""
        if self._started:
            raise StateError("a call is started once; make a new one per request")
        self._started = True
        return self._advance(None, first=True)

    def send(self, answer: Any) -> Need | None:
        """Answer the pending need; returns the next one, or ``None`` when the call is done."""
        if not self._started or self._done:
            raise StateError("send() answers a pending need of a started, unfinished call")
        return self._advance(answer, first=False)

    @property
    def need(self) -> Need | None:
        """The need waiting for an answer (``None`` before start and when done)."""
        return self._need

    @property
    def done(self) -> bool:
        return self._done

    def result(self) -> R:
        """The request's outcome, once every need was answered."""
        if not self._done:
            raise StateError("the call is not finished: answer its needs first")
        return self._result  # type: ignore[return-value]

    def _advance(self, answer: Any, *, first: bool) -> Need | None:
        try:
            need = next(self._steps) if first else self._steps.send(answer)
        except StopIteration as stop:
            self._done, self._need, self._result = True, None, stop.value
            return None
        except BaseException:
            self._done, self._need = True, None
            raise
        self._need = need
        return need
