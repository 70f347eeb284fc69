"""Gold at the level a user thinks in (a page, a document, a table), the questions a Python
caller gives, and the cost budget the choice keeps to."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grapher_core import Candidate
from grapher_core.errors import InputError, InputTypeError
from grapher_core.evaluation.choice import choose
from grapher_core.evaluation.cost import CostBudget, Load
from grapher_core.evaluation.gold import gold_values, level_ranks, units_of
from grapher_core.evaluation.grid import Setting
from grapher_core.evaluation.measure import Measurement, Pools, ReembedCost, measure_retriever
from grapher_core.evaluation.questions import Question, as_questions


def chunk(page: str, n: int) -> Candidate:
    return Candidate(f"{page}#{n}", metadata={"source": page})


def test_a_chunk_counts_for_its_page_and_duplicates_take_places() -> None:
    # top 5 by hand: a#0 a#1 a#2 c#0 b#0 -- page a found at 1, b at 5; a's extra chunks count
    # for nothing but take places 2 and 3
    pool = [
        chunk("a", 0),
        chunk("a", 1),
        chunk("a", 2),
        chunk("c", 0),
        chunk("b", 0),
        chunk("b", 1),
    ]
    pools = Pools((("a", "b"), ("c",)), ("q1", "q2"), None, (pool, pool), "source")
    row = measure_retriever(pools)
    assert row.gold_ranks == ((1, 5), (4,))
    assert row.perfect(5).tolist() == [1, 1] and row.perfect(4).tolist() == [0, 1]
    assert row.hits(3).tolist() == [1, 0]  # gold@3: page a only (a page once)
    assert row.gold_at(4) == pytest.approx(2 / 3)  # a and c, not b
    assert row.reciprocal().tolist() == [1.0, 0.25]  # MRR: the first chunk of a gold page
    # the same pool at chunk level: gold names chunk ids
    chunks = Pools((("a#0", "b#1"),), ("q1",), None, (pool,))
    assert measure_retriever(chunks).gold_ranks == ((1, 6),)


def test_units_of_a_key_and_the_values_gold_may_name() -> None:
    assert units_of("x", {"source": "a.md"}, "source") == ("a.md",)
    assert units_of("x", {"tags": ["t1", "t2", "t1"]}, "tags") == ("t1", "t2")
    assert units_of("x", {}, "source") == () and units_of("x", {}, None) == ("x",)
    assert units_of("x", {"page": 3}, "page") == ("3",)
    assert level_ranks([("a",), (), ("b", "a")], ["b", "z"]) == (3, None)
    objects = [("1", {"source": "a"}), ("2", {"source": "b"})]
    assert gold_values(objects, "source") == {"a", "b"}
    assert gold_values(objects, None) == {"1", "2"}
    with pytest.raises(InputError, match=r"gold key 'file_path': no object carries.*'source'"):
        gold_values(objects, "file_path")


def test_questions_from_python_and_from_the_file_the_cli_reads(tmp_path: Path) -> None:
    given = [{"text": "where?", "gold": ["a"]}, Question("q2", "what?", ("b", "c"))]
    questions = as_questions(given)
    assert [(q.id, q.gold) for q in questions] == [("1", ("a",)), ("q2", ("b", "c"))]
    path = tmp_path / "questions.jsonl"
    path.write_text('{"id": "q1", "text": "where?", "gold": ["a"]}\n')
    assert as_questions(str(path)) == [Question("q1", "where?", ("a",), 1)]
    with pytest.raises(InputError, match=r"questions\[0\]: field 'gold' is empty"):
        as_questions([{"text": "where?", "gold": []}])
    with pytest.raises(InputError, match="duplicate 'x'"):
        as_questions(
            [{"id": "x", "text": "a", "gold": ["a"]}, {"id": "x", "text": "b", "gold": ["b"]}]
        )
    with pytest.raises(InputTypeError, match="a path to a JSONL file or a list"):
        as_questions({"text": "a", "gold": ["a"]})


def timed(
    name: str, ms: float, ranks: list[tuple[int | None, ...]], setting: Setting
) -> Measurement:
    return Measurement(name, setting, tuple(ranks), tuple(ms for _ in ranks))


GCS = Setting("gcs", 0.1, "rank", "detected")
GAT = Setting("gat", None, "rank", "detected")


def test_the_choice_keeps_to_the_cost_budget_and_says_what_it_set_aside() -> None:
    n = 12
    retriever = Measurement("retriever", None, tuple([(1, 4)] * n))
    default = timed("default", 1.0, [(1, 4)] * 10 + [(1, 2)] * 2, GCS)
    costly = timed("costly", 3.0, [(1, 2)] * n, GAT)  # wins 10/0: significant
    rows = [retriever, default, costly]
    reads = ReembedCost(100.0, frozenset({"costly"}))  # re-embedding the pool: 103 ms a query
    choice = choose(rows, 2, cost=reads, budget=CostBudget())
    assert choice.row is default and choice.budget_ms == pytest.approx(5.0)
    assert choice.over_budget == {"costly": pytest.approx(103.0)}
    assert (
        choice.cost_note is not None
        and "costly (103 ms per query) beats the default" in choice.cost_note
    )
    assert "no configuration within the budget beat it" in choice.reason
    assert choice.budget == "cost budget 5x the default's 1.00 ms = 5.00 ms per query"
    from grapher_core.evaluation.report import render_table

    assert render_table(rows, [2], choice, reads).splitlines()[-1].endswith("over budget")
    # with its vectors at hand (no re-embedding) it is within 5x and chosen
    assert choose(rows, 2, cost=ReembedCost(0.0, frozenset()), budget=CostBudget()).row is costly
    assert choose(rows, 2, cost=reads, budget=CostBudget.parse("200ms")).row is costly
    assert choose(rows, 2, cost=reads, budget=CostBudget.parse(None)).row is costly


def test_budgets_parse_and_the_load_is_stated() -> None:
    assert CostBudget.parse("5x") == CostBudget(5.0, None)
    assert CostBudget.parse("250ms") == CostBudget(None, 250.0)
    assert CostBudget.parse(40) == CostBudget(None, 40.0)
    assert CostBudget.parse("none").limit(3.0) is None
    for bad in ("fast", "0x", "-3ms"):
        with pytest.raises(InputError, match="cost budget"):
            CostBudget.parse(bad)
    load = Load(1.5, 2.25, 2, 3)
    assert (
        load.text() == "each latency the median of 3 passes, at load 1.50 -> 2.25 (1-min) on 2 CPUs"
    )
    assert Load.around((0.5, 0.0, 0.0), 1).before == 0.5


def test_a_timing_is_the_median_of_repeated_passes() -> None:
    from grapher_core.evaluation.measure import measure_grid

    pool = [Candidate("a", metadata={"foreign_keys": ["b"]}), Candidate("b"), Candidate("c")]
    pools = Pools((("a", "b"),), ("q",), np.ones((1, 4), dtype=np.float32), (pool,))
    result = measure_grid([GCS], {}, pools, progress=False, repeats=3)
    row = result.rows[1]
    assert len(row.latency_ms) == 1 and row.orders == (("a", "b", "c"),)
    assert row.linked == frozenset({"a", "b"})  # the ids with an edge in some graph
