"""Scale-out: extraction as a batch-to-batch function for Ray Data ``map_batches`` (or any
engine that maps a function over column batches).

Because an extractor is a pure function of one batch, the whole distributed run is::

    import ray
    ds = ray.data.read_json("corpus.jsonl")
    ds = ds.map_batches(
        EntityBatchMapper,
        fn_constructor_kwargs={"extractor": SpacyEntityExtractor()},
        batch_size=256,
        concurrency=4,          # actors; each loads the model once
    )
    ds.write_json("enriched/")

A callable class rather than a function so that each Ray actor loads the spaCy model (or opens
its HTTP client pool) once, not once per batch. Ray itself is an optional dependency: nothing here
imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grapher_core.enrich.base import EntityExtractor
from grapher_core.enrich.cache import EntityCache
from grapher_core.enrich.runner import run_extraction
from grapher_core.errors import ConfigError, InputError


class EntityBatchMapper:
    """Maps a column batch ``{"text": [...], ...}`` to the same batch plus entity columns.

    Adds ``key`` (a list of strings per row, ``None`` where extraction failed) and
    ``f"{key}_error"`` (the reason, or ``None``). With ``cache_path`` each worker reads and writes
    that SQLite cache (on a disk local to the worker: SQLite is safe across processes of one
    machine, not over network file systems).
    """

    def __init__(
        self,
        extractor: EntityExtractor,
        *,
        text_column: str = "text",
        key: str = "entities",
        cache_path: str | Path | None = None,
    ) -> None:
        if not key:
            raise ConfigError("key must be a non-empty string")
        self.extractor = extractor
        self.text_column = text_column
        self.key = key
        self.cache_path = None if cache_path is None else Path(cache_path)
        self._cache: EntityCache | None = None

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """One batch in, the same batch with entity columns out (input never mutated)."""
        if self.text_column not in batch:
            raise InputError(f"batch has no column {self.text_column!r} (columns: {sorted(batch)})")
        texts = [str(text) for text in batch[self.text_column]]
        if self.cache_path is not None and self._cache is None:
            self._cache = EntityCache(self.cache_path)
        run = run_extraction(texts, self.extractor, cache=self._cache)
        out = dict(batch)
        out[self.key] = [result.entities for result in run.results]
        out[f"{self.key}_error"] = [result.error for result in run.results]
        return out
