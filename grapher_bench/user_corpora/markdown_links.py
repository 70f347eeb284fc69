"""Markdown links: GraphER's regex reader against markdown-it-py's CommonMark parser.

``python -m grapher_bench.user_corpora.markdown_links [SITE_PACKAGES]`` reads the Markdown long
descriptions (``*.dist-info/METADATA`` with ``Description-Content-Type: text/markdown``) of the
packages installed beside it -- real READMEs nobody here wrote -- and compares, per document,
the set of link targets :func:`grapher_core.enrich.links.extract_links` finds with the set
markdown-it-py finds (link tokens, plus ``<a href>`` in inline and block HTML read by the same
HTML reader). Image targets (badges) are left out on both sides: they never name a page.
"""

from __future__ import annotations

import argparse
import email
import sys
import sysconfig
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grapher_core.enrich.links import extract_links

IMAGE_HINTS = (".png", ".svg", ".jpg", ".jpeg", ".gif", "badge", "shields.io")


@dataclass(frozen=True)
class Difference:
    """One document whose two link sets differ."""

    name: str
    only_regex: tuple[str, ...]
    only_parser: tuple[str, ...]


def readmes(root: Path) -> Iterator[tuple[str, str]]:
    """(distribution, Markdown long description) of every package under ``root``."""
    for path in sorted(root.glob("*.dist-info/METADATA")):
        message = email.message_from_bytes(path.read_bytes())
        kind = (message.get("Description-Content-Type") or "").lower()
        body = message.get_payload()
        if "markdown" in kind and isinstance(body, str) and len(body) >= 200:
            yield path.parent.name, body


def parser_links(text: str, parser: Any) -> list[str]:
    """The link targets markdown-it-py's token stream holds, in order."""
    from grapher_core.enrich.links import _clean, _html_links

    found: list[str] = []

    def walk(tokens: Sequence[Any]) -> None:
        for token in tokens:
            if token.type == "link_open" and token.attrGet("href"):
                found.append(str(token.attrGet("href")))
            elif token.type in ("html_inline", "html_block"):
                found.extend(target for _at, target in _html_links(token.content))
            if token.children:
                walk(token.children)

    walk(parser.parse(text))
    return _clean(found)  # the same clean-up (whitespace, fragments-only, schemes) as the regex


def pages(targets: Sequence[str]) -> set[str]:
    """The targets that may name a page (images left out)."""
    return {t for t in targets if not any(hint in t.lower() for hint in IMAGE_HINTS)}


def compare(root: Path) -> tuple[int, int, int, list[Difference]]:
    """(documents, links by regex, links by the parser, the documents that differ)."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark")
    documents = regex_total = parser_total = 0
    differences: list[Difference] = []
    for name, text in readmes(root):
        documents += 1
        by_regex = pages(extract_links(text, "auto"))
        by_parser = pages(parser_links(text, parser))
        regex_total += len(by_regex)
        parser_total += len(by_parser)
        if by_regex != by_parser:
            differences.append(
                Difference(
                    name, tuple(sorted(by_regex - by_parser)), tuple(sorted(by_parser - by_regex))
                )
            )
    return documents, regex_total, parser_total, differences


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grapher_bench.user_corpora.markdown_links")
    parser.add_argument("root", nargs="?", default=sysconfig.get_paths()["purelib"])
    args = parser.parse_args(argv)
    documents, regex_total, parser_total, differences = compare(Path(args.root))
    only_regex = sum(len(d.only_regex) for d in differences)
    only_parser = sum(len(d.only_parser) for d in differences)
    print(
        f"{documents} Markdown READMEs; page links: regex {regex_total}, markdown-it-py "
        f"{parser_total}; same set in {documents - len(differences)}; only regex {only_regex}, "
        f"only markdown-it-py {only_parser}"
    )
    for d in differences:
        shown = f"only regex {list(d.only_regex)[:3]}, only parser {list(d.only_parser)[:3]}"
        print(f"  {d.name}: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
