"""Base retrievers of the paper's section 3.1: BM25, dense (MiniLM cosine) and hybrid
(0.3 x min-max-normalised BM25 + 0.7 x cosine), returning the top 200 candidates.

BM25 tokenisation splits identifiers (``customer_id``, ``OrderDate`` -> customer, id, order,
date): on table schemas this decides the baseline (lesson (a) of the issue), and a weak
baseline would make every graph gain look larger than it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from grapher_core.candidates import Candidate, CorpusObject
from grapher_core.ranking.seeds import minmax

RETRIEVERS: tuple[str, ...] = ("bm25", "dense", "hybrid")
BM25_WEIGHT = 0.3
DEFAULT_TOP_N = 200

__all__ = ["BM25_WEIGHT", "DEFAULT_TOP_N", "RETRIEVERS", "BaseRetriever", "Retrieved", "tokenize"]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z0-9]+")


def tokenize(text: str, split_identifiers: bool = True, stem: bool = True) -> list[str]:
    """Lower-cased alphanumeric tokens; identifiers split at ``_`` and CamelCase boundaries.

    ``stem`` strips a plural ``s`` (``singers`` -> ``singer``), which matters for questions
    phrased in the plural against singular table names.
    """
    tokens: list[str] = []
    for word in _WORD.findall(text.replace("_", " ")):
        parts = _CAMEL.split(word) if split_identifiers else [word]
        for part in parts:
            token = part.lower()
            if stem and len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
                token = token[:-1]
            tokens.append(token)
    return tokens


@dataclass
class Retrieved:
    """One query's candidates: corpus positions best first, their scores, and the query vector."""

    indices: np.ndarray
    scores: np.ndarray
    query_embedding: np.ndarray | None


class BaseRetriever:
    """BM25 / dense / hybrid over one corpus. Dense parts take precomputed (cached) vectors."""

    def __init__(
        self,
        corpus: Sequence[CorpusObject],
        kind: str = "hybrid",
        corpus_embeddings: np.ndarray | None = None,
        top_n: int = DEFAULT_TOP_N,
    ) -> None:
        if kind not in RETRIEVERS:
            raise ValueError(f"retriever must be one of {RETRIEVERS}, got {kind!r}")
        if kind != "bm25" and corpus_embeddings is None:
            raise ValueError(f"the {kind} retriever needs corpus embeddings")
        if top_n < 1:
            raise ValueError(f"top_n must be >= 1, got {top_n}")
        self.corpus = list(corpus)
        self.kind = kind
        self.top_n = min(top_n, len(self.corpus))
        self.embeddings = corpus_embeddings
        self._bm25 = None
        if kind != "dense":
            import bm25s

            self._bm25 = bm25s.BM25(k1=1.2, b=0.75)
            self._bm25.index([tokenize(o.text) or [""] for o in self.corpus], show_progress=False)

    def bm25_scores(self, query: str) -> np.ndarray:
        if self._bm25 is None:
            raise ValueError("a dense retriever has no BM25 index")
        tokens = tokenize(query)
        if not tokens:
            return np.zeros(len(self.corpus))
        return np.asarray(self._bm25.get_scores(tokens), dtype=np.float64)

    def scores(self, query: str, query_embedding: np.ndarray | None) -> np.ndarray:
        """The retriever's score for every corpus object."""
        if self.kind == "bm25":
            return self.bm25_scores(query)
        if self.embeddings is None or query_embedding is None:
            raise ValueError(f"the {self.kind} retriever needs corpus and query embeddings")
        cosine = np.asarray(self.embeddings @ query_embedding, dtype=np.float64)
        if self.kind == "dense":
            return cosine
        bm25 = minmax(self.bm25_scores(query), constant=0.0)  # no match: adds nothing
        return BM25_WEIGHT * bm25 + (1 - BM25_WEIGHT) * cosine

    def retrieve(self, query: str, query_embedding: np.ndarray | None = None) -> Retrieved:
        scores = self.scores(query, query_embedding)
        positions = np.arange(scores.size)
        order = np.lexsort((positions, -scores))[: self.top_n]  # ties: corpus order
        return Retrieved(order, scores[order], query_embedding)

    def candidates(
        self, retrieved: Retrieved, metadata: Sequence[dict] | None = None
    ) -> list[Candidate]:
        """Turn a retrieval into core :class:`Candidate` objects (with embeddings if known)."""
        out = []
        for position, score in zip(retrieved.indices, retrieved.scores, strict=True):
            obj = self.corpus[int(position)]
            meta = obj.metadata if metadata is None else metadata[int(position)]
            vector = None if self.embeddings is None else self.embeddings[int(position)]
            out.append(Candidate(obj.id, obj.text, float(score), meta, vector))
        return out
