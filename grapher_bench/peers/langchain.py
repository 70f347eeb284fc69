"""The DataStax graph retriever (``langchain-graph-retriever``) as a peer on the same data.

GraphER's bench compares itself with ``GraphRetriever`` (Eager strategy) on the *same*
embeddings and the *same* edges: an ``InMemoryVectorStore`` filled with precomputed vectors
(no model call), and edges named like GraphER's proximities -- ``("foreign_keys", "$id")`` for
tables, ``("mentions", "title")`` for title mentions, ``("adjacent", "$id")`` for chunk
neighbours (:func:`adjacent_ids` writes that field from ``doc_id`` / ``chunk_index``).

Needs the optional package ``langchain-graph-retriever`` (0.8).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from grapher_core.candidates import CorpusObject
from grapher_core.metadata import read_int

__all__ = ["GraphRetrieverPeer", "LookupEmbeddings", "adjacent_ids"]

"""``Eager()``'s own defaults (``select_k`` is set to the evaluation depth, e.g. 10)."""


class LookupEmbeddings(Embeddings):
    """Embeddings served from precomputed vectors, keyed by exact text (no model is run).

    An unknown text raises ``KeyError`` naming it: a silent zero vector would fake a result.
    """

    def __init__(self, vectors: Mapping[str, np.ndarray]) -> None:
        self.vectors = dict(vectors)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._get(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._get(text)

    def _get(self, text: str) -> list[float]:
        try:
            return np.asarray(self.vectors[text], dtype=np.float64).tolist()
        except KeyError:
            raise KeyError(f"no precomputed vector for text {text[:60]!r}") from None


def adjacent_ids(
    corpus: Sequence[CorpusObject],
    metadata: Sequence[Mapping[str, Any]],
    doc_field: str = "doc_id",
    index_field: str = "chunk_index",
) -> list[list[str]]:
    """For each chunk, the ids of chunks ``k - 1`` and ``k + 1`` of its document: the
    ``AdjacentChunks`` edges as an id list the graph retriever can follow."""
    where: dict[tuple[str, int], str] = {}
    for obj, meta in zip(corpus, metadata, strict=True):
        index = read_int(meta.get(index_field))
        if meta.get(doc_field) is not None and index is not None:
            where[(str(meta[doc_field]), index)] = obj.id
    out: list[list[str]] = []
    for meta in metadata:
        index = read_int(meta.get(index_field))
        doc = meta.get(doc_field)
        if doc is None or index is None:
            out.append([])
            continue
        out.append([where[(str(doc), k)] for k in (index - 1, index + 1) if (str(doc), k) in where])
    return out


class GraphRetrieverPeer:
    """``GraphRetriever`` over an in-memory store of the corpus with precomputed vectors.

    ``edges`` are graph-retriever edge specs; ``strategy`` keyword arguments go to ``Eager``
    (``select_k``, ``start_k``, ``adjacent_k``, ``max_depth``). :meth:`retrieve` returns ids in
    the retriever's order.
    """

    def __init__(
        self,
        corpus: Sequence[CorpusObject],
        metadata: Sequence[Mapping[str, Any]],
        embeddings: np.ndarray,
        edges: Sequence[tuple[str, str]],
        **strategy: Any,
    ) -> None:
        try:
            from graph_retriever.strategies import Eager
            from langchain_core.vectorstores import InMemoryVectorStore
            from langchain_graph_retriever import GraphRetriever
        except ImportError as error:  # pragma: no cover - optional dependency
            raise ImportError(
                "the graph-retriever peer needs `pip install langchain-graph-retriever==0.8.*`"
            ) from error
        if len(corpus) != len(metadata) or len(corpus) != len(embeddings):
            raise ValueError("corpus, metadata and embeddings must have the same length")
        by_text: dict[str, list[int]] = defaultdict(list)
        for position, obj in enumerate(corpus):
            by_text[obj.text].append(position)
        self.lookup = LookupEmbeddings({text: embeddings[ps[0]] for text, ps in by_text.items()})
        self.store = InMemoryVectorStore(self.lookup)
        documents = [
            Document(id=o.id, page_content=o.text, metadata=dict(m))
            for o, m in zip(corpus, metadata, strict=True)
        ]
        self.store.add_documents(documents, ids=[o.id for o in corpus])
        self.retriever = GraphRetriever(
            store=self.store, edges=list(edges), strategy=Eager(**strategy)
        )

    def retrieve(self, query: str, query_embedding: np.ndarray) -> list[str]:
        """Ids of the retrieved documents, best first (the query vector is precomputed)."""
        previous = self.lookup.vectors.get(query)
        self.lookup.vectors[query] = np.asarray(query_embedding)
        try:
            documents = self.retriever.invoke(query)
        finally:
            if previous is None:
                self.lookup.vectors.pop(query, None)
            else:  # the query's text is also a corpus text: put its vector back
                self.lookup.vectors[query] = previous
        return [str(d.id) for d in documents]
