"""Title mentions: link each object to the objects whose titles its text names.

The proximity behind the largest passage gains in docs/benchmarks.md, for corpora without
hyperlinks (a wiki dump, product pages, a knowledge base): one Aho-Corasick pass over every
title of the corpus, so it is a *corpus-level* enrichment -- run it over the whole corpus (or
each new batch together with the titles already indexed), not object by object.

>>> mentions = find_mentions([CorpusObject("p1", "Ada Lovelace\\nShe worked with Babbage."),
...                          CorpusObject("p2", "Babbage\\nCharles Babbage built engines.")])
>>> mentions
[['Babbage'], []]

Then ``ForeignKeys("mentions", target_field="title")`` (or zero-config detection) turns them
into edges. Titles come from ``metadata[title_field]`` or, when absent, the first line of the
text. Matching is case-insensitive at word boundaries; a title also matches without a trailing
parenthesis ("Chicago" for "Chicago (2002 film)"); titles that are stopwords, digits or
shorter than three characters are skipped (they would be hubs, not links), and so are titles
mentioned by more than ``max_share`` of the corpus (and by more than 10 objects).

Needs ``pyahocorasick`` (the ``mentions`` extra).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from grapher_core.candidates import CorpusObject
from grapher_core.errors import InputError, MissingDependencyError
from grapher_core.metadata import normalise_entity

__all__ = ["DEFAULT_MAX_SHARE", "add_mentions", "find_mentions", "title_of"]

DEFAULT_MAX_SHARE = 0.02
# Titles that are ordinary words turn into hubs under case-insensitive matching ("To",
# "This", "Use"): spaCy's English stopword list plus very short titles.
_MIN_TITLE_CHARS = 3
# A title mentioned by this many objects or fewer is never treated as a hub.
_MIN_HUB_MENTIONS = 10
_PAREN = re.compile(r"\s*\([^()]*\)\s*$")


def _stopwords() -> frozenset[str]:
    try:
        from spacy.lang.en.stop_words import STOP_WORDS
    except ImportError:  # spaCy absent: a small built-in list
        return frozenset(
            {
                "a",
                "an",
                "and",
                "are",
                "as",
                "at",
                "be",
                "by",
                "for",
                "from",
                "has",
                "he",
                "in",
                "is",
                "it",
                "its",
                "of",
                "on",
                "that",
                "the",
                "to",
                "was",
                "were",
                "will",
                "with",
                "this",
                "use",
            }
        )
    return frozenset(STOP_WORDS) | {"use", "this", "to"}


def title_of(obj: CorpusObject, title_field: str = "title") -> str:
    """``metadata[title_field]`` when it is a non-empty string, else the text's first line."""
    title = obj.metadata.get(title_field)
    if isinstance(title, str) and title.strip():
        return title.strip()
    return obj.text.split("\n", 1)[0].strip()


def _aliases(title: str, strip_parentheses: bool) -> set[str]:
    """A title and (optionally) its form without a trailing "(disambiguation)" part,
    casefolded."""
    names = {normalise_entity(title)}
    stripped = _PAREN.sub("", title)
    if strip_parentheses and stripped and stripped != title:
        names.add(normalise_entity(stripped))
    return names


def _body(obj: CorpusObject, title: str) -> str:
    """The text to scan: without the leading title line passages start with."""
    first, _, rest = obj.text.partition("\n")
    return rest if rest and first.strip() == title else obj.text


def find_mentions(
    corpus: Sequence[CorpusObject],
    *,
    title_field: str = "title",
    skip_stopword_titles: bool = True,
    strip_parentheses: bool = True,
    max_share: float | None = DEFAULT_MAX_SHARE,
) -> list[list[str]]:
    """For each object, the titles of *other* objects that its text mentions (in order of
    first appearance). ``max_share=None`` keeps hub titles."""
    try:
        import ahocorasick
    except ImportError as error:
        raise MissingDependencyError(
            "title mentions need pyahocorasick (the 'mentions' extra)"
        ) from error
    if max_share is not None and not 0.0 < max_share <= 1.0:
        raise InputError(f"max_share must be in (0, 1] or None, got {max_share!r}")
    stop = _stopwords() if skip_stopword_titles else frozenset()
    titles = [title_of(o, title_field) for o in corpus]
    targets: dict[str, set[str]] = {}
    for title in titles:
        for alias in _aliases(title, strip_parentheses):
            if skip_stopword_titles and (
                len(alias) < _MIN_TITLE_CHARS or alias in stop or alias.isdigit()
            ):
                continue
            if alias:
                targets.setdefault(alias, set()).add(title)
    if not targets:
        return [[] for _ in corpus]
    automaton = ahocorasick.Automaton()
    for alias, owners in targets.items():
        automaton.add_word(alias, (alias, tuple(sorted(owners))))
    automaton.make_automaton()
    out: list[list[str]] = []
    for obj, own in zip(corpus, titles, strict=True):
        text = " ".join(_body(obj, own).split()).casefold()
        found: dict[str, None] = {}
        for end, (alias, owners) in automaton.iter(text):
            start = end - len(alias) + 1
            if (start > 0 and text[start - 1].isalnum()) or (
                end + 1 < len(text) and text[end + 1].isalnum()
            ):
                continue
            for owner in owners:
                if owner != own:
                    found[owner] = None
        out.append(list(found))
    if max_share is not None:
        counts = Counter(title for mentions in out for title in mentions)
        limit = max(max_share * len(corpus), _MIN_HUB_MENTIONS)
        out = [[t for t in mentions if counts[t] <= limit] for mentions in out]
    return out


def add_mentions(
    corpus: Sequence[CorpusObject],
    metadata: Sequence[Mapping[str, Any]] | None = None,
    *,
    field: str = "mentions",
    title_field: str = "title",
    **options: Any,
) -> list[dict[str, Any]]:
    """New metadata dicts (never the given ones) with ``field`` = the mentioned titles and
    ``title_field`` filled in from the first line where it was absent. ``options`` go to
    :func:`find_mentions`."""
    metadata = [o.metadata for o in corpus] if metadata is None else metadata
    if len(metadata) != len(corpus):
        raise InputError(f"{len(metadata)} metadata dicts for {len(corpus)} objects")
    lists = find_mentions(corpus, title_field=title_field, **options)
    out = []
    for obj, meta, mentions in zip(corpus, metadata, lists, strict=True):
        new = dict(meta)
        new.setdefault(title_field, title_of(obj, title_field))
        new[field] = mentions
        out.append(new)
    return out
