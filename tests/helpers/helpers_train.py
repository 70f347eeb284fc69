"""Tiny real data for ``grapher train``: a JSONL corpus and labelled questions built so that
each outcome is certain (see ``tests/core/cli/test_train_cli.py``), and the fast recipe the
tests train with (2 folds, 3 epochs, CPU)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["FAST", "MINILM", "write_data", "write_jsonl"]

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
FAST = ["--folds", "2", "--epochs", "3", "--lr", "0.01", "--batch-size", "4", "--top-n", "10"]
FAST += ["--k", "5", "--device", "cpu", "--no-cache"]


def write_data(folder: Path, kind: str, questions: int = 42) -> tuple[Path, Path]:
    """``corpus.jsonl`` and ``questions.jsonl`` (see the module docstring); six sources."""
    rng = random.Random(7)

    def word() -> str:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7))

    corpus: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for number in range(questions):
        qid, source = f"q{number}", f"db{number % 6}"
        first, second = word(), word()
        decoys = [f"{qid}.d{d}" for d in range(5)]
        for decoy in decoys:
            links = [other for other in decoys if other != decoy]
            meta = {"db_id": source, "links": links}
            corpus.append({"id": decoy, "text": f"{first} {second} {word()}", "metadata": meta})
        text = f"{first} target {word()}" if kind == "marked" else f"{first} {second} {first}"
        corpus.append({"id": f"{qid}.g", "text": text, "metadata": {"db_id": source}})
        rows.append({"id": qid, "text": f"{first} {second}", "gold": [f"{qid}.g"]})
    return write_jsonl(folder / "corpus.jsonl", corpus), write_jsonl(folder / "q.jsonl", rows)


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
