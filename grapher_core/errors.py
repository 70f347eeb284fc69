"""The errors GraphER raises on purpose, under one base class.

``except GraphERError`` catches every one of them. Each subclass also inherits the built-in
error that code raised before this module existed (``ValueError``, ``TypeError``), so callers
catching those keep working.
"""

from __future__ import annotations

__all__ = [
    "CacheError",
    "CheckpointError",
    "ConfigError",
    "GraphERError",
    "InputError",
    "InputTypeError",
]


class GraphERError(Exception):
    """Base class of the errors GraphER raises deliberately."""


class InputError(GraphERError, ValueError):
    """A value the caller passed is malformed (scores, ids, embeddings, metadata, ...)."""


class InputTypeError(GraphERError, TypeError):
    """The caller passed an object of the wrong type."""


class ConfigError(GraphERError, ValueError):
    """A setting is out of range or names something that does not exist."""


class CheckpointError(GraphERError, ValueError):
    """A checkpoint is malformed, of another format, or does not match its config."""


class CacheError(GraphERError, ValueError):
    """A cache file cannot be used: not SQLite, another program's or schema's, damaged."""
