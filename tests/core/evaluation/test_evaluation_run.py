"""The evaluation behind ``grapher eval``, without the command: the grid, measuring each
configuration over the pools, the choice, the config it becomes, the table and the report."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from grapher_core import Candidate, ForeignKeys
from grapher_core.candidates import CorpusObject
from grapher_core.edges.keys import AdjacentChunks
from grapher_core.edges.semantic import SemanticKNN
from grapher_core.evaluation.choice import (
    Choice,
    choose,
    config_for,
    questions_needed,
    unfit_configurations,
)
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
    ReembedCost,
    measure_grid,
    measure_retriever,
    needs_vectors,
    rank_pool,
    reembedding_ms,
    reranker_for,
)
from grapher_core.evaluation.metrics import pct
from grapher_core.evaluation.report import gain_text, render_table, report_json
from grapher_core.evaluation.sources import by_source, losing, source_field, sources_of
from grapher_core.ranking.config import CONFIG_VERSION
from grapher_core.utils.stats import mcnemar_exact

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


def test_choice_keeps_the_default_when_nothing_beats_it_significantly() -> None:
    # BETTER is the default (GCS at its defaults), above the retriever; WORSE is below
    choice = choose([RETRIEVER, WORSE, BETTER], 2)
    assert choice.row is BETTER and choice.keeps_default and choice.default is BETTER
    assert choice.reason.startswith("keep the default (better): no configuration beat it")
    # an alternative a question ahead of the default, not significantly: the default stays
    ahead = measurement("ahead", [(1, 2), (1, 2), (1,)], PPR)
    kept = choose([RETRIEVER, BETTER, ahead], 2)
    assert kept.row is BETTER
    assert kept.hint is not None and kept.hint.startswith("ahead won 1/0 against the default")
    assert "not significant on 3 questions" in kept.hint


def test_choice_keeps_the_retrievers_order_when_the_default_is_below_it() -> None:
    below = measurement("below", [(3, 5), (1, 4), (1,)])
    keep = choose([RETRIEVER, below], 2)
    assert keep.row is None and "is below it on PR@2" in keep.reason
    assert keep.reason.startswith("keep the retriever's order: no configuration beat it")
    same = measurement("same", list(RETRIEVER.gold_ranks))
    assert choose([RETRIEVER, same], 2).row is None  # the default changes nothing


def many(ranks: tuple[int | None, ...], count: int) -> list[tuple[int | None, ...]]:
    return [ranks] * count


def test_choice_switches_when_an_alternative_beats_the_default_significantly() -> None:
    retriever = Measurement("retriever", None, tuple(many((1, 4), 12)))
    default = measurement("default", many((1, 4), 10) + many((1, 2), 2))
    alternative = measurement("ppr", many((1, 2), 12), PPR)
    choice = choose([retriever, default, alternative], 2)
    assert choice.row is alternative and choice.default is default
    assert choice.reason.startswith("switch to ppr: it beats the default (default) on PR@2")
    assert "+10/-0" in choice.reason
    # on PR@5 (--for top5) every row has all its gold: the default stays
    assert choose([retriever, default, alternative], 5).row is not alternative


def test_a_warned_configuration_is_never_chosen() -> None:
    retriever = Measurement("retriever", None, tuple(many((1, 4), 12)))
    default = measurement("default", many((1, 4), 12))
    gat = measurement("gat", many((1, 2), 12), Setting("gat", None, "rank", "detected"))
    gat_score = measurement("gat2", many((1, 2), 12), Setting("gat", None, "score", "detected"))
    rows = [retriever, default, gat, gat_score]
    warning = "gat: ... linked by contextual edges it never saw. There it is below GCS"
    # what each configuration raised as RankerUnfitWarning (the category is read where the
    # warnings are caught: test_the_category_not_the_words_sets_a_ranker_aside)
    excluded = unfit_configurations(rows, {"gat": (warning,)})
    assert excluded == {"gat": warning, "gat2": warning}  # one warning: the whole ranker
    assert choose(rows, 2).row is gat  # unwarned, it would win significantly
    choice = choose(rows, 2, excluded)
    assert choice.row is None and choice.excluded == excluded  # default = retriever's order
    loaded = unfit_configurations(rows, {}, {"gat": ("g-rag ... below a strong retriever",)})
    assert set(loaded) == {"gat", "gat2"}
    assert unfit_configurations(rows, {}) == {}
    table = render_table(rows, [2], choice)
    assert table.count("warned: not chosen") == 2


class Speaking:
    """A ranker that keeps the seeds' order and says ``message`` with ``category``."""

    name = "speaking"
    needs_embeddings = False

    def __init__(self, message: str, category: type[Warning]) -> None:
        self.message, self.category = message, category

    def rank(self, graph: Any, seeds: Any, context: Any) -> Any:
        import warnings

        warnings.warn(self.message, self.category, stacklevel=2)
        return np.asarray(seeds, dtype=float)


def test_the_category_not_the_words_sets_a_ranker_aside() -> None:
    from grapher_core.diagnostics import GraphERWarning, RankerUnfitWarning

    # the words of the old phrase list, in a plain GraphER warning: not a misfit
    plain = Speaking(
        "it never saw these edges; ranked below the retriever's own order", GraphERWarning
    )
    unfit = Speaking("fits nothing here", RankerUnfitWarning)
    grid = [Setting("plain", None, "rank", "detected"), Setting("unfit", None, "rank", "detected")]
    result = measure_grid(grid, {"plain": plain, "unfit": unfit}, pools(), progress=False)
    assert dict(result.unfit) == {grid[1].label: ("fits nothing here",)}
    assert grid[0].label in result.messages and grid[0].label not in result.unfit
    excluded = unfit_configurations(result.rows, result.unfit)
    assert excluded == {grid[1].label: "fits nothing here"}
    assert issubclass(RankerUnfitWarning, GraphERWarning)


def test_questions_needed_grows_as_the_win_shrinks() -> None:
    assert questions_needed(1, 3, 40) is None  # a loss
    small, large = questions_needed(3, 1, 40), questions_needed(6, 1, 40)
    assert small is not None and large is not None and small > large >= 40
    wins, losses = round(3 * small / 40), round(1 * small / 40)
    assert mcnemar_exact(wins, losses) < 0.05
    assert questions_needed(101, 100, 10) is None  # beyond 100 times the questions


def choice_of(row: Measurement | None) -> Choice:
    return Choice(row, 2, BETTER, "why")


def test_config_of_the_choice_and_of_keeping_the_retrievers_order() -> None:
    rows = [RETRIEVER, BETTER]
    config = config_for(choice_of(BETTER), rows, SCOPE)
    assert config["grapher_config"] == CONFIG_VERSION and config["keep_retriever_order"] is False
    assert (config["ranker"], config["alpha"], config["seed_transform"]) == ("gcs", 0.1, "rank")
    # top_n is the K the choice was made for (was: the largest K)
    assert config["top_n"] == 2 and config["fetch_k"] == 6 and config["proximities"] is None
    assert config["note"] == "chosen by grapher eval: why"
    assert config["evaluation"]["chosen"]["metrics"]["PR@3"] == 1.0
    assert config["evaluation"]["corpus_objects"] == 10 and config["evaluation"]["k"] == [2, 3]
    assert config["evaluation"]["for_k"] == 2 and "default" in config["evaluation"]
    keep = config_for(choice_of(None), rows, SCOPE)
    assert keep["keep_retriever_order"] is True and keep["ranker"] == "baseline"
    assert "chosen" not in keep["evaluation"] and keep["note"] == "why"


def test_table_gain_and_report() -> None:
    rows = [RETRIEVER, BETTER]
    choice = choice_of(BETTER)
    table = render_table(rows, [2, 3], choice).splitlines()
    assert table[0].split()[:4] == ["ranker", "alpha", "seeds", "graph"]
    assert "PR@2 vs retr." in table[0] and "PR@2 vs default" in table[0]
    assert table[2].startswith("retriever ") and table[3].endswith("<- best")
    assert "+1/-0 p=1" in table[3] and " default " in table[3]
    assert gain_text(BETTER, RETRIEVER, [2, 3], 3).startswith("PR@3 33.3 -> 100.0 (McNemar p=0.5)")
    assert pct(0.5) == "50.0"
    report = report_json(
        rows, SCOPE, config={}, choice=choice, model="m", graph="none", skipped={"gat": "why"}
    )
    assert report["gold_ids"] == 5 and report["gold_among_candidates"] == 1.0
    assert report["rows"][0]["vs_retriever"] is None and report["chosen"] == "better"
    assert report["rows"][1]["vs_retriever"]["PR@3"] == {"wins": 2, "losses": 0, "p": 0.5}
    assert report["skipped"] == {"gat": "why"} and report["question_ids"] == ["q1", "q2", "q3"]
    assert report["for_k"] == 2 and report["reason"] == "why"


def test_latency_columns_add_the_reembedding_to_rows_that_read_vectors() -> None:
    semantic = Setting("gcs", 0.1, "rank", "semantic", (SemanticKNN(),))
    assert needs_vectors(semantic, {}, []) and not needs_vectors(GCS, {}, [ForeignKeys()])
    assert needs_vectors(GCS, {}, [SemanticKNN()])  # detected graphs count for "detected"
    vectors = measurement("vectors", [(1, 2), (1, 3), (1,)], semantic)
    cost = ReembedCost(250.0, frozenset({"vectors"}))
    assert cost.wrapper_ms(vectors) == pytest.approx(252.0) and cost.wrapper_ms(BETTER) == 2.0
    assert cost.wrapper_ms(RETRIEVER) is None
    lines = render_table([RETRIEVER, BETTER, vectors], [2, 3], choice_of(BETTER), cost)
    header, _, _, plain, reads = lines.splitlines()
    assert "ms p50" in header and "ms re-embed" in header
    assert " 2.00         2.00 " in plain and " 2.00          252 " in reads

    class Clock:
        def __init__(self) -> None:
            self.calls: list[int] = []

        def embed_documents(self, texts: list[str]) -> np.ndarray:
            self.calls.append(len(texts))
            return np.zeros((len(texts), 4))

    clock = Clock()
    assert reembedding_ms(clock, pools()) >= 0 and clock.calls == [1, 4, 4]  # load, then 2 pools


def test_pr_at_k_by_source_names_the_source_that_loses() -> None:
    objects = [CorpusObject(i, "", {}) for i in ("shop.a", "shop.b", "crm.c", "crm.d")]
    gold = (("shop.a",), ("shop.b", "crm.c"), ("crm.d",))
    sources = sources_of(objects, gold, databases=True)
    assert sources == (("shop",), ("shop", "crm"), ("crm",))
    retriever = Measurement("retriever", None, ((1,), (1, 2), (1,)))
    row = measurement("row", [(1,), (1, 2), (4,)])
    results = by_source(row, retriever, sources, 2)
    assert [(r.source, r.questions, r.wins, r.losses) for r in results] == [
        ("crm", 2, 0, 1),
        ("shop", 2, 0, 0),
    ]
    assert [r.source for r in losing(results)] == ["crm"]
    chunks = [CorpusObject("x#0", "", {"doc_id": "x"}), CorpusObject("y#0", "", {"doc_id": "y"})]
    assert source_field(chunks) == "doc_id"
    assert sources_of(chunks, (("x#0", "y#0"),), databases=False) == (("x", "y"),)
    assert sources_of([CorpusObject("z", "", {})], (("z",),), databases=False) is None


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
