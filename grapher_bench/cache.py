"""On-disk caches so a second bench run re-embeds (and re-extracts) nothing.

Embeddings go to the core's one cache (:mod:`grapher_core.utils.embedding_cache`, one SQLite
file per cache root: ``$GRAPHER_CACHE`` or ``~/.cache/grapher``), the file ``grapher rerank``
and ``grapher eval`` read too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grapher_core.embeddings import Embedder
from grapher_core.utils.embedding_cache import EmbeddingCache, text_key
from grapher_core.utils.paths import cache_root
from grapher_core.utils.progress import progress_bar

__all__ = ["CachedEmbedder", "EmbeddingCache", "cache_root", "text_key"]


class CachedEmbedder:
    """Wraps an :class:`Embedder`; texts already embedded by the same model come from disk."""

    def __init__(
        self,
        embedder: Embedder,
        cache: EmbeddingCache | None = None,
        batch: int = 512,
        progress: bool = True,
    ) -> None:
        self.embedder = embedder
        self.name = embedder.name
        self.cache = cache or EmbeddingCache()
        self.batch = batch
        self.progress = progress

    def embed_documents(self, texts: Sequence[str], desc: str = "embedding") -> np.ndarray:
        keys = [text_key(self.name, t) for t in texts]
        found = self.cache.get_many(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            bar = progress_bar(
                len(missing), desc, unit="text", enabled=self.progress, min_total=200, leave=False
            )
            for start in range(0, len(missing), self.batch):
                chunk = missing[start : start + self.batch]
                vectors = self.embedder.embed_documents([text_of[k] for k in chunk])
                new = {
                    k: np.asarray(v, dtype=np.float32) for k, v in zip(chunk, vectors, strict=True)
                }
                self.cache.put_many(new)
                found.update(new)
                bar.update(len(chunk))
            bar.close()
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.vstack([found[k] for k in keys])

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
