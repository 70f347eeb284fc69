"""The rerankers' notes say what happened, not a wrong fix: a pool where nothing links is "no
links here" (an empty link list, or a field other objects of the corpus carry), not "enrich the
objects first"; a ``target_field`` hint only where links could name another field."""

from __future__ import annotations

import warnings

import pytest

from grapher_core import Candidate, ForeignKeys, GraphReranker
from grapher_core.diagnostics import CorpusFacts, GraphERDiagnosticError, GraphERWarning


def said(reranker: GraphReranker, pool: list[Candidate]) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reranker.rerank(pool, top_n=1)
    return [str(w.message) for w in caught if issubclass(w.category, GraphERWarning)]


def pool_with(**metadata: object) -> list[Candidate]:
    return [Candidate(f"c{i}", score=1.0 - i / 10, metadata=dict(metadata)) for i in range(4)]


def test_empty_link_lists_are_no_links_here_even_when_strict() -> None:
    reranker = GraphReranker([ForeignKeys("links")], strict=True)
    messages = said(reranker, pool_with(links=[]))
    assert len(messages) == 1
    assert (
        "no links among these candidates (field 'links' is empty on all 4 candidates)"
        in messages[0]
    )
    assert "enrich" not in messages[0]


def test_a_field_other_objects_carry_is_no_links_here_when_the_corpus_is_known() -> None:
    pool = pool_with(title="t")
    unknown = GraphReranker([ForeignKeys("links")])
    assert "check the field name or enrich the objects first" in said(unknown, pool)[0]
    with pytest.raises(GraphERDiagnosticError, match="enrich the objects first"):
        GraphReranker([ForeignKeys("links")], strict=True).rerank(pool, top_n=1)
    known = GraphReranker([ForeignKeys("links")], strict=True)
    known.diagnostics.corpus = CorpusFacts.of(
        [("c0", {}), ("far", {"links": ["c1"]}), ("other", {"links": "[]"})]
    )
    message = said(known, pool)[0]
    assert "1 of the corpus's 3 objects carry 'links', none of these 4" in message
    assert "the data, not a missing field" in message


def test_the_target_field_hint_only_where_it_applies() -> None:
    far = pool_with(foreign_keys=["shop.customers"])
    pool = [
        Candidate(f"crm.t{i}", score=1.0 - i / 10, metadata=c.metadata) for i, c in enumerate(far)
    ]
    id_like = said(GraphReranker([ForeignKeys("foreign_keys")]), pool)[0]
    assert "look like ids of objects outside the fetched pool" in id_like
    assert "target_field" not in id_like
    named = [Candidate(c.id, score=c.score, metadata={"foreign_keys": ["Customers"]}) for c in pool]
    hint = said(GraphReranker([ForeignKeys("foreign_keys")]), named)[0]
    assert "set target_field to the metadata field they name" in hint
    known = GraphReranker([ForeignKeys("foreign_keys")], strict=True)  # a fact: never raised
    known.diagnostics.corpus = CorpusFacts.of([("shop.customers", {})])
    outside = said(known, pool)[0]
    assert "they name objects of the corpus outside this pool" in outside
    assert "target_field" not in outside


def test_the_learned_rankers_say_a_misfit_with_its_own_category() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    from grapher_core.diagnostics import RankerUnfitWarning
    from grapher_core.learned.gat.ranker import GATRanker, MLPRanker
    from grapher_core.learned.grag.ranker import GRAGRanker
    from grapher_core.learned.qa_gnn.ranker import QAGNNRanker

    assert GRAGRanker.caveat_category is RankerUnfitWarning  # below a strong retriever
    assert QAGNNRanker.caveat_category is RankerUnfitWarning  # below the retriever off its set
    assert MLPRanker.caveat_category is GraphERWarning  # an ablation: a caveat, not a misfit
    assert GATRanker.caveat is None  # its misfit is said per edge kinds it never saw


def test_a_misfit_said_earlier_in_the_process_still_sets_the_ranker_aside() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    import numpy as np

    from grapher_core.evaluation.grid import Setting
    from grapher_core.evaluation.measure import Pools, measure_grid
    from grapher_core.learned.gat.ranker import GATRanker

    rng = np.random.default_rng(0)
    pool = [
        Candidate(
            f"d#{i}",
            f"chunk {i}",
            1.0 - i / 10,
            {"doc_id": "d", "chunk_index": i},
            rng.normal(size=384).astype(np.float32),
        )
        for i in range(6)
    ]
    pools = Pools((("d#1",),), ("q",), rng.normal(size=(1, 384)).astype(np.float32), (pool,))
    gat = Setting("gat", None, "rank", "detected")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):  # the warning is said once per process: the second run hears nothing
            result = measure_grid([gat], {"gat": GATRanker()}, pools, progress=False)
            assert "never saw" in result.unfit[gat.label][0]
