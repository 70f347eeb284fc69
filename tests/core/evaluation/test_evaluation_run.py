"""The evaluation behind ``grapher eval``, without the command: the grid, measuring each
configuration over the pools, the choice, the config it becomes, the table and the report."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from grapher_core import Candidate, ForeignKeys
from grapher_core.edges.keys import AdjacentChunks
from grapher_core.evaluation.choice import choose, config_for, significant
from grapher_core.evaluation.grid import (
    FULL_CHUNK_ORDER,
    MAX_CONFIGS,
    Setting,
    build_grid,
    rankers_available,
)
from grapher_core.evaluation.measure import (
    EvaluationScope,
    Measurement,
    Pools,
    measure_grid,
    measure_retriever,
    rank_pool,
    reranker_for,
)
from grapher_core.evaluation.report import gain_text, pct, render_table, report_json
from grapher_core.ranking.config import CONFIG_VERSION

GCS = Setting("gcs", 0.1, "rank", "detected")
PPR = Setting("ppr", 0.3, "score", "detected")
SCOPE = EvaluationScope("q.jsonl", ("q1", "q2", "q3"), 10, 6, (2, 3))


def measurement(name: str, ranks: list[tuple[int | None, ...]], setting: Any = GCS) -> Measurement:
    return Measurement(name, setting, tuple(ranks), tuple(1.0 + i for i in range(len(ranks))))


RETRIEVER = Measurement("retriever", None, ((1, 5), (1, 4), (1,)))
BETTER = measurement("better", [(1, 2), (1, 3), (1,)])
WORSE = measurement("worse", [(2, 5), (3, 4), (4,)], PPR)


def test_grid_tries_each_ranker_at_its_alphas_and_both_seed_policies() -> None:
    grid = build_grid(["gcs", "ppr"], [ForeignKeys("foreign_keys")], {"gcs": None, "ppr": None})
    assert len(grid) == 10
    assert grid[0] == Setting("gcs", 0.1, "rank", "detected")
    assert {s.seed_transform for s in grid} == {"rank", "auto"}
    assert grid[0].label == "gcs alpha=0.1 seeds=rank graph=detected"


def test_grid_adds_chunk_order_at_full_share_and_each_graph_alone() -> None:
    detected = [ForeignKeys("links"), AdjacentChunks("doc_id", "chunk_index")]
    grid = build_grid(["gcs"], detected, {"gcs": None})
    full = [s for s in grid if s.options == FULL_CHUNK_ORDER]
    assert [s.graph for s in full] == ["detected, chunk order full"]
    alone = [s for s in grid if s.proximities is not None]
    assert [s.proximities for s in alone] == [(p,) for p in detected]
    assert len(grid) == 6 + 1 + 2


def test_grid_skips_unavailable_rankers_and_is_capped() -> None:
    grid = build_grid(["gcs", "gat"], [], {"gcs": None, "gat": "no torch"})
    assert {s.ranker for s in grid} == {"gcs"}
    many = [ForeignKeys(f"f{i}") for i in range(20)]
    assert len(build_grid(["gcs", "ppr"], many, {"gcs": None, "ppr": None})) == MAX_CONFIGS


def test_the_built_in_rankers_are_available_without_building_anything() -> None:
    reasons, built = rankers_available(["gcs", "ppr", "baseline"], embedder=None)
    assert reasons == {"gcs": None, "ppr": None, "baseline": None} and built == {}


def test_measurement_metrics_latency_and_paired_tests() -> None:
    metrics = BETTER.metrics([2, 3])
    assert list(metrics) == ["gold@2", "gold@3", "PR@2", "PR@3", "MRR"]
    assert metrics["gold@2"] == pytest.approx(4 / 5) and metrics["PR@3"] == 1.0
    assert metrics["PR@2"] == pytest.approx(2 / 3) and metrics["MRR"] == 1.0
    assert RETRIEVER.latency() is None
    assert BETTER.latency() == {"median": 2.0, "p95": pytest.approx(2.9)}
    tests = BETTER.versus(RETRIEVER, [2, 3])
    assert tests["PR@3"].to_dict() == {"wins": 2, "losses": 0, "p": 0.5}
    assert tests["gold@2"].wins == 1 and tests["gold@2"].losses == 0


def test_choice_needs_a_gain_and_nothing_below_the_retriever() -> None:
    assert choose([RETRIEVER, WORSE, BETTER], [2, 3]) is BETTER
    assert choose([RETRIEVER, WORSE], [2, 3]) is None
    # PR@3 up but gold@2 down: not safe, so not chosen
    trade = measurement("trade", [(3, 2), (3, 2), (3,)])
    assert choose([RETRIEVER, trade], [2, 3]) is None
    twin = measurement("twin", [(1, 2), (1, 3), (1,)])
    assert choose([RETRIEVER, BETTER, twin], [2, 3]) is BETTER  # the first of equals
    assert not significant(BETTER, RETRIEVER, [2, 3])


def test_config_of_the_choice_and_of_keeping_the_retrievers_order() -> None:
    rows = [RETRIEVER, BETTER]
    config = config_for(BETTER, rows, SCOPE)
    assert config["grapher_config"] == CONFIG_VERSION and config["keep_retriever_order"] is False
    assert (config["ranker"], config["alpha"], config["seed_transform"]) == ("gcs", 0.1, "rank")
    assert config["top_n"] == 3 and config["fetch_k"] == 6 and config["proximities"] is None
    assert config["note"].endswith("; not significant (p >= 0.05)")
    assert config["evaluation"]["chosen"]["metrics"]["PR@3"] == 1.0
    assert config["evaluation"]["corpus_objects"] == 10 and config["evaluation"]["k"] == [2, 3]
    keep = config_for(None, rows, SCOPE)
    assert keep["keep_retriever_order"] is True and keep["ranker"] == "baseline"
    assert "chosen" not in keep["evaluation"]


def test_table_gain_and_report() -> None:
    rows = [RETRIEVER, BETTER]
    table = render_table(rows, [2, 3], BETTER).splitlines()
    assert table[0].split()[:4] == ["ranker", "alpha", "seeds", "graph"]
    assert table[2].startswith("retriever ") and table[3].endswith("<- best")
    assert "+2/-0 p=0.5" in table[3]
    assert gain_text(BETTER, RETRIEVER, [2, 3]).startswith("PR@3 33.3 -> 100.0 (McNemar p=0.5)")
    assert pct(0.5) == "50.0"
    report = report_json(
        rows, SCOPE, config={}, chosen=BETTER, model="m", graph="none", skipped={"gat": "why"}
    )
    assert report["gold_ids"] == 5 and report["gold_among_candidates"] == 1.0
    assert report["rows"][0]["vs_retriever"] is None and report["chosen"] == "better"
    assert report["rows"][1]["vs_retriever"]["PR@3"] == {"wins": 2, "losses": 0, "p": 0.5}
    assert report["skipped"] == {"gat": "why"} and report["question_ids"] == ["q1", "q2", "q3"]


def pools() -> Pools:
    """Two questions whose second gold object is linked to the first but ranked last."""
    linked = {"foreign_keys": ["orders"]}
    pool = [
        Candidate("orders", score=0.9, metadata={"foreign_keys": ["buyers"]}),
        Candidate("animals", score=0.5),
        Candidate("plants", score=0.4),
        Candidate("buyers", score=0.1, metadata=linked),
    ]
    queries = np.ones((2, 4), dtype=np.float32)
    gold = (("orders", "buyers"), ("orders",))
    return Pools(gold, ("orders placed", "orders"), queries, (pool, pool))


def test_retriever_and_configurations_are_measured_on_the_same_pools() -> None:
    base = measure_retriever(pools())
    assert base.gold_ranks == ((1, 4), (1,)) and base.latency_ms == ()
    result = measure_grid([GCS], {}, pools(), progress=False)
    assert result.rows[0] == base and not result.failed
    gcs = result.rows[1]
    assert gcs.name == GCS.label and gcs.gold_ranks[0] == (1, 2)  # buyers lifted by its link
    assert len(gcs.latency_ms) == 2 and all(ms >= 0 for ms in gcs.latency_ms)


def test_rank_pool_is_the_reranker_order() -> None:
    pool = pools().candidates[0]
    order = rank_pool(reranker_for(GCS, {}), pool, "orders", np.ones(4, dtype=np.float32))
    assert order[:2] == ["orders", "buyers"] and sorted(order) == sorted(c.id for c in pool)


def test_a_configuration_that_fails_is_set_aside_with_its_reason() -> None:
    bad_alpha = Setting("gcs", 7.0, "rank", "detected")
    result = measure_grid([bad_alpha, GCS], {}, pools(), progress=False)
    assert [row.name for row in result.rows] == ["retriever", GCS.label]
    assert list(result.failed) == [bad_alpha.label] and "alpha" in result.failed[bad_alpha.label]
