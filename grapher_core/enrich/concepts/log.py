"""The concept graphs' logger and its once-only warning, shared by the parser, the text bounds
and the rankers that read stored graphs."""

from __future__ import annotations

import logging

from grapher_core.utils import callsite

#: Named as the module was before it became a package, so logging configurations keep working.
log = logging.getLogger("grapher_core.enrich.concepts")


def warn_once(message: str) -> None:
    """Log and warn once per distinct message (nothing fails silently, nothing floods)."""
    callsite.warn_once(message, logger=log.name)
