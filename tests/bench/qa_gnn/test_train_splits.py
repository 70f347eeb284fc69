"""The train-split loader (``grapher_bench.data``) and the qa-gnn train-splits verdict:
the sentence copy keeps every passage's sentences in order with the passage gold projected on
them, and the table reports differences to the prior over the seeds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grapher_bench.data import (
    load_candidate_pools,
    load_dataset,
    load_train_set,
    sentence_folder,
    split_sentences,
    train_folder,
)


def _write(folder: Path, name: str, rows: list[dict[str, object]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def train_root(tmp_path: Path) -> Path:
    folder = tmp_path / "hotpotqa" / "train"
    corpus: list[dict[str, object]] = [
        {
            "id": "A",
            "text": "A\nA is a town. It lies in the U.S. state of Ohio.",
            "metadata": {"title": "A"},
        },
        {"id": "B", "text": "B\nB was born in A! He died in 1990.", "metadata": {"title": "B"}},
        {"id": "C", "text": "C\nC is unrelated.", "metadata": {"title": "C"}},
    ]
    _write(folder, "corpus.jsonl", corpus)
    _write(
        folder,
        "queries.jsonl",
        [{"id": "q1", "text": "Where was B born?", "gold": ["B", "A"], "answer": "A"}],
    )
    _write(folder, "candidates.jsonl", [{"id": "q1", "candidates": ["A", "B", "C"]}])
    return tmp_path


def test_split_sentences_keeps_abbreviations_and_every_character() -> None:
    text = 'He served in the U.S. Army. Dr. Who aired in 1963! "Yes," he said. Done'
    parts = split_sentences(text)
    assert parts == [
        "He served in the U.S. Army.",
        "Dr. Who aired in 1963!",
        '"Yes," he said.',
        "Done",
    ]
    assert " ".join(parts) == text
    assert split_sentences("no boundary here") == ["no boundary here"]


def test_train_folder_and_env_var(train_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHER_TRAIN_DATA", str(train_root))
    assert train_folder("hotpotqa") == train_root / "hotpotqa" / "train"
    assert load_train_set("hotpotqa").name == "hotpotqa"
    assert load_candidate_pools(train_folder("hotpotqa")) == {"q1": ["A", "B", "C"]}
    with pytest.raises(FileNotFoundError, match="GRAPHER_TRAIN_DATA"):
        train_folder("musique")


def test_sentence_folder_projects_passage_gold(train_root: Path, tmp_path: Path) -> None:
    folder = sentence_folder("hotpotqa", train_root, tmp_path / "out")
    data = load_dataset(folder)
    assert data.task_type == "chunks"
    assert [o.id for o in data.corpus] == ["A#0", "A#1", "B#0", "B#1", "C#0"]
    assert data.corpus[1].text == "It lies in the U.S. state of Ohio."
    assert data.corpus[1].metadata == {
        "doc_id": "A",
        "chunk_index": 1,
        "title": "A",
        "n_chunks_in_doc": 2,
    }
    query = data.queries[0]
    assert query.gold == ["B#0", "B#1", "A#0", "A#1"]
    assert query.extra["gold_docs"] == ["B", "A"] and query.extra["answer"] == "A"
    assert sentence_folder("hotpotqa", train_root, tmp_path / "out") == folder  # written once


def test_verdict_table_reports_seed_mean_and_spread() -> None:
    pytest.importorskip("torch")
    from grapher_bench.qa_gnn.train_splits import aggregate, render

    def summary(shift: float) -> dict[str, object]:
        rows = {"dense": 0.40, "position-prior": 0.50, "qa-adjust": 0.45, "qa-gnn": 0.50 + shift}
        per_query = {k: list(np.full(10, v)) for k, v in rows.items()}
        per_query["qa-gnn"] = [0.5 + shift * 10] + [0.5] * 9
        metrics = {k: {"R@5": v} for k, v in rows.items()}
        return {"n": 10, "metrics": metrics, "per_query_R@5": per_query}

    report = {
        "runs": {str(s): {"sets": {"hotpotqa_sentences": summary(0.01 * s)}} for s in range(3)}
    }
    agg = aggregate(report)
    assert agg["hotpotqa_sentences"]["R@5"]["qa-gnn"] == pytest.approx([0.50, 0.51, 0.52])
    table = render(agg)
    row = table.splitlines()[2]
    assert row.startswith(
        "| hotpotqa_sentences | 10 | 40.0 ± 0.0 | 50.0 ± 0.0 | 45.0 ± 0.0 | 51.0 ± 1.0 |"
    )
    assert "| +1.0 ± 1.0 | -5.0 ± 0.0 | +11.0 ± 1.0 |" in row
