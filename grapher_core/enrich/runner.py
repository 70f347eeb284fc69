"""Running an extractor over many texts: cache look-up, deduplication, progress, resumption.

The extractor does the work; this module decides what still needs doing. Identical texts are
extracted once, cached rows are reused, and each new result is committed to the cache as soon
as it exists, so a re-run after a crash redoes only what was never written.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from grapher_core.candidates import CorpusObject
from grapher_core.enrich.base import EntityExtractor, ExtractionResult, check_texts, extractor_model
from grapher_core.enrich.cache import CacheKey, EntityCache, content_hash
from grapher_core.errors import InputError, InputTypeError
from grapher_core.utils.progress import progress_bar
from grapher_core.utils.text import clean_text, surrogate_positions

T = TypeVar("T")


@runtime_checkable
class StreamingEntityExtractor(Protocol):
    """An extractor that can also yield ``(index, result)`` pairs as they complete (LLM APIs)."""

    name: str
    version: str

    def aiter_extract(self, texts: Sequence[str]) -> AsyncIterator[tuple[int, ExtractionResult]]:
        """Yield each text's result as soon as it is known, in completion order."""
        ...


@dataclass(frozen=True)
class ExtractionRun:
    """Per-text results of a run plus where they came from."""

    results: list[ExtractionResult]
    n_unique: int
    n_cached: int
    n_computed: int

    @property
    def failed_positions(self) -> list[int]:
        """Positions (in the input) of the texts whose extraction failed."""
        return [i for i, result in enumerate(self.results) if result.entities is None]


@dataclass(frozen=True)
class EnrichReport:
    """New objects with entities in their metadata, and the ids that could not be enriched.

    Failed objects are still in ``objects`` (unchanged, without the key) so nothing is lost;
    ``errors`` maps their ids to the reason.
    """

    objects: list[CorpusObject]
    failed: list[str]
    errors: dict[str, str] = field(default_factory=dict)
    n_cached: int = 0
    n_computed: int = 0


def cache_key(extractor: EntityExtractor) -> CacheKey:
    """The cache key part that identifies an extractor configuration."""
    for attribute in ("name", "version"):
        value = getattr(extractor, attribute, None)
        if not isinstance(value, str) or not value:
            raise InputTypeError(
                f"extractor {extractor!r} needs a non-empty str attribute {attribute!r} "
                "(it is part of the cache key)"
            )
    return CacheKey(extractor.name, extractor_model(extractor), extractor.version)


_log = logging.getLogger(__name__)


def _extractable(texts: list[str], names: Sequence[str] | None) -> list[str]:
    """``texts`` with each lone surrogate replaced by U+FFFD for the extractor, said once.

    The cache key still hashes the original text, and callers keep the original object: only
    what the extractor reads changes, so one bad character never aborts a batch. The rule is
    :func:`grapher_core.utils.text.clean_text`; an enrichment run names its objects every time
    (each run is the user's action), where the models' paths say it once.
    """
    bad = surrogate_positions(texts)
    if not bad:
        return texts
    labels = [str(names[i]) if names is not None else f"#{i}" for i in bad]
    message = (
        f"{len(bad)} object(s) hold lone surrogates (invalid UTF-16 halves such as \\ud800, not "
        f"encodable as UTF-8): {', '.join(labels[:10])}{' ...' if len(bad) > 10 else ''}; "
        "each was replaced by U+FFFD in the text sent to the extractor"
    )
    _log.warning(message)
    warnings.warn(message, stacklevel=4)
    cleaned = list(texts)
    for i in bad:
        cleaned[i] = clean_text(texts[i])
    return cleaned


class _Plan:
    """Which unique texts still need an extraction, and where results go."""

    def __init__(
        self,
        texts: list[str],
        extractor: EntityExtractor,
        cache: EntityCache | None,
        retry_failed: bool,
        progress: bool,
        names: Sequence[str] | None = None,
        label: str | None = None,
    ) -> None:
        self.key = cache_key(extractor)
        self.cache = cache
        self.digests = [content_hash(text) for text in texts]
        first: dict[str, str] = {}
        for digest, text in zip(self.digests, _extractable(texts, names), strict=True):
            first.setdefault(digest, text)
        self.known: dict[str, ExtractionResult] = {}
        if cache is not None:
            for digest, result in cache.get_many(self.key, first).items():
                if result.entities is not None or not retry_failed:
                    self.known[digest] = result
        self.n_unique = len(first)
        self.n_cached = len(self.known)
        self.todo_digests = [d for d in first if d not in self.known]
        self.todo_texts = [first[d] for d in self.todo_digests]
        self.bar = progress_bar(
            self.n_unique,
            label or f"entities [{extractor.name}]",
            unit="obj",
            enabled=progress,
        )
        if self.n_cached:
            self.bar.update(self.n_cached)

    def record(self, items: Sequence[tuple[int, ExtractionResult]]) -> None:
        """Store results (positions index ``todo_texts``) and commit them to the cache."""
        rows = []
        for position, result in items:
            if not isinstance(result, ExtractionResult):
                raise InputTypeError(
                    f"extractor returned {type(result).__name__}, expected ExtractionResult"
                )
            digest = self.todo_digests[position]
            self.known[digest] = result
            rows.append((digest, result))
        if self.cache is not None:
            self.cache.put_many(self.key, rows)
        self.bar.update(len(items))

    def finish(self) -> ExtractionRun:
        self.bar.close()
        return ExtractionRun(
            results=[self.known[d] for d in self.digests],
            n_unique=self.n_unique,
            n_cached=self.n_cached,
            n_computed=self.n_unique - self.n_cached,
        )


def _run_batches(plan: _Plan, extractor: EntityExtractor) -> None:
    size = max(1, int(getattr(extractor, "batch_size", 64)))
    for start in range(0, len(plan.todo_texts), size):
        batch = plan.todo_texts[start : start + size]
        results = extractor.extract_batch(batch)
        if len(results) != len(batch):
            raise InputError(
                f"extractor {extractor.name!r} returned {len(results)} results "
                f"for a batch of {len(batch)} texts"
            )
        plan.record(list(enumerate(results, start)))


async def _run_stream(plan: _Plan, extractor: StreamingEntityExtractor) -> None:
    if not plan.todo_texts:
        return
    stream = extractor.aiter_extract(plan.todo_texts)
    try:
        async for position, result in stream:
            plan.record([(position, result)])
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()  # stops in-flight requests when recording fails


def _run_sync(coroutine_factory: Callable[[], Any]) -> Any:
    """Run a coroutine to completion from sync code, even when a loop already runs here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine_factory())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coroutine_factory())
        except BaseException as error:
            box["error"] = error

    thread = threading.Thread(target=target, name="grapher-enrich")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def run_extraction(
    texts: Sequence[str],
    extractor: EntityExtractor,
    *,
    cache: EntityCache | None = None,
    progress: bool = False,
    retry_failed: bool = True,
    names: Sequence[str] | None = None,
    label: str | None = None,
) -> ExtractionRun:
    """Extract entities for ``texts`` and say how many came from the cache.

    With ``retry_failed`` (the default) cached failures are attempted again, so a plain re-run
    retries exactly the failed texts; without it they are returned as failed. ``names`` (one
    per text, e.g. object ids) name the texts in warnings. A text holding lone surrogates is
    extracted with each replaced by U+FFFD, and a warning names it. ``label`` names the
    progress bar when the texts are not entity extractions (answers, rerank prompts).
    """
    plan = _Plan(check_texts(texts), extractor, cache, retry_failed, progress, names, label)
    try:
        if isinstance(extractor, StreamingEntityExtractor):
            _run_sync(lambda: _run_stream(plan, extractor))
        else:
            _run_batches(plan, extractor)
    finally:
        plan.bar.close()
    return plan.finish()


async def arun_extraction(
    texts: Sequence[str],
    extractor: EntityExtractor,
    *,
    cache: EntityCache | None = None,
    progress: bool = False,
    retry_failed: bool = True,
    names: Sequence[str] | None = None,
    label: str | None = None,
) -> ExtractionRun:
    """Async ``run_extraction``: streams LLM results, runs batch extractors in a thread."""
    plan = _Plan(check_texts(texts), extractor, cache, retry_failed, progress, names, label)
    try:
        if isinstance(extractor, StreamingEntityExtractor):
            await _run_stream(plan, extractor)
        else:
            await asyncio.to_thread(_run_batches, plan, extractor)
    finally:
        plan.bar.close()
    return plan.finish()


def extract_entities(
    texts: Sequence[str],
    extractor: EntityExtractor,
    *,
    cache: EntityCache | None = None,
    progress: bool = False,
    retry_failed: bool = True,
) -> list[list[str] | None]:
    """Entities of each text, in order; ``None`` where extraction failed.

    Failures are recorded in ``cache`` (when given) so a later call retries them alone.
    """
    run = run_extraction(
        texts, extractor, cache=cache, progress=progress, retry_failed=retry_failed
    )
    return [result.entities for result in run.results]


async def aextract_entities(
    texts: Sequence[str],
    extractor: EntityExtractor,
    *,
    cache: EntityCache | None = None,
    progress: bool = False,
    retry_failed: bool = True,
) -> list[list[str] | None]:
    """Async ``extract_entities`` (for async framework hooks)."""
    run = await arun_extraction(
        texts, extractor, cache=cache, progress=progress, retry_failed=retry_failed
    )
    return [result.entities for result in run.results]


def _check_objects(objects: Iterable[CorpusObject], key: str) -> list[CorpusObject]:
    if not isinstance(key, str) or not key:
        raise InputError(f"key must be a non-empty string, got {key!r}")
    out = list(objects)
    for position, obj in enumerate(out):
        if not isinstance(obj, CorpusObject):
            raise InputTypeError(
                f"object at position {position} is {type(obj).__name__}, expected CorpusObject"
            )
        if not isinstance(obj.text, str):
            raise InputTypeError(
                f"object {obj.id!r} has non-string text ({type(obj.text).__name__})"
            )
    return out


def _enriched(objects: list[CorpusObject], run: ExtractionRun, key: str) -> EnrichReport:
    enriched: list[CorpusObject] = []
    failed: list[str] = []
    errors: dict[str, str] = {}
    for obj, result in zip(objects, run.results, strict=True):
        metadata = dict(obj.metadata)
        if result.entities is None:
            failed.append(obj.id)
            errors[obj.id] = result.error or "extraction failed"
        else:
            metadata[key] = list(result.entities)
        enriched.append(CorpusObject(obj.id, obj.text, metadata))
    return EnrichReport(enriched, failed, errors, run.n_cached, run.n_computed)


def enrich_objects(
    objects: Iterable[CorpusObject],
    extractor: EntityExtractor,
    *,
    cache: EntityCache | None = None,
    key: str = "entities",
    progress: bool = False,
    retry_failed: bool = True,
) -> EnrichReport:
    """New objects with ``metadata[key]`` = their entities; the input is never mutated."""
    items = _check_objects(objects, key)
    run = run_extraction(
        [obj.text for obj in items],
        extractor,
        cache=cache,
        progress=progress,
        retry_failed=retry_failed,
        names=[repr(obj.id) for obj in items],
    )
    return _enriched(items, run, key)


async def aenrich_objects(
    objects: Iterable[CorpusObject],
    extractor: EntityExtractor,
    *,
    cache: EntityCache | None = None,
    key: str = "entities",
    progress: bool = False,
    retry_failed: bool = True,
) -> EnrichReport:
    """Async ``enrich_objects``."""
    items = _check_objects(objects, key)
    run = await arun_extraction(
        [obj.text for obj in items],
        extractor,
        cache=cache,
        progress=progress,
        retry_failed=retry_failed,
        names=[repr(obj.id) for obj in items],
    )
    return _enriched(items, run, key)
