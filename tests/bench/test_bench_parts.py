"""Title mentions, tokenisation, the db-first comparator and the embedding cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grapher_bench.cache import CachedEmbedder, EmbeddingCache
from grapher_bench.enrichment import add_mentions, mention_lists, proximities_for
from grapher_bench.heuristics import DatabaseFirstRanker
from grapher_bench.retrievers import BaseRetriever, tokenize
from grapher_core import Candidate, CorpusObject, GraphReranker


def test_tokenize_splits_identifiers() -> None:
    assert tokenize("customer_id OrderDate HTTPServer singers") == [
        "customer",
        "id",
        "order",
        "date",
        "http",
        "server",
        "singer",
    ]


def _passage(title: str, body: str) -> CorpusObject:
    return CorpusObject(title, f"{title}\n{body}", {"title": title})


def test_mentions_respect_word_boundaries_and_skip_stopword_titles() -> None:
    pytest.importorskip("ahocorasick")
    corpus = [
        _passage("Paris", "Capital of France, home of Parisians, close to Rome."),
        _passage("Rome", "The eternal city; not Romeo."),
        _passage("To", "A preposition used to express motion."),
        _passage("Chicago (2002 film)", "A musical film set in Chicago."),
        _passage("Roxie", "A character in Chicago, the musical. Not the Paris one"),
    ]
    lists = mention_lists(corpus, max_share=None)
    assert lists[0] == ["Rome"]  # not "Paris" (itself) nor a partial word
    assert lists[1] == []  # "Romeo" is not "Rome"
    assert "To" not in {t for mentions in lists for t in mentions}
    assert lists[4] == ["Chicago (2002 film)", "Paris"]  # alias without the parenthesis
    assert mention_lists(corpus, skip_stopword_titles=False, max_share=None)[0] == ["To", "Rome"]
    enriched = add_mentions(corpus, [dict(o.metadata) for o in corpus])
    assert enriched[0]["mentions"] == ["Rome"] and "mentions" not in corpus[0].metadata


def test_mention_edges_reach_every_object_with_the_title() -> None:
    candidates = [
        Candidate("a", "", 1.0, {"title": "A", "mentions": ["B"]}),
        Candidate("b1", "", 0.5, {"title": "B"}),
        Candidate("b2", "", 0.2, {"title": "B"}),
    ]
    (proximity,) = proximities_for("mentions")
    assert proximity.adjacency(candidates).toarray()[0].tolist() == [0.0, 1.0, 1.0]


def test_db_first_promotes_the_top_database() -> None:
    candidates = [
        Candidate("x.a", "", 0.9, {"db_id": "x"}),
        Candidate("y.b", "", 0.8, {"db_id": "y"}),
        Candidate("x.c", "", 0.1, {"db_id": "x"}),
    ]
    order = [r.id for r in GraphReranker([], ranker=DatabaseFirstRanker()).rerank(candidates)]
    assert order == ["x.a", "x.c", "y.b"]
    assert [r.id for r in GraphReranker([], ranker="db-first").rerank(candidates)] == order


class _CountingEmbedder:
    name = "fake-count"

    def __init__(self) -> None:
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.calls += len(texts)
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def test_embedding_cache_embeds_each_text_once(tmp_path: Path) -> None:
    fake = _CountingEmbedder()
    cached = CachedEmbedder(fake, EmbeddingCache(tmp_path / "e.sqlite"))
    first = cached.embed_documents(["ab", "abc", "ab"])
    again = CachedEmbedder(fake, EmbeddingCache(tmp_path / "e.sqlite")).embed_documents(["abc"])
    assert fake.calls == 2 and first[2][0] == 2 and again[0][0] == 3


def test_hybrid_retriever_mixes_bm25_and_cosine() -> None:
    pytest.importorskip("bm25s")
    corpus = [
        CorpusObject("a", "red apple"),
        CorpusObject("b", "green pear"),
        CorpusObject("c", "blue sky"),
    ]
    vectors = np.eye(3, dtype=np.float32)
    retriever = BaseRetriever(corpus, "hybrid", vectors, top_n=2)
    result = retriever.retrieve("pear", np.array([1.0, 0.0, 0.0]))
    # cosine favours a (0.7), BM25 favours b (0.3): a first, then b
    assert [corpus[i].id for i in result.indices] == ["a", "b"]
    assert result.scores[0] == pytest.approx(0.7) and result.scores[1] == pytest.approx(0.3)
    with pytest.raises(ValueError, match="embeddings"):
        BaseRetriever(corpus, "dense")
