"""Hyperlinks as structural edges: extract link targets from HTML or Markdown, resolve them to ids.

Pure functions of one object, so enrichment stays one pass over the corpus:

>>> extract_links('See <a href="/wiki/Paris">Paris</a> and [Rome](rome.md).')
['/wiki/Paris', 'rome.md']
>>> index = build_target_index([("https://x.org/wiki/Paris", "paris")])
>>> resolve_links(["/wiki/Paris#History"], index, base="https://x.org/wiki/Rome")
['paris']

The resolved ids go into a metadata list field (``"links"`` by convention) that
:class:`grapher_core.edges.keys.ForeignKeys` reads: ``ForeignKeys(field="links")``.

Chunked pages (a manual split into ~20 chunks per page, every chunk keeping its page's URL)
are resolved by :class:`LinkIndex`: several chunks sharing a page are one page, not a clash;
``page#anchor`` goes to the id of the chunk holding the anchor (its ``anchors`` metadata, an
HTML ``id``/``name`` or a Markdown heading in its text, or a heading in its metadata), and a
whole-page link to the page's own value (``"docs/install.html"``), whose one chunk
:class:`grapher_core.edges.links.ChunkLinks` picks at rank time:

>>> index = LinkIndex([LinkTarget("a#0", "a.html", anchors=("intro",)),
...                    LinkTarget("a#1", "a.html", anchors=("usage",))])
>>> index.resolve(["a.html#usage", "a.html"])
['a#1', 'a.html']

What is *not* a link to another object, and so never returned by :func:`extract_links`: empty
targets, same-page anchors (``#section``) and non-navigational schemes (``mailto:``,
``javascript:``, ``tel:``, ``data:``). Targets are returned HTML-unescaped, without surrounding
whitespace or angle brackets, in order of first appearance, without duplicates.
"""

from __future__ import annotations

import html
import itertools
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any, Literal
from urllib.parse import unquote, urldefrag, urljoin

from grapher_core.edges.links import (
    ANCHOR_FIELD,
    HEADING_FIELDS,
    anchor_key,
    heading_keys,
    page_values,
    slugify,
)
from grapher_core.errors import InputError, InputTypeError
from grapher_core.metadata import read_int, read_list

__all__ = [
    "LINK_FORMATS",
    "URL_KEYS",
    "LinkFormat",
    "LinkIndex",
    "LinkTarget",
    "ObjectLinks",
    "build_target_index",
    "extract_anchors",
    "extract_links",
    "link_target",
    "normalise_target",
    "opening_anchors",
    "resolve_links",
    "resolve_object_links",
    "section_anchors",
]

LinkFormat = Literal["auto", "html", "markdown"]
LINK_FORMATS: tuple[str, ...] = ("auto", "html", "markdown")

_IGNORED_SCHEMES = ("mailto:", "javascript:", "tel:", "data:")

# Markdown inline link or image: [text](target "title") / ![alt](<target with spaces>)
_MD_INLINE = re.compile(
    r"!?\[(?:[^\[\]\\]|\\.|\[[^\[\]]*\])*\]"  # [text], one level of nested brackets allowed
    r"\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"  # target (balanced parens once)
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)"  # optional title
)
# Reference definition: [label]: target "title"
_MD_DEFINITION = re.compile(r"^[ ]{0,3}\[([^\]\n]+)\]:[ \t]*(<[^<>\n]*>|\S+)", re.MULTILINE)
# Reference use: [text][label], [label][] or the shortcut [label]
_MD_REFERENCE = re.compile(r"(?<![\]\\])\[([^\[\]\n]+)\](?:\[([^\[\]\n]*)\])?(?![(:\[])")
# Autolink: <https://example.org/page>
_MD_AUTOLINK = re.compile(r"<((?:https?|ftp)://[^<>\s]+)>")
# Wiki link: [[Target]] or [[Target|label]]
_WIKI_LINK = re.compile(r"\[\[([^\[\]|\n]+)(?:\|[^\[\]\n]*)?\]\]")
_CODE_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_HTML_HINT = re.compile(r"<\s*(a|area|link)\b[^>]*\bhref\s*=", re.IGNORECASE)


def extract_links(text: str, fmt: LinkFormat | str = "auto") -> list[str]:
    """Return the link targets of ``text`` (HTML ``<a|area|link href>`` and/or Markdown links).

    ``fmt="auto"`` reads both syntaxes (a Markdown file may embed HTML anchors); ``"html"`` and
    ``"markdown"`` restrict to one. Markdown covers inline links and images, reference links with
    their definitions, autolinks and ``[[wiki links]]``; code spans and fenced code are skipped.
    """
    if not isinstance(text, str):
        raise InputTypeError(f"extract_links needs a str, got {type(text).__name__}")
    if fmt not in LINK_FORMATS:
        raise InputError(f"fmt must be one of {LINK_FORMATS}, got {fmt!r}")
    found: list[tuple[int, str]] = []
    if fmt in ("auto", "html") and (fmt == "html" or _HTML_HINT.search(text)):
        found.extend(_html_links(text))
    if fmt in ("auto", "markdown"):
        found.extend(_markdown_links(text))
    found.sort(key=lambda item: item[0])  # stable: order of first appearance in the text
    return _clean(target for _position, target in found)


def normalise_target(target: str, base: str | None = None) -> str:
    """Canonical form of a link target for matching: absolute (against ``base``), no fragment.

    Percent-escapes are decoded and a trailing slash is dropped (``/wiki/Paris/`` and
    ``/wiki/Paris`` are the same page); case is kept, since paths are case-sensitive.
    """
    target = html.unescape(target.strip())
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1].strip()
    if base:
        target = urljoin(base, target)
    target, _fragment = urldefrag(target)
    target = unquote(target)
    if len(target) > 1 and target.endswith("/") and not target.endswith("://"):
        target = target.rstrip("/") or "/"
    return target


def build_target_index(
    pairs: Iterable[tuple[str, str] | tuple[str, str, str]] | Mapping[str, str],
    *,
    base: str | None = None,
) -> dict[str, str]:
    """Map normalised link targets to object ids, from ``(target, id)`` pairs or a mapping.

    Give every name an object is reachable by (its URL, its file path, its title). Chunks of
    one page share its URL: give ``(target, id, page)`` triples and a target claimed by several
    chunks of the same ``page`` maps to ``page`` (the chunk is chosen at rank time by
    :class:`~grapher_core.edges.links.ChunkLinks`). A target claimed by two different ids
    without a shared page is ambiguous and raises ``ValueError`` naming it and what to pass.
    """
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    index: dict[str, str] = {}
    page_of: dict[str, str | None] = {}
    clashes: dict[str, set[str]] = {}
    for item in items:
        target, object_id, page = _entry(item)
        key = normalise_target(target, base)
        if not key:
            continue
        previous = index.setdefault(key, object_id)
        if key not in page_of:
            page_of[key] = page
            continue
        if previous == object_id:
            continue
        if page is not None and page_of[key] == page:
            index[key] = page  # several chunks of one page: the page, chunk chosen at rank time
        else:
            clashes.setdefault(key, {previous}).add(object_id)
    if clashes:
        shown = "; ".join(f"{key!r} -> {sorted(ids)}" for key, ids in list(clashes.items())[:5])
        raise InputError(
            f"ambiguous link targets (one target, several ids): {shown}. If these ids are "
            "chunks of one page, give (target, id, page) triples with the same page (e.g. "
            "(url, chunk_id, url)), or use LinkIndex / the wrappers' LinkTransformer and "
            "GraphERLinkExtractor without id_by_target, which group chunks by page; if they "
            "are different objects, keep only the pair naming the object the target means"
        )
    return index


def _entry(item: Any) -> tuple[str, str, str | None]:
    """One ``(target, id)`` or ``(target, id, page)`` entry, checked."""
    if isinstance(item, tuple) and len(item) in (2, 3):
        target, object_id = item[0], item[1]
        page = item[2] if len(item) == 3 else None
        if (
            isinstance(target, str)
            and isinstance(object_id, str)
            and object_id
            and (page is None or (isinstance(page, str) and page.strip()))
        ):
            return target, object_id, None if page is None else page.strip()
    raise InputTypeError(
        "target index entries must be (str, non-empty str) pairs or (target, id, page) "
        f"triples, got {item!r}"
    )


def resolve_links(
    targets: Iterable[str],
    id_by_target: Mapping[str, str],
    *,
    base: str | None = None,
    self_id: str | None = None,
) -> list[str]:
    """The distinct ids that ``targets`` point to, in order; targets that match no id are dropped.

    A target is looked up as given, then in :func:`normalise_target` form (relative to
    ``base``, the linking page's own URL, when given). ``id_by_target`` is best built with
    :func:`build_target_index` so its keys are normalised the same way. Links to ``self_id``
    (a page linking to itself) are dropped.
    """
    if isinstance(targets, str):
        raise InputTypeError("resolve_links needs an iterable of targets, not a single str")
    out: list[str] = []
    seen: set[str] = set()
    for target in targets:
        if not isinstance(target, str):
            raise InputTypeError(f"link targets must be str, got {type(target).__name__}")
        object_id = id_by_target.get(target)
        if object_id is None:
            object_id = id_by_target.get(normalise_target(target, base))
        if object_id is None or object_id == self_id or object_id in seen:
            continue
        seen.add(object_id)
        out.append(object_id)
    return out


URL_KEYS: tuple[str, ...] = ("source", "url", "file_path")
"""Metadata keys naming an object's own page, the first present wins: LangChain loaders write
``source``, web pages ``url``, LlamaIndex's ``SimpleDirectoryReader`` ``file_path``. Both
wrappers' link writers default to these."""


@dataclass(frozen=True)
class LinkTarget:
    """One object as links reach it: its ``id`` (``None`` when it has none yet), its ``page``
    (URL or path, shared by the chunks of one page), other names it answers to (``aliases``),
    the anchors it holds, its headings (their slugs stand in for missing anchors), its
    ``order`` in the page (``chunk_index``) and ``opens``: those of its anchors that only open
    a section at its very end (:func:`opening_anchors`), which :class:`LinkIndex` gives to the
    page's next chunk. Build it with :func:`link_target`."""

    id: str | None
    page: str | None = None
    aliases: tuple[str, ...] = ()
    anchors: tuple[str, ...] = ()
    headings: tuple[str, ...] = ()
    order: int | None = None
    opens: tuple[str, ...] = ()


def link_target(
    object_id: str | None,
    metadata: Mapping[str, Any],
    text: str = "",
    *,
    url_keys: Sequence[str] = URL_KEYS,
    anchor_field: str | None = ANCHOR_FIELD,
    heading_fields: Sequence[str] = HEADING_FIELDS,
    order_field: str | None = "chunk_index",
    fmt: LinkFormat | str = "auto",
) -> LinkTarget:
    """The :class:`LinkTarget` of an object (a document, a node, a chunk) from its metadata and
    text: the page is the first of ``url_keys`` present, the other ones are aliases; anchors
    are ``metadata[anchor_field]`` plus those in ``text`` (:func:`extract_anchors`)."""
    names = [v for key in url_keys for v in page_values(metadata.get(key))]
    anchors = read_list(metadata.get(anchor_field)) if anchor_field else []
    opens = opening_anchors(text, fmt) if text else []
    if text:
        anchors += extract_anchors(text, fmt)
    headings = [
        h
        for name in heading_fields
        for h in (page_values(metadata.get(name)) if name in metadata else [])
    ]
    return LinkTarget(
        id=object_id or None,
        page=names[0] if names else None,
        aliases=tuple(dict.fromkeys(names[1:])),
        anchors=tuple(dict.fromkeys(anchors)),
        headings=tuple(headings),
        order=read_int(metadata.get(order_field)) if order_field else None,
        opens=tuple(opens),
    )


class LinkIndex:
    """Where links land in a corpus of objects that may be chunks of pages.

    Objects are grouped by page (normalised, relative to ``base``): a page held by one object
    resolves to its id, as :func:`build_target_index` does; a page held by several chunks is
    *not* ambiguous. :meth:`resolve` sends ``page#anchor`` to the id of the chunk holding the
    anchor (anchors first, heading slugs next, the first chunk when several match) and a
    whole-page link to the page value itself (as the chunks' metadata writes it), whose chunk
    :class:`~grapher_core.edges.links.ChunkLinks` picks at rank time; an anchor no chunk holds
    stays ``page#anchor`` for rank time too. A name (a page or an alias) claimed by objects of
    different pages is ambiguous: ``InputError`` naming the objects and what to pass.
    """

    def __init__(self, targets: Iterable[LinkTarget], *, base: str | None = None) -> None:
        items = list(targets)
        self._base = base
        self._groups: dict[str, list[tuple[int, LinkTarget]]] = {}
        self._page: dict[str, str] = {}  # group -> the page value written for it
        self._by_id: dict[str, str] = {}  # object id -> group
        self._by_name: dict[str, str] = {}  # normalised name -> group
        clashes: dict[str, dict[str, None]] = {}
        for position, target in enumerate(items):
            if not isinstance(target, LinkTarget):
                raise InputTypeError(f"LinkIndex needs LinkTargets, got {type(target).__name__}")
            group = self.group_of(target, base)
            if group is None:
                continue
            self._groups.setdefault(group, []).append((position, target))
            if target.page:
                self._page.setdefault(group, target.page)
            if target.id:
                self._by_id.setdefault(target.id, group)
            names = [target.page, *target.aliases]
            if target.id and "#" not in target.id:  # a chunk id "page#3" is no page name
                names.append(target.id)
            for name in names:
                key = normalise_target(name, base) if name else ""
                if not key:
                    continue
                previous = self._by_name.setdefault(key, group)
                if previous != group:
                    clashes.setdefault(key, {previous: None})[group] = None
        if clashes:
            raise InputError(self._ambiguous(clashes))
        self._anchors = section_anchors(items, base)

    @property
    def anchors(self) -> list[tuple[str, ...]]:
        """Each target's anchors as links land on them (:func:`section_anchors`), in the order
        given: what an extractor writes back for rank time."""
        return list(self._anchors)

    @staticmethod
    def group_of(target: LinkTarget, base: str | None = None) -> str | None:
        """The page a target belongs to (normalised), else its own id; ``None``: neither."""
        if target.page:
            key = normalise_target(target.page, base)
            if key:
                return f"page:{key}"
        return f"id:{target.id}" if target.id else None

    def resolve(
        self,
        links: Iterable[str],
        *,
        base: str | None = None,
        source: LinkTarget | None = None,
        keep_outside: bool = False,
    ) -> list[str]:
        """The distinct values ``links`` resolve to, in order: object ids, chunked pages'
        values (whole-page links) or ``page#anchor`` (anchors no chunk was seen holding).
        Relative links resolve against ``base``, the linking object's URL; links from
        ``source`` to itself, and its whole-page links to its own page, are dropped; targets
        outside the index are dropped, or with ``keep_outside`` kept as their normalised URL
        (a page ingested in a later batch still matches it by its page field)."""
        if isinstance(links, str):
            raise InputTypeError("LinkIndex.resolve needs an iterable of links, not a single str")
        own = self.group_of(source, self._base) if source is not None else None
        out: dict[str, None] = {}
        for link in links:
            if not isinstance(link, str):
                raise InputTypeError(f"link targets must be str, got {type(link).__name__}")
            value = self._resolve_one(link, base, own, source)
            if value is None and keep_outside and self._outside(link, base):
                value = normalise_target(link, base) or None
            if value is not None:
                out[value] = None
        return list(out)

    def _outside(self, link: str, base: str | None) -> bool:
        """Whether a link names no object of the index (by id or by page)."""
        return link.strip() not in self._by_id and (
            normalise_target(link, base) not in self._by_name
        )

    def _resolve_one(
        self, link: str, base: str | None, own: str | None, source: LinkTarget | None
    ) -> str | None:
        if link.strip() in self._by_id:  # an object id, as given
            return None if source is not None and source.id == link.strip() else link.strip()
        joined = urljoin(base, link.strip()) if base else link.strip()
        fragment = unquote(urldefrag(html.unescape(joined))[1]).strip()
        group = self._by_name.get(normalise_target(link, base))
        if group is None:
            return None
        members = self._groups[group]
        page = self._page.get(group)
        if len(members) == 1 and members[0][1].id:  # one object: its id, as before
            only = members[0][1]
            if group == own or (source is not None and only.id == source.id):
                return None
            return only.id
        if not fragment:
            return None if group == own or page is None else page
        chunk = _holder(members, fragment, self._anchors)
        if _same(chunk, source):
            return None  # an anchor of the linking chunk itself
        if chunk is not None and chunk.id:
            return chunk.id
        if page is None or (chunk is None and group == own):
            return None  # an anchor of its own page that no chunk holds: nowhere to land
        return f"{page}#{fragment}"  # ChunkLinks finds the chunk at rank time

    def _ambiguous(self, clashes: Mapping[str, Mapping[str, None]]) -> str:
        parts = []
        for key, groups in list(clashes.items())[:3]:
            claims = []
            for group in groups:
                ids = [t.id for _p, t in self._groups[group] if t.id]
                shown = ", ".join(map(repr, ids[:3])) + (" ..." if len(ids) > 3 else "")
                page = self._page.get(group)
                claims.append(f"page {page!r} (ids {shown})" if page else f"id {shown}")
            parts.append(f"{key!r} is claimed by {' and by '.join(claims)}")
        return (
            "ambiguous link targets: "
            + "; ".join(parts)
            + ". Chunks of one page must share their page value (the first of url_keys "
            "present in their metadata); different pages must not share a URL in any of "
            "url_keys: pass url_keys=(<the one metadata key whose values name each page "
            "uniquely>,), e.g. url_keys=('source',), or pass id_by_target={target: id} "
            "naming the object each target means"
        )


@dataclass(frozen=True)
class ObjectLinks:
    """What a link writer stores for one object: the ids (or page values) its links reach, and
    the anchors it holds (written where its metadata has none, for rank time)."""

    ids: tuple[str, ...]
    anchors: tuple[str, ...]


def resolve_object_links(
    texts: Sequence[str],
    targets: Sequence[LinkTarget],
    *,
    id_by_target: Mapping[str, str] | None = None,
    fmt: LinkFormat | str = "auto",
    keep_outside: bool = False,
) -> list[ObjectLinks]:
    """Each object's links, read from its text and resolved against its own page (the
    target's ``page``): through ``id_by_target`` when given (normalised by
    :func:`build_target_index`; unknown targets dropped), else through the objects given
    (:class:`LinkIndex`; ``keep_outside``: links to pages outside them keep their normalised
    URL). Links to the object itself or to its own page are dropped either way. The one
    resolution both wrappers' link writers run, so the same chunks get the same links."""
    if len(texts) != len(targets):
        raise InputError(f"{len(texts)} texts for {len(targets)} link targets")
    resolve: Callable[[list[str], LinkTarget], list[str]]
    if id_by_target is None:
        pages = LinkIndex(targets)
        anchors = pages.anchors

        def resolve(links: list[str], target: LinkTarget) -> list[str]:
            return pages.resolve(links, base=target.page, source=target, keep_outside=keep_outside)

    else:
        index = build_target_index(id_by_target)
        anchors = section_anchors(targets)

        def resolve(links: list[str], target: LinkTarget) -> list[str]:
            own_page = index.get(normalise_target(target.page)) if target.page else None
            ids = resolve_links(links, index, base=target.page, self_id=target.id)
            return [i for i in ids if i != own_page]

    return [
        ObjectLinks(tuple(resolve(extract_links(text, fmt), target)), held)
        for text, target, held in zip(texts, targets, anchors, strict=True)
    ]


def section_anchors(
    targets: Sequence[LinkTarget], base: str | None = None
) -> list[tuple[str, ...]]:
    """Each target's anchors, in the order given, with the anchors that open a section at a
    chunk's very end (:attr:`LinkTarget.opens`) moved to the next chunk of its page -- when
    that chunk is the next one (consecutive ``order``, or no order known)."""
    anchors = [target.anchors for target in targets]
    pages: dict[str, list[tuple[int, LinkTarget]]] = {}
    for position, target in enumerate(targets):
        group = LinkIndex.group_of(target, base)
        if group is not None:
            pages.setdefault(group, []).append((position, target))
    for members in pages.values():
        ordered = sorted(members, key=_page_order)
        for (position, target), (after, following) in itertools.pairwise(ordered):
            if not target.opens or (
                target.order is not None
                and following.order is not None
                and following.order != target.order + 1
            ):
                continue
            moved = set(target.opens)
            anchors[position] = tuple(a for a in anchors[position] if a not in moved)
            anchors[after] = tuple(dict.fromkeys((*target.opens, *anchors[after])))
    return anchors


def _same(a: LinkTarget | None, b: LinkTarget | None) -> bool:
    """Whether two targets are one object (the same, or the same id)."""
    if a is None or b is None:
        return False
    return a is b or (a.id is not None and a.id == b.id)


def _holder(
    members: Sequence[tuple[int, LinkTarget]], anchor: str, anchors: Sequence[tuple[str, ...]]
) -> LinkTarget | None:
    """The chunk holding ``anchor`` (``anchors``: each position's): listed exactly, then by
    key, then by heading slug; the first in page order when several do."""
    key = anchor_key(anchor)
    hits = [(p, t) for p, t in members if anchor in anchors[p]]
    if not hits and key:
        hits = [(p, t) for p, t in members if key in {anchor_key(a) for a in anchors[p]}]
    if not hits and key:
        hits = [(p, t) for p, t in members if key in heading_keys({"h": t.headings}, ("h",))]
    if not hits:
        return None
    return min(hits, key=_page_order)[1]


def _page_order(item: tuple[int, LinkTarget]) -> tuple[int, int]:
    """Order in the page (``chunk_index``) first, the order given for ties and gaps."""
    position, target = item
    return (target.order if target.order is not None else sys.maxsize, position)


_HTML_ID_HINT = re.compile(r"<\s*[a-zA-Z][^>]*\b(?:id|name)\s*=", re.IGNORECASE)
_MD_HEADING = re.compile(r"^[ ]{0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_MD_HEADING_ID = re.compile(r"\{[^{}]*#([\w\-:.]+)[^{}]*\}\s*$")


def extract_anchors(text: str, fmt: LinkFormat | str = "auto") -> list[str]:
    """The anchors ``text`` defines, in order, without duplicates: HTML ``id`` attributes (and
    ``<a name>``), Markdown ATX headings as their explicit ``{#id}`` or their slug
    (:func:`~grapher_core.edges.links.slugify`); code is skipped. What a ``page#anchor`` link
    into this text can land on."""
    return list(dict.fromkeys(anchor for _position, anchor in _anchor_positions(text, fmt)))


def opening_anchors(text: str, fmt: LinkFormat | str = "auto") -> list[str]:
    """The anchors of ``text`` that only open a section at its very end: the anchored element
    (a heading, an ``<a name>``) or Markdown heading line is the last thing with words in it.
    A splitter left it at the bottom of a chunk (LangChain's HTML splitter cuts before ``<p>``,
    so ``<h2 id="linux">Linux</h2>`` ends the previous chunk); its section starts in the next."""
    out: dict[str, None] = {}
    for position, anchor in _anchor_positions(text, fmt):
        rest = text[position:]
        start = _START_TAG.match(rest)
        if start is not None:  # HTML: what follows the anchored element
            tag = start.group(1).lower()
            close = re.search(rf"</\s*{re.escape(tag)}\s*>", rest, re.IGNORECASE)
            if close is not None:
                after = rest[close.end() :]
            else:  # cut inside the element: a heading's title, else its whole content
                after = "" if tag in _TITLE_TAGS else rest[start.end() :]
        else:  # a Markdown heading: what follows its line
            line_end = rest.find("\n")
            after = "" if line_end < 0 else rest[line_end:]
        if not _WORD.search(_TAG.sub(" ", after)):
            out[anchor] = None
    return list(out)


_TITLE_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6", "dt", "summary", "caption"})
_START_TAG = re.compile(r"<\s*([a-zA-Z][\w-]*)\b[^>]*>")
_TAG = re.compile(r"<[^<>]*>")
_WORD = re.compile(r"\w")


def _anchor_positions(text: str, fmt: LinkFormat | str) -> list[tuple[int, str]]:
    if not isinstance(text, str):
        raise InputTypeError(f"extract_anchors needs a str, got {type(text).__name__}")
    if fmt not in LINK_FORMATS:
        raise InputError(f"fmt must be one of {LINK_FORMATS}, got {fmt!r}")
    found: list[tuple[int, str]] = []
    if fmt in ("auto", "html") and (fmt == "html" or _HTML_ID_HINT.search(text)):
        found.extend(_html_scan(text).ids)
    if fmt in ("auto", "markdown"):
        plain = _CODE_SPAN.sub(_blank, _CODE_FENCE.sub(_blank, text))
        for match in _MD_HEADING.finditer(plain):
            heading = match.group(2)
            explicit = _MD_HEADING_ID.search(heading)
            if explicit:
                found.append((match.start(), explicit.group(1)))
            elif "<" not in heading and (slug := slugify(heading)):
                found.append((match.start(), slug))
    found.sort(key=lambda item: item[0])
    return [(position, anchor.strip()) for position, anchor in found if anchor.strip()]


class _AnchorParser(HTMLParser):
    """Collects href values of <a>, <area> and <link> tags, and the anchors the text defines
    (``id`` of any tag, ``name`` of <a>); the parser unescapes entities."""

    def __init__(self, line_starts: list[int]) -> None:
        super().__init__(convert_charrefs=True)
        self.line_starts = line_starts
        self.hrefs: list[tuple[int, str]] = []
        self.ids: list[tuple[int, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        line, column = self.getpos()
        position = self.line_starts[line - 1] + column
        for name, value in attrs:
            if value is None:
                continue
            if name == "href" and tag in ("a", "area", "link"):
                self.hrefs.append((position, value))
            elif name == "id" or (name == "name" and tag == "a"):
                self.ids.append((position, value))

    handle_startendtag = handle_starttag


def _html_scan(text: str) -> _AnchorParser:
    line_starts = [0] + [match.end() for match in re.finditer("\n", text)]
    parser = _AnchorParser(line_starts)
    parser.feed(text)
    parser.close()
    return parser


def _html_links(text: str) -> list[tuple[int, str]]:
    return _html_scan(text).hrefs


def _markdown_links(text: str) -> list[tuple[int, str]]:
    text = _CODE_SPAN.sub(_blank, _CODE_FENCE.sub(_blank, text))
    definitions: dict[str, str] = {}
    for match in _MD_DEFINITION.finditer(text):
        definitions.setdefault(_label(match.group(1)), match.group(2))
    without_definitions = _MD_DEFINITION.sub(_blank, text)
    positioned: list[tuple[int, str]] = []
    for match in _MD_INLINE.finditer(without_definitions):
        positioned.append((match.start(), match.group(1)))
    masked = _MD_INLINE.sub(_blank, without_definitions)
    for match in _WIKI_LINK.finditer(masked):
        positioned.append((match.start(), match.group(1).strip()))
    masked = _WIKI_LINK.sub(_blank, masked)
    for match in _MD_AUTOLINK.finditer(masked):
        positioned.append((match.start(), match.group(1)))
    if definitions:
        for match in _MD_REFERENCE.finditer(masked):
            label = match.group(2) or match.group(1)
            target = definitions.get(_label(label))
            if target is not None:
                positioned.append((match.start(), target))
    return positioned


def _blank(match: re.Match[str]) -> str:
    """Replace a match by spaces, so later patterns skip it and offsets stay aligned."""
    return " " * len(match.group(0))


def _label(label: str) -> str:
    return " ".join(label.split()).casefold()


def _clean(targets: Iterable[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for raw in targets:
        target = html.unescape(raw.strip())
        if target.startswith("<") and target.endswith(">"):
            target = target[1:-1].strip()
        if not target or target.startswith("#"):
            continue
        if target.casefold().startswith(_IGNORED_SCHEMES):
            continue
        if target not in seen:
            seen.add(target)
            out.append(target)
    return out
