"""The CLI tests' embedding model: a bag-of-words hashing model, so a question's words decide
the retriever's order exactly and nothing loads torch (patched in as the default embedder by
``tests/core/cli/conftest.py``, and in the child processes of the reliability suite)."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np

__all__ = ["HashEmbedder"]


class HashEmbedder:
    """Bag of words hashed into ``dim`` buckets, L2-normalised: cosine = shared words.
    Counts the texts it embeds, so a test can say that nothing was embedded."""

    name = "tests/hash-bag-of-words"

    def __init__(self, dim: int = 512) -> None:
        self.dim = dim
        self.embedded = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                out[i, zlib.crc32(word.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
