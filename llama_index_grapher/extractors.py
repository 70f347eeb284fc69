"""GraphER enrichment as LlamaIndex metadata extractors (for an ``IngestionPipeline``).

Each extractor writes one list field that a core proximity reads at query time:

* :class:`GraphEREntityExtractor` -> ``"entities"`` for ``SharedEntities()`` (offline spaCy NER by
  default, or any ``grapher_core.enrich`` extractor such as the OpenAI one);
* :class:`GraphERConceptExtractor` -> ``"concepts"`` for ``ranker="g-rag"`` and
  ``shared_concepts()`` (spaCy dependency-parse concept graphs);
* :class:`GraphERLinkExtractor` -> ``"links"`` for ``ForeignKeys("links", target_field=...)``
  (on split pages ``"anchors"`` too, for ``ChunkLinks()``);
* :class:`GraphERMentionExtractor` -> ``"mentions"`` (titles named in the text, over a whole
  corpus) for ``ForeignKeys("mentions", target_field="title")``.

Both keep their field out of the text that is embedded or sent to an LLM, never rewrite the
node's ``text_template``, and by default work on copies (``in_place=False``).

Vector stores differ in what they keep. LlamaIndex's Chroma store (and others) validates flat
metadata by default -- str, int, float or None -- and rejects a list at ingest, so the default
here is ``list_format="json"``: a JSON string that every LlamaIndex vector store keeps, read back
by :func:`grapher_core.metadata.read_list` like a list. ``"list"`` writes native lists (empty
ones omitted) for stores that keep them (Chroma with ``store.flat_metadata = False``, Qdrant,
the in-memory ``SimpleVectorStore``), ``"delimited"`` ``"a|b"`` strings. The names are the
LangChain wrapper's too (:data:`grapher_core.conventions.LIST_FORMATS`); ``"native"``, this
package's former name for ``"list"``, is still accepted with a ``DeprecationWarning``.

Parameter names are the LangChain wrapper's for the same meaning: ``url_keys`` (a document's
own URL; ``base_field`` is its deprecated former name here), ``cache`` (the entity cache;
``cache_path`` is deprecated).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import pydantic
from llama_index.core.bridge.pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    field_serializer,
    field_validator,
    model_validator,
)
from llama_index.core.extractors.interface import BaseExtractor
from llama_index.core.schema import BaseNode, Document, MetadataMode

from grapher_core.conventions import LIST_FORMATS
from grapher_core.diagnostics import stacklevel_outside
from grapher_core.enrich.links import URL_KEYS
from grapher_core.errors import ConfigError, InputError
from grapher_core.metadata import encode_list as core_encode_list
from llama_index_grapher.fields import KnownFields

__all__ = [
    "GraphERConceptExtractor",
    "GraphEREntityExtractor",
    "GraphERLinkExtractor",
    "GraphERMentionExtractor",
    "ListFormat",
    "encode_list",
    "exclude_from_text",
    "list_format_name",
]

logger = logging.getLogger(__name__)

ListFormat = Literal["list", "json", "delimited", "native"]
"""The core's list formats (:data:`grapher_core.conventions.ListFormat`) plus ``"native"``,
the deprecated former name of ``"list"``."""


def list_format_name(list_format: str) -> str:
    """The core's name for ``list_format``: ``"native"`` -> ``"list"`` (deprecated, warned)."""
    if list_format == "native":
        warnings.warn(
            'list_format="native" is now called "list" (the name both wrappers use)',
            DeprecationWarning,
            stacklevel=3,
        )
        return "list"
    if list_format not in LIST_FORMATS:
        raise InputError(f"list_format must be one of {LIST_FORMATS}, got {list_format!r}")
    return list_format


def encode_list(values: Sequence[Any], list_format: ListFormat) -> Any:
    """A list value as the chosen store-friendly shape; ``None`` means "do not write the key".

    :func:`grapher_core.metadata.encode_list`: ``"list"`` is non-empty and flat, as Chroma needs
    (an empty list is omitted and a nested one is written as JSON), ``"json"`` a JSON string for
    flat-metadata stores, ``"delimited"`` a ``"a|b"`` string.
    """
    return core_encode_list(values, list_format_name(list_format))


# A deprecation raised inside a pydantic validator should point at the user's constructor:
# frames of this package, pydantic and LlamaIndex are skipped.
_FRAMEWORK_PREFIXES = tuple(
    os.path.dirname(os.path.abspath(module.__file__ or "")) + os.sep
    for module in (pydantic, sys.modules["llama_index.core"], sys.modules[__name__.split(".")[0]])
)


def renamed(data: Any, old: str, new: str, convert: Any = None) -> Any:
    """Constructor data with the deprecated keyword ``old`` moved to ``new`` (warned once per
    call, naming ``new``); both given is an error. ``convert`` maps the old value to the new."""
    if not isinstance(data, dict) or old not in data:
        return data
    if new in data:
        raise InputError(f"give {new}= only ({old}= is its deprecated former name)")
    data = dict(data)
    value = data.pop(old)
    warnings.warn(
        f"{old}= is deprecated: use {new}= (the name both GraphER wrappers use)",
        DeprecationWarning,
        stacklevel=stacklevel_outside(_FRAMEWORK_PREFIXES),
    )
    data[new] = convert(value) if convert is not None else value
    return data


def exclude_from_text(node: BaseNode, keys: Sequence[str]) -> None:
    """Keep ``keys`` out of the node's embedding and LLM text (edge fields are not content)."""
    for excluded in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
        for key in keys:
            if key not in excluded:
                excluded.append(key)


class _GraphERExtractor(KnownFields, BaseExtractor):
    """Shared behaviour: one edge field, excluded from text, no template rewrite, copies."""

    # Our fields are strict and checked on assignment too (a string is not a boolean).
    model_config = ConfigDict(validate_assignment=True)

    field: str = Field(description="Metadata key written.")
    list_format: ListFormat = Field(
        default="json",
        description="'json' (default: a string every LlamaIndex vector store keeps, Chroma's "
        "flat default included), 'list' (native lists: Chroma with "
        "flat_metadata=False, Qdrant, in-memory) or 'delimited' ('a|b').",
    )
    disable_template_rewrite: bool = Field(
        strict=True,
        default=True,
        description="GraphER fields are edges, not text: keep the node template.",
    )
    in_place: bool = Field(
        strict=True, default=False, description="Copy nodes instead of mutating them."
    )
    show_progress: bool = Field(strict=True, default=False, description="Whether to show progress.")

    async def aprocess_nodes(
        self,
        nodes: Sequence[BaseNode],
        excluded_embed_metadata_keys: list[str] | None = None,
        excluded_llm_metadata_keys: list[str] | None = None,
        **kwargs: Any,
    ) -> list[BaseNode]:
        out = await super().aprocess_nodes(
            nodes,
            excluded_embed_metadata_keys=excluded_embed_metadata_keys,
            excluded_llm_metadata_keys=excluded_llm_metadata_keys,
            **kwargs,
        )
        for node in out:
            exclude_from_text(node, self._hidden_fields())
        return out

    def _hidden_fields(self) -> list[str]:
        """The metadata keys this extractor writes, kept out of the embedded and LLM text."""
        return [self.field]

    def _record(self, values: Sequence[Any]) -> dict[str, Any]:
        encoded = encode_list(values, self.list_format)
        return {} if encoded is None else {self.field: encoded}


class GraphEREntityExtractor(_GraphERExtractor):
    """Named entities of each node into ``metadata["entities"]`` (for ``SharedEntities()``).

    ``extractor`` is any ``grapher_core.enrich`` entity extractor; the default is the offline
    ``SpacyEntityExtractor()``. Use ``OpenAIEntityExtractor(model, base_url=...)`` for the paper's
    LLM prompt. ``cache`` (an ``EntityCache`` or the path of one, as in LangChain's
    ``EntityTransformer``; ``cache_path=`` is its deprecated former name) keeps results so
    re-ingestion is free. Texts whose extraction failed get no field (and are counted in a
    warning).
    """

    field: str = Field(default="entities", description="Metadata key written.")
    extractor: Any = Field(default=None, description="grapher_core.enrich entity extractor.")
    cache: Any = Field(
        default=None, description="EntityCache, or the path of its SQLite file (created)."
    )

    _cache: Any = PrivateAttr(default=None)
    _default_extractor: Any = PrivateAttr(default=None)

    FORMER_NAMES: ClassVar[tuple[str, ...]] = ("cache_path",)
    PAYLOAD_LIVE: ClassVar[tuple[str, ...]] = ("extractor",)  # a payload names no code

    @model_validator(mode="before")
    @classmethod
    def _former_names(cls, data: Any) -> Any:
        return renamed(data, "cache_path", "cache")

    @field_validator("cache")
    @classmethod
    def _cache_kind(cls, value: Any) -> Any:
        if value is None or isinstance(value, (str, Path)) or hasattr(value, "get_many"):
            return value
        raise InputError(f"cache must be an EntityCache or a path, got {type(value).__name__}")

    @field_serializer("cache")
    def _serialise_cache(self, value: Any) -> str | None:
        """A path in ``to_dict()`` (and in the ingestion cache's transformation hash)."""
        if value is None:
            return None
        return str(getattr(value, "path", value))

    @property
    def cache_path(self) -> str | None:
        """Deprecated: the entity cache's path (use ``cache``)."""
        warnings.warn(
            "cache_path is deprecated: use cache (the name both GraphER wrappers use)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._serialise_cache(self.cache)

    @classmethod
    def class_name(cls) -> str:
        return "GraphEREntityExtractor"

    def _resolved(self) -> tuple[Any, Any]:
        from grapher_core.enrich import EntityCache, SpacyEntityExtractor

        extractor = self.extractor
        if extractor is None:  # the offline default, loaded on first use
            if self._default_extractor is None:
                self._default_extractor = SpacyEntityExtractor()
            extractor = self._default_extractor
        if self.cache is not None and self._cache is None:
            self._cache = (
                EntityCache(self.cache) if isinstance(self.cache, (str, Path)) else self.cache
            )
        return extractor, self._cache

    async def aextract(self, nodes: Sequence[BaseNode]) -> list[dict[str, Any]]:
        from grapher_core.enrich import aextract_entities

        extractor, cache = self._resolved()
        texts = [node.get_content(metadata_mode=MetadataMode.NONE) for node in nodes]
        results = await aextract_entities(texts, extractor, cache=cache)
        failed = sum(result is None for result in results)
        if failed:
            logger.warning(
                "entity extraction failed for %d of %d nodes; they get no %r field",
                failed,
                len(nodes),
                self.field,
            )
        return [{} if result is None else self._record(result) for result in results]


class GraphERConceptExtractor(GraphEREntityExtractor):
    """Concept graph of each node into ``metadata["concepts"]`` (for ``ranker="g-rag"`` and
    ``shared_concepts()``); ``extractor`` defaults to ``SpacyConceptParser()``. Same cache and
    failure behaviour as :class:`GraphEREntityExtractor`."""

    field: str = Field(default="concepts", description="Metadata key written.")

    @classmethod
    def class_name(cls) -> str:
        return "GraphERConceptExtractor"

    def _resolved(self) -> tuple[Any, Any]:
        if self.extractor is None and self._default_extractor is None:
            from grapher_core.enrich.concepts import SpacyConceptParser

            self._default_extractor = SpacyConceptParser()
        return super()._resolved()


class GraphERLinkExtractor(_GraphERExtractor):
    """Hyperlinks of each node (HTML or Markdown) into ``metadata["links"]``, resolved as
    LangChain's ``LinkTransformer`` resolves them (one resolver,
    :class:`grapher_core.enrich.links.LinkIndex`), so the same chunks get the same links in
    both frameworks.

    Without ``id_by_target`` the nodes of the call are the corpus: a link to a page one node
    holds gets that node's id; into a page several nodes share (a split page), ``page#anchor``
    gets the id of the node holding the anchor (its ``anchor_field``, an HTML ``id``/Markdown
    heading in its text) and a whole-page link the page value, whose one chunk ``ChunkLinks``
    (chosen by zero-config detection) picks at query time. Links from a node to itself or
    to its own page are dropped; links to pages outside the call keep their normalised URL (a
    page ingested in a later batch still matches it by its ``url_keys`` field). Run it after
    the node parser (in an ``IngestionPipeline``, after the splitter): on whole ``Document``
    objects, whose ids the splitter does not keep, it writes page values instead of ids. Each
    node's anchors are written to ``anchor_field`` when its metadata has none.

    With ``id_by_target`` (target -> id; its keys are normalised as
    ``grapher_core.enrich.links.build_target_index`` does) links are resolved through that map
    and unknown targets dropped. ``url_keys`` are the
    metadata keys of a node's own URL, the first one present wins (relative links, and links
    to itself); the name and default are ``LinkTransformer``'s (``base_field=``, a single key,
    is its deprecated former name here).
    """

    field: str = Field(default="links", description="Metadata key written.")
    fmt: Literal["auto", "html", "markdown"] = Field(default="auto", description="Link syntax.")
    id_by_target: dict[str, str] | None = Field(
        default=None, description="Normalised link target -> object id."
    )
    url_keys: tuple[str, ...] = Field(
        default=URL_KEYS,
        description="Metadata keys of the node's own URL, first present wins (relative links, "
        "self-links dropped).",
    )
    anchor_field: str | None = Field(
        default="anchors",
        description="Metadata key of the anchors a node's text defines (written when absent, "
        "for links into chunked pages); None: not written.",
    )

    FORMER_NAMES: ClassVar[tuple[str, ...]] = ("base_field",)

    @model_validator(mode="before")
    @classmethod
    def _former_names(cls, data: Any) -> Any:
        return renamed(
            data, "base_field", "url_keys", lambda value: () if value is None else (value,)
        )

    @field_validator("url_keys", mode="before")
    @classmethod
    def _one_key(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @property
    def base_field(self) -> str | None:
        """Deprecated: the first of ``url_keys``."""
        warnings.warn(
            "base_field is deprecated: use url_keys (the name both GraphER wrappers use)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.url_keys[0] if self.url_keys else None

    @classmethod
    def class_name(cls) -> str:
        return "GraphERLinkExtractor"

    def _hidden_fields(self) -> list[str]:
        return [self.field, self.anchor_field] if self.anchor_field else [self.field]

    async def aextract(self, nodes: Sequence[BaseNode]) -> list[dict[str, Any]]:
        from grapher_core.enrich.links import link_target, resolve_object_links

        texts = [node.get_content(metadata_mode=MetadataMode.NONE) for node in nodes]
        # Whole documents are split after this (their ids are not the nodes' ids): a link
        # into a page they hold keeps the page value, which ChunkLinks lands at query time.
        targets = [
            link_target(
                None if isinstance(node, Document) else node.node_id,
                node.metadata,
                text,
                url_keys=self.url_keys,
                anchor_field=self.anchor_field,
                fmt=self.fmt,
            )
            for node, text in zip(nodes, texts, strict=True)
        ]
        resolved = resolve_object_links(
            texts, targets, id_by_target=self.id_by_target, fmt=self.fmt, keep_outside=True
        )
        records = []
        for node, links in zip(nodes, resolved, strict=True):
            record = self._record(list(links.ids))
            if self.anchor_field and links.anchors and self.anchor_field not in node.metadata:
                encoded = encode_list(list(links.anchors), self.list_format)
                if encoded is not None:
                    record[self.anchor_field] = encoded
            records.append(record)
        return records


class GraphERMentionExtractor(_GraphERExtractor):
    """Titles each node mentions into ``metadata["mentions"]`` (for
    ``ForeignKeys("mentions", target_field="title")``, or zero-config detection).

    Corpus-level: the nodes given together are the titles that can be found, so run it over
    the whole corpus (an ``IngestionPipeline`` passes all nodes at once). A node's title is
    ``metadata[title_field]``, else its first line (then written to ``title_field``); give
    split chunks their document's title in metadata. Matching is
    :func:`grapher_core.enrich.mentions.find_mentions` (aliases, word boundaries, stopword and
    hub titles skipped).

    ``IngestionPipeline.run(num_workers=N)`` gives each worker process a share of the nodes,
    where the other shares' titles cannot be found. Call :meth:`fit` on the whole corpus first:
    its titles and hub titles travel with the extractor, and every worker then writes exactly
    what one call over the whole corpus writes. An extractor that was not fitted refuses to run
    in a process it was sent to (``ConfigError``) rather than write mentions silently missing.
    """

    field: str = Field(default="mentions", description="Metadata key written.")
    title_field: str = Field(default="title", description="Metadata key of a node's title.")
    max_share: float | None = Field(
        strict=True,
        default=0.02,
        description="Titles mentioned by more than this share of nodes are hubs.",
    )
    titles: list[str] | None = Field(
        default=None,
        description="Every title of the corpus, set by fit(); None: each call's nodes are the "
        "corpus.",
    )
    hub_titles: list[str] | None = Field(
        default=None, description="The corpus' hub titles, set by fit() (never written)."
    )

    _sent: bool = PrivateAttr(default=False)

    @classmethod
    def class_name(cls) -> str:
        return "GraphERMentionExtractor"

    def __setstate__(self, state: Any) -> None:
        """Unpickled: this copy runs in another process, on a share of the nodes at most."""
        super().__setstate__(state)
        self._sent = True

    def fit(self, nodes: Sequence[BaseNode]) -> GraphERMentionExtractor:
        """Index the titles and hub titles of the whole corpus ``nodes``; returns ``self``.

        Then any share of the corpus, in any process, gets the mentions the whole corpus
        would give it (for ``IngestionPipeline.run(num_workers=N)``).
        """
        from grapher_core.enrich.mentions import MentionIndex

        index = MentionIndex.fit(
            self._corpus(nodes), title_field=self.title_field, max_share=self.max_share
        )
        self.titles = list(index.titles)
        self.hub_titles = sorted(index.hubs)
        return self

    def _corpus(self, nodes: Sequence[BaseNode]) -> list[Any]:
        from grapher_core.candidates import CorpusObject

        return [
            CorpusObject(str(i), node.get_content(metadata_mode=MetadataMode.NONE), node.metadata)
            for i, node in enumerate(nodes)
        ]

    async def aextract(self, nodes: Sequence[BaseNode]) -> list[dict[str, Any]]:
        from grapher_core.enrich.mentions import MentionIndex, find_mentions, title_of

        corpus = self._corpus(nodes)
        if self.titles is not None:
            index = MentionIndex(
                tuple(self.titles), frozenset(self.hub_titles or ()), self.title_field
            )
            lists = index.find(corpus)
        elif self._sent:
            # ConfigError, not StateError: LlamaIndex's asyncio_run rewrites any RuntimeError.
            raise ConfigError(
                "GraphERMentionExtractor was sent to another process (IngestionPipeline"
                "(num_workers>1) gives each worker a share of the nodes), where it cannot find "
                "the titles of the other shares: call .fit(nodes) on the whole corpus first, "
                "or run it with num_workers=1"
            )
        else:
            lists = find_mentions(corpus, title_field=self.title_field, max_share=self.max_share)
        out = []
        for node, obj, mentions in zip(nodes, corpus, lists, strict=True):
            record = self._record(mentions)
            if self.title_field not in node.metadata:
                record[self.title_field] = title_of(obj, self.title_field)
            out.append(record)
        return out
