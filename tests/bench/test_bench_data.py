"""Loader on the real benchmark folders, and clear errors on broken ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grapher_bench.data import (
    default_benchmarks_root,
    detect_task_type,
    find_datasets,
    load_dataset,
)


def test_real_datasets_load_with_their_task_types(benchmarks_dir: Path) -> None:
    spider = load_dataset(benchmarks_dir / "spider_dev", limit=50)
    assert spider.task_type == "tables" and len(spider.queries) == 50
    assert len(spider.corpus) == 876
    assert spider.queries[0].extra["db_id"] == "concert_singer"
    assert load_dataset(benchmarks_dir / "squad_chunks", limit=5).task_type == "chunks"
    assert load_dataset(benchmarks_dir / "musique", limit=5).task_type == "passages"
    assert (
        load_dataset(benchmarks_dir / "hotpotqa", limit=5, task_type="chunks").task_type == "chunks"
    )
    names = [p.name for p in find_datasets(benchmarks_dir)]
    assert "spider_dev" in names and "hotpotqa_sentences" in names


def _write(folder: Path, corpus: list[object], queries: list[object]) -> Path:
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus) + "\n")
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries) + "\n")
    return folder


def test_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        load_dataset(tmp_path / "nope")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n{oops\n')
    (bad / "queries.jsonl").write_text("")
    with pytest.raises(ValueError, match=r"corpus.jsonl:2"):
        load_dataset(bad)
    missing = _write(
        tmp_path / "missing", [{"id": "a", "text": "x"}], [{"id": "q", "text": "?", "gold": ["b"]}]
    )
    with pytest.raises(ValueError, match="not in the corpus"):
        load_dataset(missing)
    with pytest.raises(ValueError, match="task type"):
        load_dataset(missing, task_type="graphs")


def test_loader_keeps_extra_fields_and_dedupes_gold(tmp_path: Path) -> None:
    folder = _write(
        tmp_path / "ok",
        [{"id": "a", "text": "x", "metadata": {"doc_id": "d", "chunk_index": 0}}],
        [{"id": "q", "text": "?", "gold": ["a", "a"], "answer": "y"}],
    )
    dataset = load_dataset(folder)
    assert dataset.queries[0].gold == ["a"] and dataset.queries[0].extra == {"answer": "y"}
    assert dataset.task_type == "chunks" and dataset.n_multi == 0
    assert detect_task_type(list(dataset.corpus)) == "chunks"


def test_default_root_follows_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GRAPHER_BENCHMARKS", str(tmp_path))
    assert default_benchmarks_root() == tmp_path
    monkeypatch.delenv("GRAPHER_BENCHMARKS")
    monkeypatch.chdir(tmp_path)
    assert default_benchmarks_root() == tmp_path.parent / "shared" / "benchmarks"
