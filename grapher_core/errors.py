"""The errors GraphER raises on purpose, under one base class.

``except GraphERError`` catches every one of them. Each subclass also inherits the built-in
error a caller would otherwise expect (``ValueError``, ``TypeError``, ``ImportError``,
``FileNotFoundError``, ``RuntimeError``), so ``except`` clauses written for those keep working.
``tests/core/test_errors.py`` fails on a bare built-in raise in the library packages.
"""

from __future__ import annotations

__all__ = [
    "CacheError",
    "CheckpointError",
    "ConfigError",
    "EmbeddingMismatchError",
    "GraphERError",
    "InputError",
    "InputFileNotFoundError",
    "InputTypeError",
    "MissingDependencyError",
    "NotFoundError",
    "SidecarError",
    "StateError",
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


class SidecarError(GraphERError, ValueError):
    """A saved array file (an ego-graph index ``.npz``) is damaged, oversized, of another layout
    or built from another corpus (the message names the file and the field)."""


class EmbeddingMismatchError(InputError):
    """The embeddings at hand are not those a checkpoint was trained on (model or dimension)."""


class InputFileNotFoundError(GraphERError, FileNotFoundError):
    """A file or folder the caller named does not exist."""


class MissingDependencyError(GraphERError, ModuleNotFoundError):
    """An optional extra is needed for what was asked (the message names the extra). A
    ``ModuleNotFoundError`` (so an ``ImportError``): code that treats a missing optional
    module as absent -- ``pytest.importorskip`` among them -- treats it so too."""


class StateError(GraphERError, RuntimeError):
    """An operation was called in a state that does not allow it (closed, not fitted, ...)."""


class NotFoundError(GraphERError, KeyError):
    """A lookup by id or key found nothing (the message names the key)."""
