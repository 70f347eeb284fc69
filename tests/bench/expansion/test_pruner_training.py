"""The pruner trainer's train-split mode: datasets read from ``$GRAPHER_TRAIN_DATA`` and one
``all`` pruner per seed, each loadable and recorded as trained on the train splits."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from grapher_bench.expansion import pruner_training
from grapher_core.learned.pruner import LearnedPruner, PruningExample


def test_folder_reads_the_train_split_under_the_env_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    split = tmp_path / "musique" / "train"
    split.mkdir(parents=True)
    (split / "corpus.jsonl").write_text("{}\n")
    monkeypatch.setenv("GRAPHER_TRAIN_DATA", str(tmp_path))
    args = argparse.Namespace(train_splits=True, data=None)
    assert pruner_training._folder(args, "musique") == split
    bench = argparse.Namespace(train_splits=False, data=Path("/b"))
    assert pruner_training._folder(bench, "musique") == Path("/b/musique")


def test_main_needs_data_without_train_splits() -> None:
    with pytest.raises(SystemExit):
        pruner_training.main(["--datasets", "x", "--out", "o"])


def test_one_pruner_per_seed(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    examples = []
    for k in range(30):
        labels = (rng.random(6) < 0.3).astype(np.float32)
        feats = rng.random((6, 8)).astype(np.float32) + labels[:, None]
        examples.append(PruningExample(f"q{k}", f"train/q{k}", feats, labels, 2))
    runs = {"all": ["hotpotqa", "musique"]}
    data = {"hotpotqa": examples[:15], "musique": examples[15:]}
    for seed in (0, 1):
        out = tmp_path / f"seed{seed}"
        summary = pruner_training._train_runs(data, runs, out, seed, True)
        assert summary[f"seed{seed}/all"]["trained_on"] == ["hotpotqa/train", "musique/train"]
        assert LearnedPruner(out / "all") is not None
        assert json.loads((out / "all.json").read_text())


def test_verdict_reads_the_seed_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = {f"q{i}": {"PR@5": float(i < 5), "PR@10": float(i < 6)} for i in range(10)}
    for seed, lost in ((0, 0), (1, 1)):
        pruned = {q: dict(v) for q, v in plain.items()}
        if lost:
            pruned["q0"] = {"PR@5": 0.0, "PR@10": 0.0}
        folder = tmp_path / f"seed{seed}" / "musique" / "hybrid"
        folder.mkdir(parents=True)
        rows = {"expand-gcs": plain, "expand-gcs[prune=learned]": pruned}
        (folder / "per_query.json").write_text(json.dumps(rows))
    assert pruner_training.main(["--verdict", str(tmp_path), "--datasets", "musique"]) == 0
    row = capsys.readouterr().out.splitlines()[2]
    assert row.startswith("| musique | 10 | 50.0 ± 0.0 | 45.0 ± 7.1 | -5.0 ± 7.1 | 60.0 ± 0.0 |")
    assert row.endswith("| 1 (0/0), 1 (0/1) |")
