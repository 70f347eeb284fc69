"""Texts made safe and small for a parser: lone surrogates replaced, long texts split at
natural breaks, pieces grouped into batches, so spaCy's memory follows the piece, not the text."""

from __future__ import annotations

from collections.abc import Sequence

from grapher_core.enrich.concepts.log import log
from grapher_core.utils.text import clean_texts

_BREAKS = ("\n\n", "\n", ". ", "? ", "! ", "; ", " ")


def sanitise_texts(
    texts: list[str], names: Sequence[str] | None = None, reader: str = "the parser"
) -> list[str]:
    """``texts`` with every lone surrogate replaced by U+FFFD (the objects are named, once):
    spaCy and the encoders encode text as UTF-8 and would raise ``UnicodeEncodeError``. The
    rule is :func:`grapher_core.utils.text.clean_texts`, said on the concepts' logger."""
    return clean_texts(texts, names, reader, logger=log.name)


def split_text(text: str, size: int) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, each cut after the last paragraph,
    line, sentence or word break in its second half (mid-word only when there is none)."""
    if len(text) <= size:
        return [text]
    pieces = []
    start = 0
    while len(text) - start > size:
        window = text[start : start + size]
        cut = size
        for mark in _BREAKS:
            found = window.rfind(mark, size // 2)
            if found >= 0:
                cut = found + len(mark)
                break
        pieces.append(text[start : start + cut])
        start += cut
    pieces.append(text[start:])
    return [p for p in pieces if p.strip()] or [text[:size]]


def batches(sizes: Sequence[int], most: int, chars: int) -> list[tuple[int, int]]:
    """``(start, stop)`` runs of at most ``most`` items and about ``chars`` characters."""
    out = []
    start = total = 0
    for i, size in enumerate(sizes):
        if i > start and (i - start >= most or total + size > chars):
            out.append((start, i))
            start, total = i, 0
        total += size
    if start < len(sizes):
        out.append((start, len(sizes)))
    return out
