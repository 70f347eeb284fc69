"""Offline entity extraction with spaCy NER (no network, no API bill).

Only ``tok2vec`` and ``ner`` run (the tagger, parser and lemmatizer are not needed for entities
and would triple the time), texts go through ``nlp.pipe`` in batches, and the model loads on
first use so that creating the extractor (or pickling it to a Ray worker) is cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grapher_core.enrich.base import ExtractionResult, check_texts, dedupe_entities
from grapher_core.enrich.spacy_pipeline import DEFAULT_SPACY_MODEL, LazySpacy
from grapher_core.errors import ConfigError, InputError, InputTypeError

#: Labels kept by default: things that name something. Numeric and temporal labels (CARDINAL,
#: ORDINAL, QUANTITY, PERCENT, MONEY, TIME, DATE) are left out because values like "two" or
#: "2010" are shared by unrelated passages and would add spurious conceptual edges.
DEFAULT_SPACY_LABELS: tuple[str, ...] = (
    "PERSON",
    "NORP",
    "FAC",
    "ORG",
    "GPE",
    "LOC",
    "PRODUCT",
    "EVENT",
    "WORK_OF_ART",
    "LAW",
    "LANGUAGE",
)

SPACY_EXTRACTOR_VERSION = "2"

_LEADING_ARTICLES = ("the ", "The ", "THE ")


def clean_span(text: str) -> str:
    """An entity span without a leading article: spaCy often keeps "the" ("the United Kingdom")
    where an LLM or another passage says "United Kingdom"; dropping it lets them match."""
    text = text.strip()
    for article in _LEADING_ARTICLES:
        if text.startswith(article) and len(text) > len(article):
            return text[len(article) :].lstrip()
    return text


class SpacyEntityExtractor:
    """Named entities from a spaCy pipeline, filtered by label and deduplicated.

    ``name`` is ``"spacy:<model>"`` and ``version`` encodes the label set, so a cache never
    mixes results of different models or labels.
    """

    def __init__(
        self,
        labels: Sequence[str] | None = None,
        batch_size: int = 256,
        model: str = DEFAULT_SPACY_MODEL,
    ) -> None:
        if isinstance(labels, str):
            raise InputTypeError("labels must be a sequence of label names, not a string")
        chosen = tuple(DEFAULT_SPACY_LABELS if labels is None else labels)
        if not chosen:
            raise ConfigError("labels is empty: no entity would ever be kept")
        bad = [label for label in chosen if not isinstance(label, str) or not label.strip()]
        if bad:
            raise ConfigError(f"labels must be non-empty strings, got {bad!r}")
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        self.labels: tuple[str, ...] = tuple(sorted({label.strip().upper() for label in chosen}))
        self.batch_size = batch_size
        self.model = model
        self.name = f"spacy:{model}"
        self.version = f"{SPACY_EXTRACTOR_VERSION}+{'-'.join(self.labels)}"
        self._label_set = frozenset(self.labels)
        self._spacy = LazySpacy(
            model,
            components=("ner",),
            purpose="the spaCy entity extractor",
            enable=("tok2vec", "ner"),
            check=self._check_labels,
        )

    def __repr__(self) -> str:
        return f"SpacyEntityExtractor(model={self.model!r}, labels={list(self.labels)!r})"

    @property
    def nlp(self) -> Any:
        """The spaCy pipeline, loaded on first use with only tok2vec and ner enabled."""
        return self._spacy.load()

    def _check_labels(self, nlp: Any) -> None:
        known = set(nlp.get_pipe("ner").labels)
        unknown = sorted(self._label_set - known)
        if unknown:
            raise InputError(
                f"labels {unknown} are not produced by spaCy model {self.model!r}; "
                f"it knows {sorted(known)}"
            )

    def extract_batch(self, texts: Sequence[str]) -> list[ExtractionResult]:
        """Entities of each text, in input order (a pure function of the batch)."""
        texts = check_texts(texts, "extract_batch")
        if not texts:
            return []
        nlp = self.nlp
        limit = int(getattr(nlp, "max_length", 1_000_000))
        prepared = [text[:limit] for text in texts]
        results: list[ExtractionResult] = []
        for doc in nlp.pipe(prepared, batch_size=self.batch_size):
            entities = [clean_span(ent.text) for ent in doc.ents if ent.label_ in self._label_set]
            results.append(ExtractionResult(dedupe_entities(entities)))
        return results
