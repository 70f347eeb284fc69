"""Text as a model can take it: the one cleaning every text passes before any model sees it.

A lone surrogate (``"\\ud800"``, a legal JSON escape and a legal Python ``str``) cannot be
encoded as UTF-8, which every tokenizer, spaCy and every HTTP client does first: one such
character in one candidate would abort the whole batch with a ``TypeError`` or
``UnicodeEncodeError`` from deep inside the model. It becomes U+FFFD, the replacement
character, and the object is named once. Cache keys hash the original text
(``surrogatepass``): only what the model reads changes, never what the caller gave.

The rule lives here, a leaf, so the core's embedding path (every door's), the CLI's readers,
the enrichment runner and the concept parser all run the same one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from grapher_core.utils import callsite

__all__ = ["LONE_SURROGATE", "clean_text", "clean_texts", "surrogate_positions"]

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A surrogate code point alone: valid in a Python ``str``, not encodable as UTF-8."""


def clean_text(text: str, limit: int | None = None) -> str:
    """``text`` cut to its first ``limit`` characters (``None``: whole), each lone surrogate
    replaced by U+FFFD."""
    if limit is not None and len(text) > limit:
        text = text[:limit]
    return LONE_SURROGATE.sub("\ufffd", text)


def surrogate_positions(texts: Sequence[str]) -> list[int]:
    """The positions of the texts holding a lone surrogate."""
    return [i for i, text in enumerate(texts) if LONE_SURROGATE.search(text)]


def clean_texts(
    texts: list[str],
    names: Sequence[object] | None = None,
    reader: str = "the model",
    logger: str = "grapher_core",
) -> list[str]:
    """``texts`` cleaned by :func:`clean_text` (no length limit), the objects holding a lone
    surrogate named in one warning per distinct message (``names``: one per text, else their
    positions). The list is returned as it is when nothing needed cleaning."""
    bad = surrogate_positions(texts)
    if not bad:
        return texts
    labels = [repr(str(names[i])) if names is not None else f"#{i}" for i in bad[:5]]
    callsite.warn_once(
        f"{reader}: {len(bad)} text(s) hold lone surrogates (invalid UTF-16 halves such as "
        f"\\ud800): {', '.join(labels)}{' ...' if len(bad) > 5 else ''}; each was replaced "
        "by U+FFFD in the text the model reads",
        logger=logger,
    )
    out = list(texts)
    for i in bad:
        out[i] = clean_text(texts[i])
    return out
