"""Item 6: every setting is validated at construction and on assignment, atomically, in the core
and both wrappers; plus the concurrency cases that held (shared objects, threads, async)."""

from __future__ import annotations

import asyncio
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from grapher_core import (
    Candidate,
    ForeignKeys,
    GCSRanker,
    GraphReranker,
    PPRRanker,
    SharedEntities,
)
from grapher_core.errors import ConfigError, InputTypeError

BAD_ALPHAS = [5, 0, 1, -0.1, math.nan, math.inf, "0.5", True]


@pytest.mark.parametrize("ranker", [GCSRanker, PPRRanker])
@pytest.mark.parametrize("alpha", BAD_ALPHAS, ids=[repr(a) for a in BAD_ALPHAS])
def test_core_ranker_alpha_refused_at_construction(ranker: Any, alpha: object) -> None:
    with pytest.raises(ConfigError, match="alpha must be"):
        ranker(alpha=alpha)
    with pytest.raises(ConfigError, match="alpha must be"):
        GraphReranker([ForeignKeys()], ranker=ranker().name,
                      alpha=alpha)  # fmt: skip


@pytest.mark.parametrize(("settings", "error", "message"), [
    ({"tol": 0}, ConfigError, "tol"),
    ({"max_iter": 0}, ConfigError, "max_iter"),
    ({"max_iter": 2.5}, ConfigError, "max_iter"),
    ({"method": "lu"}, ConfigError, "method"),
])  # fmt: skip
def test_core_ranker_other_settings(settings: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        GCSRanker(**settings)


def candidates() -> list[Candidate]:
    return [
        Candidate("orders", score=0.9, metadata={"foreign_keys": ["customers"]}),
        Candidate("products", score=0.7),
        Candidate("stock", score=0.65),
        Candidate("customers", score=0.6),
    ]


CORE_ASSIGNMENTS = {
    "unknown ranker": ("ranker", "gsc", ConfigError, "unknown ranker 'gsc'"),
    "ranker class": ("ranker", GCSRanker, InputTypeError, "is a class"),
    "proximity class": ("proximities", [ForeignKeys], InputTypeError, "ForeignKeys is a class"),
    "not a proximity": ("proximities", ["foreign_keys"], InputTypeError, "not a proximity"),
    "proximities a string": ("proximities", "foreign_keys", InputTypeError, "must be a list"),
    "seed transform": ("seed_transform", "log", ConfigError, "seed_transform"),
    "explain negative": ("explain", -1, ConfigError, "explain"),
    "explain bool": ("explain", True, ConfigError, "explain"),
}


@pytest.mark.parametrize(("field", "value", "error", "message"), list(CORE_ASSIGNMENTS.values()),
                         ids=list(CORE_ASSIGNMENTS))  # fmt: skip
def test_core_assignment_refused_and_nothing_changes(
    field: str, value: object, error: type, message: str
) -> None:
    reranker = GraphReranker([ForeignKeys()])
    before = [(r.id, r.score) for r in reranker.rerank(candidates())]
    old = getattr(reranker, field)
    with pytest.raises(error, match=message):
        setattr(reranker, field, value)
    assert getattr(reranker, field) == old
    assert [(r.id, r.score) for r in reranker.rerank(candidates())] == before
    with pytest.raises(error, match=message):  # the same value is refused at construction
        GraphReranker(**{"proximities": [ForeignKeys()], field: value})
    reranker.ranker = "ppr"  # a later valid assignment works
    assert reranker.ranker.name == "ppr"


def test_core_proximity_class_refused_at_construction() -> None:
    with pytest.raises(InputTypeError, match=r"pass an instance, SharedEntities\(\)"):
        GraphReranker([SharedEntities])  # type: ignore[list-item]


# -- LangChain --------------------------------------------------------------------------------

WRAPPER_BAD = {
    "alpha 5": ("alpha", 5),
    "alpha nan": ("alpha", math.nan),
    "unknown ranker": ("ranker", "gsc"),
    "ranker class": ("ranker", GCSRanker),
    "proximity class": ("proximities", [ForeignKeys]),
    "top_n True": ("top_n", True),
    "top_n negative": ("top_n", -1),
    "seed transform": ("seed_transform", "log"),
}


def _langchain() -> Any:
    pytest.importorskip("langchain_core")
    from langchain_grapher import GraphERReranker

    return GraphERReranker


def _documents() -> list[Any]:
    from langchain_core.documents import Document

    return [Document(id=c.id, page_content=c.id, metadata={"score": c.score, **c.metadata})
            for c in candidates()]  # fmt: skip


@pytest.mark.parametrize(("field", "value"), list(WRAPPER_BAD.values()), ids=list(WRAPPER_BAD))
def test_langchain_refused_at_construction(field: str, value: object) -> None:
    reranker_class = _langchain()
    with pytest.raises((ValueError, TypeError)):
        reranker_class(**{field: value})


@pytest.mark.parametrize(("field", "value"), list(WRAPPER_BAD.values()), ids=list(WRAPPER_BAD))
def test_langchain_failed_assignment_leaves_field_and_core(field: str, value: object) -> None:
    reranker = _langchain()(proximities=[ForeignKeys()], score_key="score", top_n=None)
    core, old = reranker.core, getattr(reranker, field)
    before = [d.id for d in reranker.compress_documents(_documents(), "q")]
    with pytest.raises((ValueError, TypeError)):
        setattr(reranker, field, value)
    assert getattr(reranker, field) == old or (old != old)
    assert reranker.core is core
    assert [d.id for d in reranker.compress_documents(_documents(), "q")] == before
    reranker.ranker = "ppr"  # every later valid assignment still works
    reranker.alpha = 0.5
    assert reranker.core.ranker.name == "ppr" and reranker.core.ranker.alpha == 0.5


# -- LlamaIndex -------------------------------------------------------------------------------


def _llama() -> Any:
    pytest.importorskip("llama_index.core")
    from llama_index_grapher import GraphERPostprocessor

    return GraphERPostprocessor


def _nodes() -> list[Any]:
    from llama_index.core.schema import NodeWithScore, TextNode

    return [NodeWithScore(node=TextNode(id_=c.id, text=c.id, metadata=dict(c.metadata)),
                          score=c.score) for c in candidates()]  # fmt: skip


@pytest.mark.parametrize(("field", "value"), list(WRAPPER_BAD.values()), ids=list(WRAPPER_BAD))
def test_llamaindex_refused_at_construction(field: str, value: object) -> None:
    postprocessor_class = _llama()
    with pytest.raises((ValueError, TypeError)):
        postprocessor_class(**{field: value})


@pytest.mark.filterwarnings("ignore::grapher_core.diagnostics.GraphERWarning")
@pytest.mark.parametrize(("field", "value"), list(WRAPPER_BAD.values()), ids=list(WRAPPER_BAD))
def test_llamaindex_failed_assignment_leaves_field_and_core(field: str, value: object) -> None:
    postprocessor = _llama()(proximities=[ForeignKeys()])
    old = getattr(postprocessor, field)
    before = [n.node.node_id for n in postprocessor.postprocess_nodes(_nodes(), query_str="q")]
    with pytest.raises((ValueError, TypeError)):
        setattr(postprocessor, field, value)
    assert getattr(postprocessor, field) == old
    after = [n.node.node_id for n in postprocessor.postprocess_nodes(_nodes(), query_str="q")]
    assert after == before
    postprocessor.ranker = "ppr"
    assert postprocessor.model_name == "grapher-ppr"


def test_llamaindex_bad_expansion_setting_refused_at_construction() -> None:
    postprocessor_class = _llama()
    from llama_index.core.storage.docstore import SimpleDocumentStore

    with pytest.raises(ValueError, match="seeds must be an integer >= 1"):
        postprocessor_class(proximities=[ForeignKeys()], expand_seeds=0,
                            neighbour_source=SimpleDocumentStore())  # fmt: skip


# -- concurrency: held before, kept ------------------------------------------------------------


def _pool(n: int = 300) -> list[Candidate]:
    rng = np.random.default_rng(0)
    return [Candidate(f"c{i}", score=float(rng.random()),
                      metadata={"entities": [f"e{j}" for j in rng.integers(0, 40, 3)]})
            for i in range(n)]  # fmt: skip


def test_threads_on_one_reranker_equal_serial() -> None:
    reranker = GraphReranker([SharedEntities()], ranker="gcs")
    pool = _pool()
    serial = [(r.id, r.score) for r in reranker.rerank(pool)]
    with ThreadPoolExecutor(16) as executor:
        runs = list(executor.map(lambda _: [(r.id, r.score) for r in reranker.rerank(pool)],
                                 range(160)))  # fmt: skip
    assert all(run == serial for run in runs)  # bit-identical scores, same order


async def test_concurrent_async_calls_equal_sync() -> None:
    reranker = _langchain()(proximities=[ForeignKeys()], score_key="score", top_n=None)
    expected = [d.id for d in reranker.compress_documents(_documents(), "q")]
    results = await asyncio.gather(*(reranker.acompress_documents(_documents(), "q")
                                     for _ in range(200)))  # fmt: skip
    assert all([d.id for d in result] == expected for result in results)


def test_langchain_assignment_swaps_core_and_expansion_together() -> None:
    """A query on another thread reads a core and an expansion object built from the same
    fields: while one thread reassigns ``alpha``, every pair read wraps its own core."""
    from grapher_core import ForeignKeys
    from grapher_core.expand import InMemorySource

    reranker = _langchain()(proximities=[ForeignKeys()], neighbour_source=InMemorySource([]))
    stop = False

    def assign() -> int:
        count = 0
        while not stop:
            reranker.alpha = 0.1 if count % 2 else 0.5
            count += 1
        return count

    with ThreadPoolExecutor(2) as executor:
        writer = executor.submit(assign)
        engines = [reranker.engine for _ in range(20000)]
        stop = True
        assert writer.result() > 1
    # one attribute holds the engine and its core: a reader sees an old or a new engine whole
    assert all(e.reranker.ranker.alpha in (0.1, 0.5) for e in engines)
