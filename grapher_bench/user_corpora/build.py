"""Regenerate every ``corpus.jsonl`` of the user-like corpora from real installed software.

``python -m grapher_bench.user_corpora.build [--out DIR] [--sqlite-dir DIR] [--only NAME]``

* Table corpora: each application's own code creates its SQLite database (Optuna's
  ``RDBStorage``, MLflow's ``SqlAlchemyStore``, Django's ``migrate`` for a Wagtail project and
  for a project with Django's contrib apps and django-allauth), each in a fresh interpreter;
  the schema is then read back with SQLite's PRAGMAs (``table_info``, ``foreign_key_list``)
  into one object per table in the shared benchmark format. ``--sqlite-dir`` keeps the
  databases (``<db_id>.sqlite``) for ``grapher eval --database``.
* Documentation corpora: the HTML reference pages inside the installed pygame wheel
  (``pygame/docs/generated``) and the Markdown pages of the Python-Markdown sdist (downloaded
  with ``pip download`` unless ``--markdown-sdist`` names the ``.tar.gz``), chunked by section.

The questions (``queries.jsonl``) are hand-written and committed; the build only checks that
each gold id still exists in the corpus it wrote (exit code 1 when one does not).
Needs the ``corpora`` dependency group (pip >= 25.1, from the repository root):
``pip install -c constraints.txt --group corpora -e .``.
"""

from __future__ import annotations

import argparse
import html
import importlib.metadata
import importlib.util
import json
import os
import posixpath
import re
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from grapher_bench.user_corpora import CORPORA, HERE

__all__ = [
    "DATABASES",
    "PINS",
    "chunk_html_page",
    "chunk_markdown_page",
    "create_database",
    "main",
    "normalise_link",
    "read_sqlite_schema",
    "slugify",
]

PINS: dict[str, str] = {
    "optuna": "5.0.0",
    "mlflow-skinny": "3.17.2",
    "django": "5.2.19",
    "wagtail": "8.0.1",
    "django-allauth": "65.21.1",
    "pygame": "2.6.1",
    "markdown": "3.11.3",
}
"""The versions the committed corpora were built from (also pinned by the ``corpora`` group)."""

_WAGTAIL_APPS = [
    "wagtail.contrib.forms",
    "wagtail.contrib.redirects",
    "wagtail.embeds",
    "wagtail.sites",
    "wagtail.users",
    "wagtail.snippets",
    "wagtail.documents",
    "wagtail.images",
    "wagtail.search",
    "wagtail.admin",
    "wagtail",
    "modelcluster",
    "taggit",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
]
"""A Wagtail project's ``INSTALLED_APPS`` as Wagtail's project template lists them."""

_ACCOUNTS_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.sites",
    "django.contrib.flatpages",
    "django.contrib.redirects",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
]
"""A Django site with flat pages, redirects and django-allauth's accounts and social logins."""

DATABASES: dict[str, tuple[str, ...]] = {
    "ml_tracking_tables": ("optuna", "mlflow"),
    "django_cms_tables": ("wagtail_cms", "django_accounts"),
}
"""The databases pooled into each table corpus, by ``db_id``."""

MIN_WORDS = 80
"""A section shorter than this is merged with the next one into the same chunk."""
MAX_WORDS = 300
"""A chunk is closed before it grows past this many words (a longer paragraph is split)."""
TAIL_WORDS = 25
"""A page's last chunk shorter than this is merged into the chunk before it."""
MIN_PAGE_WORDS = 30
"""Pages with fewer words (e.g. a bare ``::: markdown`` stub) are left out."""


# ---------------------------------------------------------------- databases


def create_database(kind: str, path: Path) -> None:
    """Create the database ``kind`` at ``path`` with the application's own code (in this
    process: Django can be configured once per process, so :func:`main` runs each in a
    fresh interpreter)."""
    path = Path(path)
    if path.exists():
        path.unlink()
    if kind == "optuna":
        import optuna

        storage = optuna.storages.RDBStorage(f"sqlite:///{path}")
        storage.engine.dispose()
    elif kind == "mlflow":
        import logging

        logging.getLogger("mlflow").setLevel(logging.WARNING)
        logging.getLogger("alembic").setLevel(logging.WARNING)
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        artifacts = path.parent / f"{path.stem}_artifacts"
        store = SqlAlchemyStore(f"sqlite:///{path}", str(artifacts))
        store.engine.dispose()
    elif kind in ("wagtail_cms", "django_accounts"):
        import django
        from django.conf import settings

        apps = _WAGTAIL_APPS if kind == "wagtail_cms" else _ACCOUNTS_APPS
        middleware = ["allauth.account.middleware.AccountMiddleware"] if "allauth" in apps else []
        settings.configure(
            INSTALLED_APPS=apps,
            DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path)}},
            SITE_ID=1,
            USE_TZ=True,
            SECRET_KEY="user-corpora-build",
            STATIC_URL="/static/",
            DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
            WAGTAIL_SITE_NAME="user-corpora",
            MIDDLEWARE=middleware,
            TEMPLATES=[
                {
                    "BACKEND": "django.template.backends.django.DjangoTemplates",
                    "APP_DIRS": True,
                    "OPTIONS": {
                        "context_processors": ["django.template.context_processors.request"]
                    },
                }
            ],
        )
        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
    else:
        raise ValueError(f"unknown database kind {kind!r}")


def _create_in_subprocess(kind: str, path: Path) -> None:
    env = dict(os.environ)
    root = str(HERE.parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", "grapher_bench.user_corpora.build", "--create-db", kind]
    done = subprocess.run([*command, str(path)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        last = "\n".join(done.stderr.strip().splitlines()[-3:])
        raise RuntimeError(
            f"creating the {kind} database failed (is the 'corpora' dependency group "
            f"installed? pip install -c constraints.txt --group corpora -e .):\n{last}"
        )


def _shadow_tables(db: sqlite3.Connection) -> set[str]:
    """The internal tables behind FTS virtual tables (``<name>_data``, ``_idx``, ...)."""
    virtual = [
        name
        for name, sql in db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
        if (sql or "").upper().startswith("CREATE VIRTUAL TABLE")
    ]
    suffixes = ("_data", "_idx", "_content", "_docsize", "_config")
    return {f"{name}{suffix}" for name in virtual for suffix in suffixes}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_sqlite_schema(path: Path, db_id: str) -> list[dict[str, Any]]:
    """One benchmark-format object per table of the SQLite file at ``path``, read with
    PRAGMAs; SQLite's own tables (``sqlite_*``) and FTS shadow tables are left out."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        shadow = _shadow_tables(db)
        tables = sorted(
            name
            for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not name.startswith("sqlite_") and name not in shadow
        )
        info = {t: db.execute(f"PRAGMA table_info({_quote(t)})").fetchall() for t in tables}
        keys = {t: db.execute(f"PRAGMA foreign_key_list({_quote(t)})").fetchall() for t in tables}
    by_lower = {t.lower(): t for t in tables}
    linked: dict[str, set[str]] = {t: set() for t in tables}
    pairs: dict[str, list[list[str]]] = {t: [] for t in tables}
    for table in tables:
        for _id, _seq, other, mine, theirs, *_rest in keys[table]:
            target = by_lower.get(str(other).lower())
            if target is None:
                continue
            if theirs is None:  # REFERENCES t without columns: t's primary key
                primary = sorted((row for row in info[target] if row[5]), key=lambda r: r[5])
                theirs = primary[0][1] if primary else "rowid"
            pairs[table].append([mine, f"{db_id}.{target}", theirs])
            if target != table:
                linked[table].add(target)
                linked[target].add(table)
    objects = []
    for table in tables:
        rows = sorted(info[table], key=lambda r: r[0])
        names = [str(r[1]) for r in rows]
        types = [str(r[2]).lower() or "unknown" for r in rows]
        primary_keys = [str(r[1]) for r in sorted((r for r in rows if r[5]), key=lambda r: r[5])]
        text = f"Table: {table}\nColumns: " + ", ".join(
            f"{name} ({kind})" for name, kind in zip(names, types, strict=True)
        )
        objects.append(
            {
                "id": f"{db_id}.{table}",
                "text": text,
                "metadata": {
                    "table": table,
                    "db_id": db_id,
                    "foreign_keys": sorted(f"{db_id}.{t}" for t in linked[table]),
                    "columns": names,
                    "column_types": types,
                    "primary_keys": primary_keys,
                    "fk_pairs": pairs[table],
                },
            }
        )
    return objects


def build_tables(name: str, sqlite_dir: Path) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for db_id in DATABASES[name]:
        path = sqlite_dir / f"{db_id}.sqlite"
        print(f"  creating {path} with the application's own code", file=sys.stderr)
        _create_in_subprocess(db_id, path)
        objects += read_sqlite_schema(path, db_id)
    return objects


# ---------------------------------------------------------------- documentation pages


@dataclass
class _Para:
    """A paragraph: its text, and the anchors and links at word offsets inside it."""

    text: str
    anchors: list[tuple[int, str]] = field(default_factory=list)
    links: list[tuple[int, str]] = field(default_factory=list)
    pre: bool = False


@dataclass
class _Section:
    heading: str


_Item = _Para | _Section


def normalise_link(page: str, href: str, extension: str) -> str | None:
    """``href`` found on ``page`` as ``"<page path>"`` or ``"<page path>#<anchor>"`` relative
    to the corpus root, or ``None`` for an external link, a link out of the root or to a file
    that is not a page (an image, a stylesheet, a source file)."""
    href = html.unescape(href.strip())
    if not href or href.startswith("//") or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", href):
        return None
    path, _, fragment = href.partition("#")
    path = path.split("?", 1)[0]
    fragment = unquote(fragment)
    if not path:
        target = page
    else:
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(path)))
        if path.endswith("/"):
            target = f"{target}/index{extension}"
        if target == ".." or target.startswith("../") or target.startswith("/"):
            return None
        if not target.endswith(extension):
            return None
    return f"{target}#{fragment}" if fragment else target


def _words(text: str) -> int:
    return len(text.split())


def _split_para(para: _Para, limit: int) -> list[_Para]:
    """Pieces of at most ``limit`` words (a code block by lines), anchors and links kept with
    the words they stand at."""
    if _words(para.text) <= limit:
        return [para]
    pieces: list[_Para] = []
    if para.pre:
        lines: list[str] = []
        count = 0
        for line in para.text.split("\n"):
            if lines and count + _words(line) > limit:
                pieces.append(_Para("\n".join(lines), pre=True))
                lines, count = [], 0
            lines.append(line)
            count += _words(line)
        pieces.append(_Para("\n".join(lines), pre=True))
        pieces[0].anchors, pieces[0].links = list(para.anchors), list(para.links)
        return pieces
    words = para.text.split()
    for start in range(0, len(words), limit):
        end = start + limit
        piece = _Para(" ".join(words[start:end]))
        last = end >= len(words)
        piece.anchors = [
            (p - start, a) for p, a in para.anchors if start <= p < end or (last and p >= end)
        ]
        piece.links = [
            (p - start, t) for p, t in para.links if start <= p < end or (last and p >= end)
        ]
        pieces.append(piece)
    return pieces


def _chunk_items(
    page: str, title: str, items: Sequence[_Item], prefix_heading: bool = False
) -> list[dict[str, Any]]:
    """Pack a page's paragraphs into chunks of about MIN_WORDS..MAX_WORDS words, starting a
    new chunk at a section boundary once the current one is long enough."""
    chunks: list[dict[str, Any]] = []
    heading = title
    current: dict[str, Any] | None = None

    def close() -> None:
        nonlocal current
        if current is not None and current["paras"]:
            chunks.append(current)
        current = None

    for item in items:
        if isinstance(item, _Section):
            heading = item.heading or heading
            if current is not None and current["words"] >= MIN_WORDS:
                close()
            continue
        for piece in _split_para(item, MAX_WORDS):
            size = _words(piece.text)
            if size == 0 and not piece.anchors:
                continue
            if (
                current is not None
                and current["words"] + size > MAX_WORDS
                and current["words"] >= MIN_WORDS
            ):
                close()
            if current is None:
                current = {"heading": heading, "paras": [], "words": 0}
            current["paras"].append(piece)
            current["words"] += size
    close()
    if len(chunks) > 1 and chunks[-1]["words"] < TAIL_WORDS:
        tail = chunks.pop()
        chunks[-1]["paras"] += tail["paras"]
        chunks[-1]["words"] += tail["words"]
    out = []
    for index, chunk in enumerate(chunks):
        anchors = [a for p in chunk["paras"] for _, a in p.anchors]
        links = [t for p in chunk["paras"] for _, t in p.links]
        text = "\n".join(p.text for p in chunk["paras"] if p.text.strip())
        out.append(
            {
                "id": f"{page}#{index:03d}",
                "text": text,
                "metadata": {
                    "doc_id": page,
                    "source": page,
                    "chunk_index": index,
                    "n_chunks_in_doc": len(chunks),
                    "title": title,
                    "heading": chunk["heading"],
                    "anchors": list(dict.fromkeys(anchors)),
                    "links": list(dict.fromkeys(links)),
                },
            }
        )
    return out


_BLOCK_TAGS = {
    "p", "li", "dt", "dd", "pre", "tr", "table", "section", "div", "blockquote", "ul", "ol",
    "dl", "br", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "caption", "figure", "figcaption",
}  # fmt: skip
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_SKIP_TAGS = {"script", "style", "form", "button", "input", "select", "textarea"}


class _SphinxPage(HTMLParser):
    """Paragraphs and sections of the main body of a Sphinx HTML page (``role="main"``):
    headings, definition terms with an id (``<dt id="pygame.Surface.blit">``) and paragraphs
    with an id (``<p id="environment-variables"><strong>...``) open a section; permalink
    marks (``a.headerlink``) and hover tooltips (``span.tooltip-content``) are dropped."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.items: list[_Item] = []
        self.title = ""
        self._in_title = False
        self._div_depth = 0
        self._body_depth: int | None = None
        self._skip_tag: str | None = None  # inside an element that is left out
        self._skip_depth = 0
        self._pre = 0
        self._text: list[str] = []
        self._anchors: list[tuple[int, str]] = []
        self._links: list[tuple[int, str]] = []
        self._heading: _Section | None = None
        self._heading_tag = ""
        self._heading_text: list[str] = []

    def _position(self) -> int:
        return _words("".join(self._text))

    def _flush(self) -> None:
        raw = "".join(self._text)
        text = raw.strip("\n") if self._pre else " ".join(raw.split())
        if text.strip():
            self.items.append(_Para(text, self._anchors, self._links, pre=bool(self._pre)))
            self._anchors, self._links = [], []
        self._text = []

    def _left_out(self, tag: str, classes: list[str]) -> bool:
        return (
            tag in _SKIP_TAGS
            or (tag == "a" and "headerlink" in classes)
            or "tooltip-content" in classes
        )

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "title":
            self._in_title = True
        if tag == "div":
            self._div_depth += 1
            if self._body_depth is None and values.get("role") == "main":
                self._body_depth = self._div_depth
                return
        if self._body_depth is None:
            return
        if self._skip_tag is not None:
            self._skip_depth += tag == self._skip_tag
            return
        if self._left_out(tag, values.get("class", "").split()):
            self._skip_tag, self._skip_depth = tag, 1
            return
        if tag in _BLOCK_TAGS:
            self._flush()
        if tag == "pre":
            self._pre += 1
        anchor = values.get("id") or (values.get("name") if tag == "a" else "")
        if tag in _HEADINGS or (tag == "p" and anchor):
            self._heading = _Section("")
            self._heading_tag = tag
            self._heading_text = []
            self.items.append(self._heading)
        if tag == "dt" and anchor:
            self.items.append(_Section(anchor))
        if anchor:
            self._anchors.append((self._position(), anchor))
        if tag == "a" and values.get("href"):
            target = normalise_link(self.page, values["href"], ".html")
            if target is not None:
                self._links.append((self._position(), target))
        if tag in ("td", "th"):
            self._text.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._body_depth is None:
            if tag == "div":
                self._div_depth -= 1
            return
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_depth -= 1
                if self._skip_depth == 0:
                    self._skip_tag = None
            if tag != "div":
                return
        if tag == "div":
            if self._div_depth == self._body_depth:
                self._flush()
                self._body_depth = None
            self._div_depth -= 1
            if self._skip_tag is not None:
                return
        if self._heading is not None and tag == self._heading_tag:
            self._heading.heading = " ".join("".join(self._heading_text).split())
            self._heading = None
        if tag in _BLOCK_TAGS:
            self._flush()
        if tag == "pre":
            self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._body_depth is None or self._skip_tag is not None:
            return
        self._text.append(data)
        if self._heading is not None:
            self._heading_text.append(data)


def chunk_html_page(page: str, source: str) -> list[dict[str, Any]]:
    """The chunks of one Sphinx HTML page (``page``: its path relative to the corpus root)."""
    parser = _SphinxPage(page)
    parser.feed(source)
    parser.close()
    parser._flush()
    title = " ".join(parser.title.split())
    title = re.split(r"\s+[—-]\s+", title)[0] if title else page
    if sum(_words(p.text) for p in parser.items if isinstance(p, _Para)) < MIN_PAGE_WORDS:
        return []
    return _chunk_items(page, title, parser.items)


# -- Markdown


def slugify(value: str, separator: str = "-") -> str:
    """Python-Markdown's ``toc`` extension's default heading id."""
    value = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(rf"[{separator}\s]+", separator, value)


_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_REFDEF = re.compile(r"^ {0,3}\[([^\]^][^\]]*)\]:\s*<?(\S+?)>?(?:\s+[\"'(].*)?\s*$")
_ATTR = re.compile(r"\s*\{:?\s*([^}]*)\}\s*$")
_INLINE = re.compile(
    r"(?P<image>!\[(?P<alt>[^\]]*)\]\([^)]*\))"
    r"|(?P<inline>\[(?P<itext>(?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?(?P<href>[^)\s>]*)>?"
    r"(?:\s+[\"'][^)]*[\"'])?\s*\))"
    r"|(?P<ref>\[(?P<rtext>(?:[^\[\]]|\[[^\]]*\])+)\]\[(?P<rid>[^\]]*)\])"
    r"|(?P<html><a\s(?P<attrs>[^>]*)>(?P<atext>.*?)</a>)"
    r"|(?P<short>\[(?P<stext>[^\]^][^\]]*)\](?![\[(:]))"
    r"|(?P<comment><!--.*?-->)"
)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_ATTR_TOKEN = r"(?:[#.][\w-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]+))"
_INLINE_ATTR = re.compile(rf"\{{:?\s*({_ATTR_TOKEN}(?:\s+{_ATTR_TOKEN})*)\s*\}}")
_HTML_ATTR = re.compile(r"(\w[\w-]*)\s*=\s*[\"']([^\"']*)[\"']")


def _refkey(label: str) -> str:
    return " ".join(label.lower().split())


class _CodeSpans:
    """Code spans set aside while a line's markup is read: no links or ids inside code."""

    def __init__(self) -> None:
        self.spans: list[str] = []

    def hide(self, line: str) -> str:
        return _CODE_SPAN.sub(self._keep, line)

    def restore(self, text: str) -> str:
        """The text as written, code spans back in place (also for reference lookups)."""
        return re.sub("\x00(\\d+)\x00", lambda m: self.spans[int(m.group(1))], text)

    def _keep(self, match: re.Match[str]) -> str:
        self.spans.append(match.group(0))
        return f"\x00{len(self.spans) - 1}\x00"


@dataclass
class _Inline:
    """What one inline construct becomes: its text, where it links and the ids it declares."""

    text: str
    href: str | None = None
    ids: list[str] = field(default_factory=list)


def _anchor_ids(attrs: dict[str, str]) -> list[str]:
    """An ``<a>`` tag's non-empty ``id`` and ``name``, in that order."""
    return [attrs[key] for key in ("id", "name") if attrs.get(key)]


def _read_inline(
    match: re.Match[str], refs: dict[str, str], restore: Callable[[str], str]
) -> _Inline:
    """One :data:`_INLINE` match: an image keeps its alt text, a comment nothing, a link its
    text (a reference or shortcut resolved through ``refs``; an unknown shortcut stays as
    written)."""
    if match.group("image"):
        return _Inline(match.group("alt"))
    if match.group("comment"):
        return _Inline("")
    if match.group("inline"):
        return _Inline(match.group("itext"), match.group("href"))
    if match.group("ref"):
        text = match.group("rtext")
        return _Inline(text, refs.get(_refkey(restore(match.group("rid") or text))))
    if match.group("html"):
        attrs = dict(_HTML_ATTR.findall(match.group("attrs")))
        return _Inline(match.group("atext"), attrs.get("href"), _anchor_ids(attrs))
    text = match.group("stext")
    href = refs.get(_refkey(restore(text)))
    return _Inline(text if href is not None else match.group(0), href)


def _markdown_inline(
    line: str, page: str, refs: dict[str, str], offset: int
) -> tuple[str, list[tuple[int, str]], list[tuple[int, str]]]:
    """Markup stripped from one line (link text kept), with the anchors and links it holds
    at word offsets counted from ``offset``."""
    spans = _CodeSpans()
    line = spans.hide(line)
    anchors = [
        (offset, token[1:])
        for found in _INLINE_ATTR.finditer(line)
        for token in found.group(1).split()
        if token[0] == "#"
    ]
    line = _INLINE_ATTR.sub("", line)
    out: list[str] = []
    links: list[tuple[int, str]] = []
    last = 0
    for match in _INLINE.finditer(line):
        out.append(line[last : match.start()])
        last = match.end()
        inline = _read_inline(match, refs, spans.restore)
        at = offset + _words("".join(out))
        anchors += [(at, anchor) for anchor in inline.ids]
        target = None if inline.href is None else normalise_link(page, inline.href, ".md")
        if target is not None:
            links.append((at, target))
        out.append(inline.text)
    out.append(line[last:])
    text = "".join(out)
    at = offset + _words(text)
    for tag in re.findall(r"<a\s([^>]*)/>", text):
        anchors += [(at, anchor) for anchor in _anchor_ids(dict(_HTML_ATTR.findall(tag)))]
    text = re.sub(r"</?a\b[^>]*>", "", text)
    text = spans.restore(text.replace("**", "")).replace("`", "")
    return text, anchors, links


def _heading_parts(raw: str) -> tuple[str, str | None]:
    """A heading's text and its explicit ``{ #id }``, if any."""
    explicit = None
    attr = _ATTR.search(raw)
    if attr and "#" in attr.group(1):
        found = re.search(r"#([\w-]+)", attr.group(1))
        explicit = found.group(1) if found else None
        raw = raw[: attr.start()]
    raw = re.sub(r"\s+#+\s*$", "", raw).strip()
    return raw, explicit


def chunk_markdown_page(page: str, source: str) -> list[dict[str, Any]]:
    """The chunks of one Markdown page (``page``: its path relative to the corpus root)."""
    title, source = _front_matter(source)
    lines = source.split("\n")
    reader = _MarkdownReader(page, _reference_definitions(lines), title)
    index = 0
    while index < len(lines):
        index = reader.read_block(lines, index)
    reader.flush()
    title = reader.title or page
    items = reader.items
    if sum(_words(p.text) for p in items if isinstance(p, _Para)) < MIN_PAGE_WORDS:
        return []
    return _chunk_items(page, title, items)


def _front_matter(source: str) -> tuple[str, str]:
    """The ``title:`` of a YAML front matter block ("" without one) and the page after it."""
    front = _FRONT.match(source)
    if not front:
        return "", source
    found = re.search(r"^title:\s*(.+)$", front.group(1), re.MULTILINE)
    title = found.group(1).strip().strip("\"'") if found else ""
    return title, source[front.end() :]


def _reference_definitions(lines: list[str]) -> dict[str, str]:
    """``[label]: url`` definitions outside code blocks, the first of a label kept, read
    before the text so a reference may come before its definition."""
    refs: dict[str, str] = {}
    fence: str | None = None
    for line in lines:
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(2)
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None and (ref := _REFDEF.match(line)):
            refs.setdefault(_refkey(ref.group(1)), ref.group(2))
    return refs


def _unique_slug(slug: str, used: set[str]) -> str:
    """``slug``, or ``slug_1``, ``slug_2``... when taken, as Python-Markdown's ``toc`` does."""
    base, n = slug, 0
    while slug in used:
        n += 1
        slug = f"{base}_{n}"
    return slug


class _MarkdownReader:
    """A Markdown page read block by block into paragraphs and sections; the page title is
    the front matter's, else the first heading."""

    def __init__(self, page: str, refs: dict[str, str], title: str) -> None:
        self.page = page
        self.refs = refs
        self.title = title
        self.items: list[_Item] = []
        self.used_slugs: set[str] = set()
        self.buffer: list[str] = []

    def read_block(self, lines: list[str], index: int) -> int:
        """Read what starts at ``lines[index]`` (a fence, a blank line or reference
        definition, an ATX or setext heading, a paragraph line); the next index to read."""
        line = lines[index]
        opened = _FENCE.match(line)
        if opened:
            return self._code_block(lines, index + 1, opened.group(2))
        if not line.strip() or _REFDEF.match(line):
            self.flush()
            return index + 1
        atx = _ATX.match(line)
        if atx:
            self.heading(atx.group(2))
            return index + 1
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if not self.buffer and len(line) - len(line.lstrip()) < 4 and _SETEXT.match(following):
            self.heading(line.strip())
            return index + 2
        self.buffer.append(line)
        return index + 1

    def flush(self, pre: bool = False) -> None:
        """The buffered lines as one paragraph (inline markup read across its lines)."""
        anchors: list[tuple[int, str]] = []
        links: list[tuple[int, str]] = []
        if pre:
            text = "\n".join(self.buffer)
        else:
            joined = " ".join(line.strip() for line in self.buffer)
            text, anchors, links = _markdown_inline(joined, self.page, self.refs, 0)
            text = " ".join(text.split())
        if text.strip() or anchors:
            self.items.append(_Para(text, anchors, links, pre=pre))
        self.buffer = []

    def heading(self, raw: str) -> None:
        """A section starts: its heading text, with its id (explicit, else a unique slug)
        as the anchor of a paragraph of its own."""
        text, explicit = _heading_parts(raw)
        plain, _, heading_links = _markdown_inline(text, self.page, self.refs, 0)
        self.flush()
        slug = explicit or _unique_slug(slugify(plain), self.used_slugs)
        self.used_slugs.add(slug)
        self.items.append(_Section(plain))
        self.items.append(_Para(plain, [(0, slug)], heading_links))
        self.title = self.title or plain

    def _code_block(self, lines: list[str], index: int, marker: str) -> int:
        """A fenced block from ``lines[index]`` to its closing ``marker``, kept verbatim."""
        self.flush()
        code = []
        while index < len(lines) and not lines[index].strip().startswith(marker):
            code.append(lines[index])
            index += 1
        self.buffer = code
        self.flush(pre=True)
        return index + 1


def _pygame_docs() -> Path:
    spec = importlib.util.find_spec("pygame")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "pygame is not installed: pip install -c constraints.txt --group corpora -e ."
        )
    root = Path(next(iter(spec.submodule_search_locations))) / "docs" / "generated"
    if not root.is_dir():
        raise RuntimeError(f"the installed pygame has no HTML docs at {root}")
    return root


PYGAME_SECTIONS = ("ref", "tut")
"""The folders of pygame's generated docs that go into the corpus: the module reference and
the tutorials (the C API, the indexes and the search page are left out)."""


def build_pygame(docs: Path | None = None) -> list[dict[str, Any]]:
    root = docs or _pygame_docs()
    objects: list[dict[str, Any]] = []
    for section in PYGAME_SECTIONS:
        for path in sorted((root / section).glob("*.html")):
            page = path.relative_to(root).as_posix()
            objects += chunk_html_page(page, path.read_text(encoding="utf-8"))
    return objects


def _markdown_sdist(sdist: Path | None, workdir: Path) -> Path:
    if sdist is None:
        version = PINS["markdown"]
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        command += [f"markdown=={version}", "-d", str(workdir), "-q"]
        print(f"  {' '.join(command)}", file=sys.stderr)
        subprocess.run(command, check=True)
        found = sorted(workdir.glob("markdown-*.tar.gz"))
        if not found:
            raise RuntimeError(f"pip download left no markdown sdist in {workdir}")
        sdist = found[0]
    target = workdir / "markdown_sdist"
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if "/docs/" in m.name and m.isfile()]
        archive.extractall(target, members=members, filter="data")
    docs = sorted(target.glob("*/docs"))
    if not docs:
        raise RuntimeError(f"{sdist} has no docs/ folder")
    return docs[0]


def build_markdown(docs: Path) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for path in sorted(docs.rglob("*.md")):
        page = path.relative_to(docs).as_posix()
        if any(part.startswith(".") for part in page.split("/")):
            continue
        objects += chunk_markdown_page(page, path.read_text(encoding="utf-8"))
    return objects


# ---------------------------------------------------------------- output


def check_gold(folder: Path) -> list[str]:
    """Problems with the committed questions of ``folder`` against its corpus (none = [])."""
    ids = {
        json.loads(line)["id"]
        for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    queries = folder / "queries.jsonl"
    if not queries.is_file():
        return [f"{queries} is missing"]
    problems = []
    for line in queries.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            missing = [g for g in record.get("gold", []) if g not in ids]
            if missing:
                problems.append(f"{folder.name} {record.get('id')}: gold not in corpus {missing}")
    return problems


def _versions() -> dict[str, str]:
    found = {}
    for name in PINS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grapher_bench.user_corpora.build",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, default=HERE, help="root of the corpus folders")
    parser.add_argument(
        "--sqlite-dir",
        type=Path,
        default=None,
        help="keep the SQLite databases here (<db_id>.sqlite); default: a temporary folder",
    )
    parser.add_argument(
        "--only", action="append", choices=CORPORA, default=None, help="build only this corpus"
    )
    parser.add_argument(
        "--markdown-sdist", type=Path, default=None, help="Python-Markdown sdist (.tar.gz)"
    )
    parser.add_argument("--pygame-docs", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--create-db", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from grapher_core.cli.enrich import write_jsonl  # the corpus files' one writer (atomic)

    if args.create_db:
        create_database(args.create_db[0], Path(args.create_db[1]))
        return 0
    versions = _versions()
    missing = sorted(k for k, v in versions.items() if v == "not installed")
    stale = {k: v for k, v in versions.items() if k not in missing and v != PINS[k]}
    if missing:
        print(
            f"note: not installed: {', '.join(missing)} (the 'corpora' dependency group)",
            file=sys.stderr,
        )
    if stale:
        print(f"note: versions differ from the pins {PINS}: {stale}", file=sys.stderr)
    names = args.only or list(CORPORA)
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="user_corpora_") as scratch:
        sqlite_dir = args.sqlite_dir or Path(scratch) / "sqlite"
        sqlite_dir.mkdir(parents=True, exist_ok=True)
        for name in names:
            print(f"building {name}", file=sys.stderr)
            try:
                if name in DATABASES:
                    objects = build_tables(name, sqlite_dir.resolve())
                elif name == "pygame_docs":
                    objects = build_pygame(args.pygame_docs)
                else:
                    objects = build_markdown(_markdown_sdist(args.markdown_sdist, Path(scratch)))
            except (RuntimeError, subprocess.CalledProcessError) as error:
                print(f"error: {name}: {error}", file=sys.stderr)
                return 2
            folder = args.out / name
            write_jsonl(folder / "corpus.jsonl", objects)
            size = (folder / "corpus.jsonl").stat().st_size
            print(f"  {len(objects)} objects, {size / 1e6:.2f} MB -> {folder}", file=sys.stderr)
            if (folder / "queries.jsonl").is_file() or args.out == HERE:
                problems += check_gold(folder)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
