"""Hyperlinks between chunked pages: each link lands on the one chunk it points at.

A software manual split into ~20 chunks per page links to *pages* (``"install.html"``) and to
sections (``"install.html#linux"``). Matching link values against the page field, as
:class:`~grapher_core.edges.keys.ForeignKeys` does, gives every chunk of the linked page the
same edge, so the one right section cannot stand out. :class:`ChunkLinks` resolves each link
to a single chunk among the candidates:

* a value that is a candidate id -> that candidate (enrichment may have resolved it already);
* ``"<page>#<anchor>"`` -> the chunk of that page holding the anchor (its ``anchors`` list),
  else the chunk whose heading slugifies to it (``heading`` or a splitter's ``"Header 2"``);
* ``"<page>"`` (or an anchor nobody declares) -> the chunk of that page most similar to the
  linking chunk: by the candidates' vectors when they carry them, else by lexical (TF-IDF)
  overlap of their texts (HTML tags left out); ties, and no overlap at all, go to the page's
  first chunk.

A link is evidence for the chunk that holds it (chunk 3 of page A), never for its siblings.
The helpers here (:func:`split_link`, :func:`anchor_key`, :func:`heading_keys`) are also what
offline enrichment (:mod:`grapher_core.enrich.links`) resolves anchors with, so both agree.
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import unquote

import numpy as np
import scipy.sparse as sp

from grapher_core.candidates import Candidate
from grapher_core.edges.base import LinkKey, links_to_matrix
from grapher_core.edges.checks import (
    FIELD_NAME,
    FLAG,
    KIND,
    OPTIONAL_FIELD_NAME,
    WEIGHT,
    check_proximity,
)
from grapher_core.metadata import read_int, read_list
from grapher_core.utils.schema import DeclaredFields, Schema, Spec

__all__ = [
    "ANCHOR_FIELD",
    "HEADING_FIELDS",
    "ChunkLinks",
    "anchor_key",
    "heading_keys",
    "page_key",
    "page_values",
    "slugify",
    "split_link",
]

ANCHOR_FIELD = "anchors"
"""Metadata list of the anchor ids (HTML ``id``/``name``, Markdown heading slugs) in a chunk."""
HEADING_FIELDS: tuple[str, ...] = (
    "heading",
    "Header 1",
    "Header 2",
    "Header 3",
    "Header 4",
    "Header 5",
    "Header 6",
    "header_path",
)
"""Metadata fields holding a chunk's headings: the chunk contract's ``heading``, LangChain's
``MarkdownHeaderTextSplitter``/``HTMLHeaderTextSplitter`` names and LlamaIndex's
``MarkdownNodeParser`` ``header_path`` (``"/Guide/Install/"``, split on ``/``)."""

_NOT_ALNUM = re.compile(r"[\W_]+", re.UNICODE)
_SLUG_DROP = re.compile(r"[^\w\- ]+", re.UNICODE)
_TOKEN = re.compile(r"\w{2,}", re.UNICODE)
_MARKUP = re.compile(r"<[^<>]*>")


def split_link(value: str) -> tuple[str, str | None]:
    """``"page#anchor"`` -> ``("page", "anchor")``; a value without ``#`` -> ``(value, None)``.
    The anchor is percent-decoded (``#caf%C3%A9`` is the anchor ``café``)."""
    page, sep, anchor = value.partition("#")
    anchor = unquote(anchor.strip())
    return page.strip(), (anchor if sep and anchor else None)


def page_key(value: str) -> str:
    """A page name in the form links and page fields are compared in: stripped,
    percent-decoded, without a trailing slash (``docs/a%20b/`` == ``docs/a b``); a fragment is
    kept (:func:`split_link` takes it off)."""
    page = unquote(value.strip())
    if len(page) > 1 and page.endswith("/") and not page.endswith("://"):
        page = page.rstrip("/") or "/"
    return page


def page_values(value: Any) -> list[str]:
    """The page names a page field holds: a string whole (a URL may contain ``,``), a list's
    items; nothing for other shapes."""
    if isinstance(value, str):
        value = value.strip()
        return [value] if value else []
    if isinstance(value, (list, tuple)):
        return [v.strip() for v in value if isinstance(v, str) and v.strip()]
    return []


def anchor_key(anchor: str) -> str:
    """An anchor or heading in a form every slug convention agrees on: case-folded letters and
    digits only, so ``install-on-linux`` (GitHub, MkDocs, Sphinx), ``install_on_linux`` and the
    heading ``"Install on Linux"`` all meet."""
    return _NOT_ALNUM.sub("", anchor.casefold())


def slugify(heading: str) -> str:
    """The GitHub-style slug of a heading (``"Install on Linux!"`` -> ``"install-on-linux"``):
    what Markdown renderers make its anchor; compared through :func:`anchor_key` anyway."""
    return _SLUG_DROP.sub("", heading.strip().casefold()).replace(" ", "-")


def heading_keys(metadata: Mapping[str, Any], fields: Sequence[str] = HEADING_FIELDS) -> set[str]:
    """The :func:`anchor_key` of every heading in ``fields`` (a ``/``-separated path gives its
    parts too), i.e. the anchors a chunk is reachable by when it declares none."""
    keys: set[str] = set()
    for name in fields:
        value = metadata.get(name)
        headings = [value] if isinstance(value, str) else value
        if not isinstance(headings, (list, tuple)):
            continue
        for heading in headings:
            if not isinstance(heading, str):
                continue
            for part in (heading, *heading.split("/")):
                if key := anchor_key(part):
                    keys.add(key)
    return keys


@dataclass(frozen=True)
class ChunkLinks(DeclaredFields):
    """Structural proximity for links between chunked pages: one edge per link, to one chunk.

    ``metadata[field]`` lists link targets: candidate ids, ``"<page>"`` or
    ``"<page>#<anchor>"`` with the page as written in ``target_field`` (default ``"source"``;
    compared stripped, percent-decoded, without a trailing slash). Resolution, per link:

    1. a candidate id -> that candidate;
    2. a page whose value only one candidate holds -> that candidate (as ``ForeignKeys``);
    3. an anchor -> the page's chunk listing it in ``anchor_field``, else the one whose heading
       (``heading_fields``) slugifies to it; several -> the first by ``order_field``
       (``chunk_index``; a section split over chunks is entered at its start). When no pooled
       chunk of the page matches but they do list anchors, the anchored chunk is not a
       candidate: no edge. Without any anchor lists the link is read as a whole-page link;
    4. a whole-page link -> the page's chunk most similar to the linking chunk: with
       ``embed=True``, cosine of the candidates' vectors (asked for through the request, in
       every door) when the linking chunk and every chunk of the page carry one; otherwise, and
       by default, TF-IDF cosine of their texts (headings included) over the chunks involved;
       ties and no overlap go to the page's first chunk (lowest ``order_field``, then the
       retriever's order). The similarity only chooses: every edge weighs 1, like any other
       link.

    Links of a chunk to itself and whole-page links to its own page are ignored; an anchored
    link to another chunk of its own page is kept. ``symmetric=True`` (default) makes each
    edge go both ways, as ``ForeignKeys`` does. ``embed=True`` declares
    :attr:`needs_embeddings`, so every door hands the candidates' vectors to it; without it
    vectors are never read, so the choice is the same in every door. Zero-config detection
    (:mod:`grapher_core.edges.detect`) picks this for ``links`` on chunks.
    """

    FIELDS: ClassVar[Schema] = {
        "field": FIELD_NAME,
        "target_field": OPTIONAL_FIELD_NAME,
        "anchor_field": OPTIONAL_FIELD_NAME,
        "heading_fields": Spec("strs", fix="metadata keys, e.g. ['heading']"),
        "order_field": OPTIONAL_FIELD_NAME,
        "kind": KIND,
        "weight": WEIGHT,
        "symmetric": FLAG,
        "embed": FLAG,
    }
    field: str = "links"
    target_field: str | None = "source"
    anchor_field: str | None = ANCHOR_FIELD
    heading_fields: tuple[str, ...] = HEADING_FIELDS
    order_field: str | None = "chunk_index"
    kind: str = "structural"
    weight: float = 1.0
    symmetric: bool = True
    embed: bool = False

    def __post_init__(self) -> None:
        check_proximity(self)  # heading_fields: a config's list (or one name) kept as a tuple

    @property
    def needs_embeddings(self) -> bool:
        """Only when asked (``embed=True``): otherwise the texts choose, in every door."""
        return bool(self.embed)

    def adjacency(self, candidates: Sequence[Candidate]) -> sp.csr_matrix:
        resolver = _LinkResolver(self, candidates)
        edges: list[tuple[int, int]] = []
        open_links: list[tuple[int, tuple[int, ...]]] = []  # whole-page links to choose for
        for i, candidate in enumerate(candidates):
            for link in read_list(candidate.metadata.get(self.field)):
                target = resolver.resolve(i, link)
                if isinstance(target, int):
                    edges.append((i, target))
                elif target:
                    open_links.append((i, target))
        edges.extend(self._choose(candidates, open_links))
        rows = [i for i, _ in edges]
        cols = [j for _, j in edges]
        return links_to_matrix(rows, cols, len(candidates), symmetric=self.symmetric)

    # -- whole-page links ------------------------------------------------------------------

    def _choose(
        self, candidates: Sequence[Candidate], links: Sequence[tuple[int, tuple[int, ...]]]
    ) -> list[tuple[int, int]]:
        """For each (linking chunk, chunks of the linked page): the most similar chunk."""
        if not links:
            return []
        involved = sorted({p for i, members in links for p in (i, *members)})
        # Vectors only when asked for (embed=True): the same proximity never chooses by
        # vectors in one door and by text in another, whichever vectors a door happens to hold.
        vectors = _unit_vectors(candidates, involved) if self.embed else {}
        sims: list[np.ndarray] = []
        lexical: list[int] = []  # the links whose chunks lack vectors: by their texts
        for number, (i, members) in enumerate(links):
            if i in vectors and all(m in vectors for m in members):
                sims.append(np.array([float(vectors[i] @ vectors[m]) for m in members]))
            else:
                sims.append(np.zeros(len(members)))  # filled below
                lexical.append(number)
        if lexical:
            texts = sorted({p for n in lexical for p in (links[n][0], *links[n][1])})
            row = {p: r for r, p in enumerate(texts)}
            matrix = _tfidf([self._words(candidates[p]) for p in texts])
            left = [row[links[n][0]] for n in lexical for _m in links[n][1]]
            right = [row[m] for n in lexical for m in links[n][1]]
            products = np.asarray(matrix[left].multiply(matrix[right]).sum(axis=1)).ravel()
            ends = np.cumsum([len(links[n][1]) for n in lexical])
            for n, part in zip(lexical, np.split(products, ends[:-1]), strict=True):
                sims[n] = part
        out: list[tuple[int, int]] = []
        for (i, members), similarity in zip(links, sims, strict=True):
            rounded = np.round(similarity, 12)
            best = min(
                range(len(members)),
                key=lambda k: (-rounded[k], _order(candidates, members[k], self.order_field)),
            )
            out.append((i, members[best]))
        return out

    def _words(self, candidate: Candidate) -> list[str]:
        """Its words and its headings', markup left out (chunks of raw HTML share tags)."""
        headings = [
            h for name in self.heading_fields for h in page_values(candidate.metadata.get(name))
        ]
        text = _MARKUP.sub(" ", candidate.text)
        return _TOKEN.findall(" ".join([text, *headings]).casefold())

    # -- expansion support (additive): where links point, and how a chunk is found ---------

    def link_keys(self, candidate: Candidate) -> list[LinkKey]:
        """Each link as an id key and, on ``target_field``, as its page (with the anchor)."""
        keys: list[LinkKey] = []
        for link in read_list(candidate.metadata.get(self.field)):
            keys.append(((None, link),))
            if self.target_field is None:
                continue
            page, anchor = split_link(link)
            if anchor is not None and self.anchor_field is not None:
                keys.append(((self.target_field, page), (self.anchor_field, anchor)))
            elif anchor is None:
                keys.append(((self.target_field, page),))
        return keys

    def own_keys(self, candidate: Candidate) -> list[LinkKey]:
        """Its id, its page (any chunk answers a whole-page link) and its anchors there."""
        keys: list[LinkKey] = [((None, candidate.id),)]
        if self.target_field is None:
            return keys
        for page in page_values(candidate.metadata.get(self.target_field)):
            keys.append(((self.target_field, page),))
            if self.anchor_field is not None:
                keys.extend(
                    ((self.target_field, page), (self.anchor_field, a))
                    for a in read_list(candidate.metadata.get(self.anchor_field))
                )
        return keys


class _LinkResolver:
    """One call's link resolution: a link of chunk ``i`` -> one target position, the chunks
    of a page still to choose among (a tuple), or ``None`` (no edge)."""

    def __init__(self, proximity: ChunkLinks, candidates: Sequence[Candidate]) -> None:
        self.ids = {c.id: i for i, c in enumerate(candidates)}
        self.pages = _page_members(candidates, proximity.target_field)
        self.anchors = _Anchors(proximity, candidates)

    def resolve(self, i: int, link: str) -> int | tuple[int, ...] | None:
        """A candidate id first, then the page as written, then ``page#anchor``."""
        j = self.ids.get(link)
        if j is not None:
            return j
        anchor: str | None = None
        members = self.pages.get(page_key(link))
        if members is None:
            page, anchor = split_link(link)
            members = self.pages.get(page_key(page)) if anchor is not None else None
        if not members:
            return None
        if anchor is None:
            return _whole_page_target(i, members)
        return self._anchored_target(i, members, anchor)

    def _anchored_target(
        self, i: int, members: list[int], anchor: str
    ) -> int | tuple[int, ...] | None:
        """The chunk holding the anchor; a page that lists no anchors at all is read as a
        whole-page link; a link to the chunk itself is none."""
        target = self.anchors.holder(members, anchor)
        if target is not None:
            return None if target == i else target
        if i not in members and not any(self.anchors.listed(m) for m in members):
            return tuple(members)
        return None


def _page_members(candidates: Sequence[Candidate], field: str | None) -> dict[str, list[int]]:
    """Each page key (the page ``field``) -> the positions of the chunks on that page."""
    pages: dict[str, list[int]] = {}
    if field is None:
        return pages
    for i, candidate in enumerate(candidates):
        for key in {page_key(v) for v in page_values(candidate.metadata.get(field))}:
            if key:
                pages.setdefault(key, []).append(i)
    return pages


def _whole_page_target(i: int, members: list[int]) -> int | tuple[int, ...] | None:
    """A page of one chunk is that chunk; a link to its own page is navigation, no edge."""
    if i in members:
        return None
    if len(members) == 1:
        return members[0]
    return tuple(members)


class _Anchors:
    """One call's anchor lookups, each candidate's anchors and heading keys read once."""

    def __init__(self, proximity: ChunkLinks, candidates: Sequence[Candidate]) -> None:
        self.proximity = proximity
        self.candidates = candidates
        self._listed: dict[int, tuple[list[str], set[str]]] = {}
        self._headings: dict[int, set[str]] = {}

    def listed(self, position: int) -> list[str]:
        """The anchors the candidate lists (``anchor_field``)."""
        return self._read(position)[0]

    def _read(self, position: int) -> tuple[list[str], set[str]]:
        found = self._listed.get(position)
        if found is None:
            field = self.proximity.anchor_field
            names = read_list(self.candidates[position].metadata.get(field)) if field else []
            found = self._listed[position] = (names, {anchor_key(a) for a in names})
        return found

    def headings(self, position: int) -> set[str]:
        found = self._headings.get(position)
        if found is None:
            metadata = self.candidates[position].metadata
            found = self._headings[position] = heading_keys(metadata, self.proximity.heading_fields)
        return found

    def holder(self, members: Sequence[int], anchor: str) -> int | None:
        """The chunk among ``members`` holding ``anchor``: listed as is, then by key, then by a
        heading; the first by order when several do."""
        key = anchor_key(anchor)
        hits = [m for m in members if anchor in self._read(m)[0]]
        if not hits and key:
            hits = [m for m in members if key in self._read(m)[1]]
        if not hits and key:
            hits = [m for m in members if key in self.headings(m)]
        if not hits:
            return None
        field = self.proximity.order_field
        return min(hits, key=lambda m: _order(self.candidates, m, field))


def _order(candidates: Sequence[Candidate], position: int, field: str | None) -> tuple[int, int]:
    """Document order first (``field``: ``chunk_index``), the retriever's order for ties and
    gaps."""
    index = read_int(candidates[position].metadata.get(field)) if field is not None else None
    return (index if index is not None else sys.maxsize, position)


def _unit_vectors(candidates: Sequence[Candidate], positions: Sequence[int]) -> dict[int, Any]:
    """Unit vectors of the candidates that carry a finite, non-zero one of the common size."""
    out: dict[int, Any] = {}
    size: int | None = None
    for p in positions:
        embedding = candidates[p].embedding
        if embedding is None:
            continue
        vector = np.asarray(embedding, dtype=np.float64).ravel()
        norm = float(np.linalg.norm(vector)) if vector.size else 0.0
        if not math.isfinite(norm) or norm == 0.0:
            continue  # one odd vector falls back to text, it does not break the ranking
        if size is None:
            size = vector.size
        if vector.size == size:
            out[p] = vector / norm
    return out


def _tfidf(documents: Sequence[list[str]]) -> sp.csr_matrix:
    """Unit TF-IDF rows (log tf, smooth idf over these documents), one per document."""
    vocabulary: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    counts: list[int] = []
    for r, tokens in enumerate(documents):
        for word, count in Counter(tokens).items():
            rows.append(r)
            cols.append(vocabulary.setdefault(word, len(vocabulary)))
            counts.append(count)
    shape = (len(documents), max(len(vocabulary), 1))
    column = np.asarray(cols, dtype=np.int64)
    frequency = np.bincount(column, minlength=shape[1])
    idf = np.log((1 + shape[0]) / (1 + frequency)) + 1.0
    data = (1.0 + np.log(np.asarray(counts, dtype=np.float64))) * idf[column]
    matrix = sp.csr_matrix((data, (np.asarray(rows, dtype=np.int64), column)), shape=shape)
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    return sp.csr_matrix(sp.diags(1.0 / np.where(norms == 0, 1.0, norms)) @ matrix)
