"""Where GraphER keeps its caches (entity extractions, embeddings): one folder, one variable.

``$GRAPHER_CACHE`` when set, else ``$XDG_CACHE_HOME/grapher``, else ``~/.cache/grapher``.
``$GRAPHER_CACHE_DIR`` (the ``grapher enrich`` command's former variable) is still read, with a
``DeprecationWarning`` (logged too, once), when ``$GRAPHER_CACHE`` is not set.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from pathlib import Path

__all__ = ["CACHE_ENV", "cache_root"]

CACHE_ENV = "GRAPHER_CACHE"
_DEPRECATED_ENV = "GRAPHER_CACHE_DIR"
_warned = threading.Event()
logger = logging.getLogger("grapher")


def cache_root(*, create: bool = True) -> Path:
    """The cache folder (created unless ``create=False``); see the module docstring."""
    env = os.environ.get(CACHE_ENV)
    if not env:
        env = os.environ.get(_DEPRECATED_ENV)
        if env and not _warned.is_set():
            _warned.set()
            message = (
                f"${_DEPRECATED_ENV} is deprecated: set ${CACHE_ENV} instead (using {env} for now)"
            )
            logger.warning(message)
            warnings.warn(message, DeprecationWarning, stacklevel=2)
    if env:
        root = Path(env).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(base) / "grapher"
    if create:
        root.mkdir(parents=True, exist_ok=True)
    return root
