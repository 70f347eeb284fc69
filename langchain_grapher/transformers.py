"""Document transformers that write GraphER's enrichment metadata (offline, one pass).

* :class:`EntityTransformer` -- named entities (conceptual edges, ``SharedEntities()``);
* :class:`ChunkLinkTransformer` -- document id + chunk index (contextual, ``AdjacentChunks()``);
* :class:`MentionTransformer` -- titles a document names, over a whole corpus (structural,
  ``ForeignKeys("mentions", target_field="title")``);
* :class:`ConceptGraphTransformer` -- concept graphs (G-RAG, ``ranker="g-rag"`` and
  ``shared_concepts()``);
* :class:`LinkTransformer` -- hyperlinks resolved to document ids (structural,
  ``ForeignKeys(field="links")``), or on split chunks to the anchored chunk / the linked page
  (``ChunkLinks()``).

Each returns *new* documents (same ``id``, same text, a copy of the metadata plus its field) and
writes lists in the shape the target vector store keeps (``list_format``): ``"list"`` (native;
an empty list is left out, as Chroma rejects it), ``"json"`` or ``"delimited"`` for stores that
keep only scalars. The proximities read all three shapes.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.documents import BaseDocumentTransformer, Document
from pydantic import ConfigDict, Field, field_validator

from grapher_core.conventions import ListFormat
from grapher_core.edges.links import ANCHOR_FIELD, HEADING_FIELDS
from grapher_core.enrich.chunks import DEFAULT_DOC_KEYS, chunk_positions, document_id
from grapher_core.enrich.links import URL_KEYS, link_target, resolve_object_links
from grapher_core.errors import InputError, InputTypeError, StateError
from grapher_core.metadata import encode_list
from langchain_grapher.fields import KnownFields

__all__ = [
    "ChunkLinkTransformer",
    "ConceptGraphTransformer",
    "EntityTransformer",
    "LinkTransformer",
    "ListFormat",
    "MentionTransformer",
]


def with_list(document: Document, field: str, values: Iterable[Any], list_format: str) -> Document:
    """A new Document with ``metadata[field]`` = ``values`` encoded; the input is not touched."""
    metadata = dict(document.metadata)
    encoded = encode_list(values, list_format)
    if encoded is None:
        metadata.pop(field, None)
    else:
        metadata[field] = encoded
    return Document(id=document.id, page_content=document.page_content, metadata=metadata)


def _check_documents(documents: Sequence[Document]) -> list[Document]:
    if isinstance(documents, Document):
        raise InputTypeError("expected a sequence of Documents, got a single Document")
    items = list(documents)
    for position, document in enumerate(items):
        if not isinstance(document, Document):
            raise InputTypeError(
                f"item at position {position} is a {type(document).__name__}, "
                "not a langchain_core Document"
            )
    return items


class EntityTransformer(KnownFields, BaseDocumentTransformer):
    """Write each document's named entities to ``metadata[field]`` (default ``"entities"``).

    Backed by :mod:`grapher_core.enrich`: offline spaCy NER by default, or any core extractor
    (e.g. ``OpenAIEntityExtractor(model, base_url=...)`` for the paper's LLM prompt). With a
    ``cache`` (an ``EntityCache`` or a path to one) a re-run only extracts new texts. A document
    whose extraction failed gets no field (no conceptual edges) and a warning; ``strict=True``
    raises instead.
    """

    model_config = ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, validate_assignment=True
    )

    extractor: Any = None
    """A core entity extractor; ``None`` = ``SpacyEntityExtractor()`` (loaded on first use)."""
    cache: Any = None
    """An ``EntityCache``, a path to one (created if absent), or ``None``."""
    field: str = "entities"
    list_format: ListFormat = "list"
    strict: bool = Field(default=False, strict=True)

    def _extractor(self) -> Any:
        if self.extractor is None:
            from grapher_core.enrich import SpacyEntityExtractor

            self.extractor = SpacyEntityExtractor()
        return self.extractor

    def _cache(self) -> Any:
        if isinstance(self.cache, (str, Path)):
            from grapher_core.enrich import EntityCache

            self.cache = EntityCache(self.cache)
        return self.cache

    def transform_documents(
        self, documents: Sequence[Document], **kwargs: Any
    ) -> Sequence[Document]:
        from grapher_core.enrich import extract_entities

        items = _check_documents(documents)
        entities = extract_entities(
            [d.page_content for d in items], self._extractor(), cache=self._cache()
        )
        return self._write(items, entities)

    async def atransform_documents(
        self, documents: Sequence[Document], **kwargs: Any
    ) -> Sequence[Document]:
        from grapher_core.enrich import aextract_entities

        items = _check_documents(documents)
        entities = await aextract_entities(
            [d.page_content for d in items], self._extractor(), cache=self._cache()
        )
        return self._write(items, entities)

    def _write(self, items: list[Document], entities: list[list[str] | None]) -> list[Document]:
        failed = [position for position, found in enumerate(entities) if found is None]
        if failed:
            message = (
                f"entity extraction failed for {len(failed)} of {len(items)} documents "
                f"(positions {failed[:10]}); they get no {self.field!r} field"
            )
            if self.strict:
                raise StateError(message)
            warnings.warn(message, RuntimeWarning, stacklevel=3)
        return [
            document if found is None else with_list(document, self.field, found, self.list_format)
            for document, found in zip(items, entities, strict=True)
        ]


class ConceptGraphTransformer(EntityTransformer):
    """Write each document's concept graph to ``metadata[field]`` (default ``"concepts"``) for
    ``ranker="g-rag"`` and ``shared_concepts()``: spaCy's dependency parse by default
    (``grapher_core.enrich.concepts.SpacyConceptParser``), stored as a store-safe list of strings.
    Same cache, failure and ``list_format`` behaviour as :class:`EntityTransformer`."""

    field: str = "concepts"

    def _extractor(self) -> Any:
        if self.extractor is None:
            from grapher_core.enrich.concepts import SpacyConceptParser

            self.extractor = SpacyConceptParser()
        return self.extractor


class ChunkLinkTransformer(KnownFields, BaseDocumentTransformer):
    """Write ``doc_id`` and ``chunk_index`` (and ``n_chunks_in_doc``) for adjacent-chunk edges.

    With a ``text_splitter`` (any LangChain splitter) it takes whole documents, splits each and
    numbers its chunks; the document id is the first of ``doc_keys`` found in its metadata, else
    its ``Document.id``, else a hash of its text. Without one it takes chunks already split and
    groups them by the first of ``doc_keys`` in their metadata (a splitter copies ``source``
    from the parent), ordering each group by ``metadata["start_index"]`` when every chunk has
    it (``add_start_index=True``), else by list order. ``set_ids`` gives id-less chunks the
    stable id ``"<doc_id>#<chunk_index>"``.
    """

    model_config = ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, validate_assignment=True
    )

    text_splitter: Any = None
    """A LangChain ``TextSplitter`` (anything with ``split_documents``), or ``None``."""
    doc_keys: tuple[str, ...] = DEFAULT_DOC_KEYS
    doc_field: str = "doc_id"
    index_field: str = "chunk_index"
    count_field: str | None = "n_chunks_in_doc"
    start_key: str = "start_index"
    set_ids: bool = Field(default=True, strict=True)

    def transform_documents(
        self, documents: Sequence[Document], **kwargs: Any
    ) -> Sequence[Document]:
        items = _check_documents(documents)
        if self.text_splitter is None:
            return self._number(items, [self._chunk_doc_id(d, p) for p, d in enumerate(items)])
        if not hasattr(self.text_splitter, "split_documents"):
            raise InputTypeError(
                "text_splitter must have split_documents(documents), got "
                f"{type(self.text_splitter).__name__}"
            )
        chunks: list[Document] = []
        doc_ids: list[str] = []
        for parent in items:
            parent_id = document_id(
                parent.metadata, keys=self.doc_keys, object_id=parent.id, text=parent.page_content
            )
            if parent_id is None:
                raise InputError(
                    f"document {parent.id!r} has no id, id field or text to name its chunks by"
                )
            pieces = self.text_splitter.split_documents([parent])
            chunks.extend(pieces)
            doc_ids.extend([parent_id] * len(pieces))
        return self._number(chunks, doc_ids, use_starts=False)

    def _chunk_doc_id(self, document: Document, position: int) -> str:
        found = document_id(document.metadata, keys=self.doc_keys)
        if found is None:
            raise InputError(
                f"chunk at position {position} has none of the metadata keys {self.doc_keys} "
                "naming its document: set doc_keys, or pass text_splitter= to split whole "
                "documents"
            )
        return found

    def _number(
        self, chunks: list[Document], doc_ids: list[str], *, use_starts: bool = True
    ) -> list[Document]:
        starts = [c.metadata.get(self.start_key) for c in chunks] if use_starts else None
        positions = chunk_positions(doc_ids, starts)
        out = []
        for chunk, position in zip(chunks, positions, strict=True):
            metadata = dict(chunk.metadata)
            metadata.update(
                position.as_metadata(
                    doc_field=self.doc_field,
                    index_field=self.index_field,
                    count_field=self.count_field,
                )
            )
            chunk_id = chunk.id
            if chunk_id is None and self.set_ids:
                chunk_id = f"{position.doc_id}#{position.chunk_index}"
            out.append(Document(id=chunk_id, page_content=chunk.page_content, metadata=metadata))
        return out


class LinkTransformer(KnownFields, BaseDocumentTransformer):
    """Write where each document links to (``metadata[field]``, default ``"links"``).

    Links are read from the text (HTML ``<a href>`` and/or Markdown, ``fmt``) and resolved
    through ``id_by_target`` (link target -> id, e.g. URL -> id) when given, else through the
    documents of the same call, each reachable by its id and by the values of ``url_keys`` in
    its metadata (``source``, ``url``; one key may be given as a string). Relative links are
    resolved against the linking document's own URL (the first ``url_keys`` value present).
    Links to unknown targets are dropped.

    Split chunks work as they are: the chunks sharing a page URL (the first ``url_keys``
    value) are one page, not a clash (:class:`grapher_core.enrich.links.LinkIndex`). A link to
    a page held by one document gets its ``Document.id`` (rank with
    ``ForeignKeys(field="links")``); into a chunked page, ``page#anchor`` gets the id of the
    chunk holding the anchor (``metadata[anchor_field]``, an HTML ``id``/Markdown heading in
    its text, or a heading in ``heading_fields``) and a whole-page link gets the page's URL as
    the chunks' metadata writes it, whose one chunk
    :class:`~grapher_core.edges.links.ChunkLinks` picks at rank time (zero-config detection
    chooses it). Anchors found in a document's text are written to ``anchor_field`` when its
    metadata has none, for rank time; a heading a splitter left at the very end of a chunk
    (its section's text starts in the next one) counts as the next chunk's. LlamaIndex's
    ``GraphERLinkExtractor`` takes the same ``url_keys``.
    """

    model_config = ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, validate_assignment=True
    )

    field: str = "links"
    fmt: Literal["auto", "html", "markdown"] = "auto"
    id_by_target: dict[str, str] | None = None
    url_keys: tuple[str, ...] = URL_KEYS
    anchor_field: str | None = ANCHOR_FIELD
    heading_fields: tuple[str, ...] = HEADING_FIELDS
    list_format: ListFormat = "list"

    @field_validator("url_keys", "heading_fields", mode="before")
    @classmethod
    def _one_key(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    def transform_documents(
        self, documents: Sequence[Document], **kwargs: Any
    ) -> Sequence[Document]:
        items = _check_documents(documents)
        targets = [
            link_target(
                document.id,
                document.metadata,
                document.page_content,
                url_keys=self.url_keys,
                anchor_field=self.anchor_field,
                heading_fields=self.heading_fields,
                fmt=self.fmt,
            )
            for document in items
        ]
        texts = [document.page_content for document in items]
        resolved = resolve_object_links(
            texts, targets, id_by_target=self.id_by_target, fmt=self.fmt
        )
        out = []
        for document, links in zip(items, resolved, strict=True):
            new = with_list(document, self.field, list(links.ids), self.list_format)
            if self.anchor_field and links.anchors and self.anchor_field not in document.metadata:
                new = with_list(new, self.anchor_field, list(links.anchors), self.list_format)
            out.append(new)
        return out


class MentionTransformer(KnownFields, BaseDocumentTransformer):
    """Write the titles each document mentions to ``metadata[field]`` (default ``"mentions"``).

    A *corpus-level* transformer: give it the whole corpus (or each new batch with the
    documents already indexed), since a document can only link to titles it is shown. The
    title of a document is ``metadata[title_field]``, else its first line (written back to
    ``title_field`` so ``ForeignKeys("mentions", target_field="title")`` -- or zero-config
    detection -- finds it). Matching: :func:`grapher_core.enrich.mentions.find_mentions`
    (aliases without a trailing parenthesis, word boundaries, stopword and hub titles skipped).
    """

    model_config = ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, validate_assignment=True
    )

    field: str = "mentions"
    title_field: str = "title"
    list_format: ListFormat = "list"
    max_share: float | None = Field(default=0.02, strict=True)
    """Titles mentioned by more than this share of the corpus (and > 10 documents) are hubs."""

    def transform_documents(
        self, documents: Sequence[Document], **kwargs: Any
    ) -> Sequence[Document]:
        from grapher_core.candidates import CorpusObject
        from grapher_core.enrich.mentions import find_mentions, title_of

        items = _check_documents(documents)
        corpus = [CorpusObject(str(i), d.page_content, d.metadata) for i, d in enumerate(items)]
        lists = find_mentions(corpus, title_field=self.title_field, max_share=self.max_share)
        out = []
        for document, obj, mentions in zip(items, corpus, lists, strict=True):
            new = with_list(document, self.field, mentions, self.list_format)
            new.metadata.setdefault(self.title_field, title_of(obj, self.title_field))
            out.append(new)
        return out

    async def atransform_documents(
        self, documents: Sequence[Document], **kwargs: Any
    ) -> Sequence[Document]:
        """CPU-bound and fast (one automaton pass): the sync path."""
        return self.transform_documents(documents, **kwargs)
