"""How a door answers a call's needs, and the two drivers that run a call.

A door's only job is IO with its framework's tools: :class:`DoorIO` holds them (an embedding
model's sync and async methods, a store's vector reader) and answers each need; without a model
of its own it uses the one the core names (``Embed.fallback``). :func:`run_call` drives a call
synchronously; :func:`arun_call` is the one place that awaits: the call's CPU work and every
sync IO run in a worker thread, so an event loop never waits on them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from grapher_core.errors import StateError
from grapher_core.request.call import Call
from grapher_core.request.needs import Embed, Embedded, Fetch, Need, ReadStored
from grapher_core.utils.callsite import off_loop

__all__ = ["DoorIO", "arun_call", "run_call"]

R = TypeVar("R")


@dataclass(frozen=True)
class DoorIO:
    """A door's IO: embedding functions (``None``: the door has no model) and a reader of the
    vectors its store holds by id (``None``: no store to read)."""

    embed_documents: Callable[[list[str]], Any] | None = None
    embed_query: Callable[[str], Any] | None = None
    aembed_documents: Callable[[list[str]], Awaitable[Any]] | None = None
    aembed_query: Callable[[str], Awaitable[Any]] | None = None
    read_stored: Callable[[list[str]], Sequence[Any] | None] | None = None

    @classmethod
    def of(
        cls,
        embedder: Any = None,
        read_stored: Callable[[list[str]], Sequence[Any] | None] | None = None,
    ) -> DoorIO:
        """The IO of a core-style embedder (``embed_documents`` / ``embed_query``, and
        ``aembed_documents`` / ``aembed_query`` when it has them)."""
        if embedder is None:
            return cls(read_stored=read_stored)
        return cls(
            embed_documents=getattr(embedder, "embed_documents", None),
            embed_query=getattr(embedder, "embed_query", None),
            aembed_documents=getattr(embedder, "aembed_documents", None),
            aembed_query=getattr(embedder, "aembed_query", None),
            read_stored=read_stored,
        )

    @property
    def has_model(self) -> bool:
        return self.embed_documents is not None or self.aembed_documents is not None

    def answer(self, need: Need) -> Any:
        """The answer to ``need``, by sync calls only."""
        if isinstance(need, Embed):
            return self._embed(need)
        if isinstance(need, Fetch):
            return need.source.fetch(list(need.keys), **dict(need.options))
        if isinstance(need, ReadStored):
            return None if self.read_stored is None else self.read_stored(list(need.ids))
        raise StateError(f"a call asked for something no door answers: {need!r}")

    async def aanswer(self, need: Need) -> Any:
        """The answer to ``need``: the model's async methods awaited, anything sync (a
        sync-only model, the core's fallback, stores, fetches) in a worker thread."""
        if not (isinstance(need, Embed) and self.has_model):
            return await off_loop(self.answer, need)
        query = vectors = None
        if need.query:
            query = (
                await self.aembed_query(need.query)
                if self.aembed_query is not None
                else await off_loop(self._sync_query, need.query)
            )
        if need.texts:
            texts = list(need.texts)
            vectors = (
                await self.aembed_documents(texts)
                if self.aembed_documents is not None
                else await off_loop(self._sync_documents, texts)
            )
        return Embedded(vectors, query)

    def _embed(self, need: Embed) -> Embedded:
        if not self.has_model:
            model = need.fallback
            if model is None:
                return Embedded()
            embed_query = getattr(model, "embed_query", None)  # a documents-only embedder
            return Embedded(
                model.embed_documents(list(need.texts)) if need.texts else None,
                embed_query(need.query) if need.query and callable(embed_query) else None,
            )
        query = self._sync_query(need.query) if need.query else None
        vectors = self._sync_documents(list(need.texts)) if need.texts else None
        return Embedded(vectors, query)

    def _sync_query(self, query: str) -> Any:
        if self.embed_query is None:
            raise StateError("this door's model embeds queries only asynchronously: use arun_call")
        return self.embed_query(query)

    def _sync_documents(self, texts: list[str]) -> Any:
        if self.embed_documents is None:
            raise StateError("this door's model embeds texts only asynchronously: use arun_call")
        return self.embed_documents(texts)


def run_call(call: Call[R], answer: Callable[[Need], Any] | None = None) -> R:
    """Drive ``call`` to its result, answering each need with ``answer`` (default: no model,
    no store: the core's own embedder where it names one, sources fetched directly)."""
    answer = DoorIO().answer if answer is None else answer
    need = call.start()
    while need is not None:
        need = call.send(answer(need))
    return call.result()


async def arun_call(call: Call[R], answer: Callable[[Need], Awaitable[Any]] | None = None) -> R:
    """:func:`run_call` for an event loop: each step of the call runs in a worker thread and
    each need is awaited through ``answer`` (default :meth:`DoorIO.aanswer` of no model)."""
    answer = DoorIO().aanswer if answer is None else answer
    need = await off_loop(call.start)
    while need is not None:
        reply = await answer(need)
        need = await off_loop(call.send, reply)
    return call.result()
