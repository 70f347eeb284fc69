"""The extractor contract shared by the spaCy and LLM extractors and their callers.

An extractor is a pure function of one batch of texts (so it can be a Ray Data ``map_batches``
step), identified by a stable ``name`` and ``version`` that become part of the cache key: change
the model, the labels or the prompt and old cache rows no longer match.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from grapher_core.errors import InputTypeError
from grapher_core.metadata import normalise_entity


@dataclass(frozen=True)
class ExtractionResult:
    """The entities of one text, or why there are none.

    ``entities is None`` means the extraction failed (``error`` says why) -- not "no entities",
    which is ``[]``. ``flags`` carries non-fatal remarks such as dropped example-copied entities.
    """

    entities: list[str] | None
    error: str | None = None
    flags: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the extraction succeeded (possibly with zero entities)."""
        return self.entities is not None


@runtime_checkable
class EntityExtractor(Protocol):
    """Anything that turns a batch of texts into one ``ExtractionResult`` per text, in order."""

    name: str
    version: str

    def extract_batch(self, texts: Sequence[str]) -> list[ExtractionResult]:
        """Extract entities from each text; per-text failures are results, not exceptions."""
        ...


def dedupe_entities(entities: Iterable[str]) -> list[str]:
    """Distinct entities in first-seen order, compared by ``normalise_entity``.

    Each entity is kept as its first surface form with surrounding whitespace collapsed, so the
    stored value stays readable ("Barack Obama") while "barack  obama" later in the list is
    dropped. Empty strings are removed.
    """
    seen: set[str] = set()
    out: list[str] = []
    for entity in entities:
        surface = " ".join(entity.split())
        key = normalise_entity(surface)
        if key and key not in seen:
            seen.add(key)
            out.append(surface)
    return out


def extractor_model(extractor: object) -> str:
    """The model part of the cache key: ``extractor.model`` when it has one, else ``""``."""
    model = getattr(extractor, "model", "")
    return model if isinstance(model, str) else str(model)


def check_texts(texts: Sequence[str], what: str = "texts") -> list[str]:
    """The texts as a list; a single string or a non-string item is refused by position."""
    if isinstance(texts, str):
        raise InputTypeError(f"{what} expects a sequence of texts, not a single string")
    out = list(texts)
    for position, text in enumerate(out):
        if not isinstance(text, str):
            raise InputTypeError(f"text at position {position} is {type(text).__name__}, not str")
    return out
