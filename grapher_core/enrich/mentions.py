"""Title mentions: link each object to the objects whose titles its text names.

The proximity behind the largest passage gains in docs/benchmarks.md, for corpora without
hyperlinks (a wiki dump, product pages, a knowledge base): one Aho-Corasick pass over every
title of the corpus, so it is a *corpus-level* enrichment -- run it over the whole corpus (or
each new batch together with the titles already indexed), not object by object. To split the
work (worker processes), :class:`MentionIndex` ``.fit(corpus)`` keeps the corpus' titles and hub
titles, and ``.find(part)`` gives any part the mentions the whole corpus gives it.

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
from dataclasses import dataclass
from typing import Any

from grapher_core.candidates import CorpusObject
from grapher_core.errors import InputError, MissingDependencyError
from grapher_core.metadata import normalise_entity

__all__ = ["DEFAULT_MAX_SHARE", "MentionIndex", "add_mentions", "find_mentions", "title_of"]

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


def _ahocorasick() -> Any:
    try:
        import ahocorasick
    except ImportError as error:
        raise MissingDependencyError(
            "title mentions need pyahocorasick (the 'mentions' extra)"
        ) from error
    return ahocorasick


def _automaton(targets: Mapping[str, set[str]]) -> Any:
    automaton = _ahocorasick().Automaton()
    for alias, owners in targets.items():
        automaton.add_word(alias, (alias, tuple(sorted(owners))))
    automaton.make_automaton()
    return automaton


def _targets(
    titles: Sequence[str], skip_stopword_titles: bool, strip_parentheses: bool
) -> dict[str, set[str]]:
    """Alias -> the titles it names, without the aliases that would be hubs, not links."""
    stop = _stopwords() if skip_stopword_titles else frozenset()
    targets: dict[str, set[str]] = {}
    for title in titles:
        for alias in _aliases(title, strip_parentheses):
            if skip_stopword_titles and (
                len(alias) < _MIN_TITLE_CHARS or alias in stop or alias.isdigit()
            ):
                continue
            if alias:
                targets.setdefault(alias, set()).add(title)
    return targets


def _scan(automaton: Any, corpus: Sequence[CorpusObject], title_field: str) -> list[list[str]]:
    """For each object, the titles (of others) its text names, in order of first appearance."""
    out: list[list[str]] = []
    for obj in corpus:
        own = title_of(obj, title_field)
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
    return out


def _hubs(lists: Sequence[Sequence[str]], n_objects: int, max_share: float | None) -> set[str]:
    """Titles mentioned by more than ``max_share`` of the objects (and more than 10)."""
    if max_share is None:
        return set()
    counts = Counter(title for mentions in lists for title in mentions)
    limit = max(max_share * n_objects, _MIN_HUB_MENTIONS)
    return {title for title, count in counts.items() if count > limit}


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
    return _fit(corpus, title_field, skip_stopword_titles, strip_parentheses, max_share)[1]


def _fit(
    corpus: Sequence[CorpusObject],
    title_field: str,
    skip_stopword_titles: bool,
    strip_parentheses: bool,
    max_share: float | None,
) -> tuple[MentionIndex, list[list[str]]]:
    """The corpus' index and, found on the way, each object's mentions."""
    _ahocorasick()
    if max_share is not None and not 0.0 < max_share <= 1.0:
        raise InputError(f"max_share must be in (0, 1] or None, got {max_share!r}")
    titles = tuple(dict.fromkeys(title_of(o, title_field) for o in corpus))
    targets = _targets(titles, skip_stopword_titles, strip_parentheses)
    raw = _scan(_automaton(targets), corpus, title_field) if targets else [[] for _ in corpus]
    hubs = _hubs(raw, len(corpus), max_share)
    index = MentionIndex(
        titles, frozenset(hubs), title_field, skip_stopword_titles, strip_parentheses
    )
    return index, [[t for t in mentions if t not in hubs] for mentions in raw]


@dataclass(frozen=True)
class MentionIndex:
    """The titles of a whole corpus and its hub titles, to find mentions in one part of it.

    Mentions are corpus-level: which titles exist and which are hubs depend on every object.
    ``MentionIndex.fit(corpus)`` settles both once; ``index.find(part)`` then gives each object
    of any part exactly the mentions ``find_mentions(corpus)`` gives it, so the corpus can be
    split across processes (the index is plain data and pickles small).
    """

    titles: tuple[str, ...]
    hubs: frozenset[str] = frozenset()
    title_field: str = "title"
    skip_stopword_titles: bool = True
    strip_parentheses: bool = True

    @classmethod
    def fit(
        cls,
        corpus: Sequence[CorpusObject],
        *,
        title_field: str = "title",
        skip_stopword_titles: bool = True,
        strip_parentheses: bool = True,
        max_share: float | None = DEFAULT_MAX_SHARE,
    ) -> MentionIndex:
        """Index ``corpus``'s titles and find its hub titles (one pass over its texts)."""
        return _fit(corpus, title_field, skip_stopword_titles, strip_parentheses, max_share)[0]

    def find(self, corpus: Sequence[CorpusObject]) -> list[list[str]]:
        """For each object, the indexed titles (of others) it mentions, hubs left out."""
        targets = _targets(self.titles, self.skip_stopword_titles, self.strip_parentheses)
        if not targets:
            return [[] for _ in corpus]
        raw = _scan(_automaton(targets), corpus, self.title_field)
        return [[t for t in mentions if t not in self.hubs] for mentions in raw]


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
