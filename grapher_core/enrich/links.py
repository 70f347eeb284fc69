"""Hyperlinks as structural edges: extract link targets from HTML or Markdown, resolve them to ids.

Pure functions of one object, so enrichment stays one pass over the corpus:

>>> extract_links('See <a href="/wiki/Paris">Paris</a> and [Rome](rome.md).')
['/wiki/Paris', 'rome.md']
>>> index = build_target_index([("https://x.org/wiki/Paris", "paris")])
>>> resolve_links(["/wiki/Paris#History"], index, base="https://x.org/wiki/Rome")
['paris']

The resolved ids go into a metadata list field (``"links"`` by convention) that
:class:`grapher_core.edges.keys.ForeignKeys` reads: ``ForeignKeys(field="links")``.

What is *not* a link to another object, and so never returned by :func:`extract_links`: empty
targets, same-page anchors (``#section``) and non-navigational schemes (``mailto:``,
``javascript:``, ``tel:``, ``data:``). Targets are returned HTML-unescaped, without surrounding
whitespace or angle brackets, in order of first appearance, without duplicates.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from html.parser import HTMLParser
from typing import Literal
from urllib.parse import unquote, urldefrag, urljoin

from grapher_core.errors import InputError, InputTypeError

__all__ = [
    "LINK_FORMATS",
    "LinkFormat",
    "build_target_index",
    "extract_links",
    "normalise_target",
    "resolve_links",
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
    pairs: Iterable[tuple[str, str]] | Mapping[str, str], *, base: str | None = None
) -> dict[str, str]:
    """Map normalised link targets to object ids, from ``(target, id)`` pairs or a mapping.

    Give every name an object is reachable by (its URL, its file path, its title). A target
    claimed by two different ids is ambiguous and raises ``ValueError`` naming it.
    """
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    index: dict[str, str] = {}
    clashes: dict[str, set[str]] = {}
    for target, object_id in items:
        if not isinstance(target, str) or not isinstance(object_id, str) or not object_id:
            raise InputTypeError(
                f"target index entries must be (str, non-empty str), got {(target, object_id)!r}"
            )
        key = normalise_target(target, base)
        if not key:
            continue
        previous = index.setdefault(key, object_id)
        if previous != object_id:
            clashes.setdefault(key, {previous}).add(object_id)
    if clashes:
        shown = "; ".join(f"{key!r} -> {sorted(ids)}" for key, ids in list(clashes.items())[:5])
        raise InputError(f"ambiguous link targets (one target, several ids): {shown}")
    return index


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


class _AnchorParser(HTMLParser):
    """Collects href values of <a>, <area> and <link> tags (the parser unescapes entities)."""

    def __init__(self, line_starts: list[int]) -> None:
        super().__init__(convert_charrefs=True)
        self.line_starts = line_starts
        self.hrefs: list[tuple[int, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("a", "area", "link"):
            line, column = self.getpos()
            position = self.line_starts[line - 1] + column
            for name, value in attrs:
                if name == "href" and value is not None:
                    self.hrefs.append((position, value))

    handle_startendtag = handle_starttag


def _html_links(text: str) -> list[tuple[int, str]]:
    line_starts = [0] + [match.end() for match in re.finditer("\n", text)]
    parser = _AnchorParser(line_starts)
    parser.feed(text)
    parser.close()
    return parser.hrefs


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
