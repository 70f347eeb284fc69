"""Offline enrichment: named entities for conceptual proximity, at corpus scale.

Two extractors (spaCy NER offline, any OpenAI-compatible chat model), one resumable SQLite
cache, and runners that reuse the cache and never mutate their input. Entities are
deduplicated with ``grapher_core.metadata.normalise_entity`` -- the normalisation the
``SharedEntities`` proximity compares with -- and stored as their first surface form.
The LLM extractor is imported lazily so that the spaCy path needs neither openai nor tiktoken.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grapher_core.enrich.base import EntityExtractor, ExtractionResult, dedupe_entities
from grapher_core.enrich.cache import CacheKey, EntityCache, content_hash
from grapher_core.enrich.mentions import add_mentions, find_mentions, title_of
from grapher_core.enrich.runner import (
    EnrichReport,
    ExtractionRun,
    aenrich_objects,
    aextract_entities,
    arun_extraction,
    cache_key,
    enrich_objects,
    extract_entities,
    run_extraction,
)
from grapher_core.enrich.scale import EntityBatchMapper
from grapher_core.enrich.spacy_extractor import DEFAULT_SPACY_LABELS, SpacyEntityExtractor

if TYPE_CHECKING:
    from grapher_core.enrich.llm import OpenAIEntityExtractor

__all__ = [
    "DEFAULT_SPACY_LABELS",
    "CacheKey",
    "EnrichReport",
    "EntityBatchMapper",
    "EntityCache",
    "EntityExtractor",
    "ExtractionResult",
    "ExtractionRun",
    "OpenAIEntityExtractor",
    "SpacyEntityExtractor",
    "add_mentions",
    "aenrich_objects",
    "aextract_entities",
    "arun_extraction",
    "cache_key",
    "content_hash",
    "dedupe_entities",
    "enrich_objects",
    "extract_entities",
    "find_mentions",
    "run_extraction",
    "title_of",
]


def __getattr__(name: str) -> Any:
    if name == "OpenAIEntityExtractor":
        from grapher_core.enrich.llm import OpenAIEntityExtractor

        return OpenAIEntityExtractor
    raise AttributeError(f"module 'grapher_core.enrich' has no attribute {name!r}")
