"""Loader for the shared benchmark format: ``<dataset>/{corpus,queries}.jsonl``.

Each line of ``corpus.jsonl`` is ``{"id", "text", "metadata"}``; each line of ``queries.jsonl``
is ``{"id", "text", "gold", ...}`` (extra fields are kept in :attr:`Query.extra`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grapher_core.candidates import CorpusObject
from grapher_core.utils.jsonl import read_jsonl

TASK_TYPES: tuple[str, ...] = ("tables", "passages", "chunks")

__all__ = [
    "TASK_TYPES",
    "Dataset",
    "Query",
    "default_benchmarks_root",
    "default_train_root",
    "detect_task_type",
    "find_datasets",
    "load_dataset",
]


@dataclass
class Query:
    """One benchmark question with its gold object ids (all must be retrieved for PR@K)."""

    id: str
    text: str
    gold: list[str]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def multi(self) -> bool:
        """True when the question needs more than one object (the paper's ">1" column)."""
        return len(self.gold) > 1


@dataclass
class Dataset:
    """A loaded benchmark folder: its corpus, its queries and its task type."""

    name: str
    path: Path
    task_type: str
    corpus: list[CorpusObject]
    queries: list[Query]

    @property
    def n_multi(self) -> int:
        return sum(1 for q in self.queries if q.multi)


def default_benchmarks_root() -> Path:
    """``$GRAPHER_BENCHMARKS`` if set, else ``../shared/benchmarks`` relative to the cwd."""
    env = os.environ.get("GRAPHER_BENCHMARKS")
    if env:
        return Path(env)
    return Path.cwd().parent / "shared" / "benchmarks"


def default_train_root() -> Path:
    """``$GRAPHER_TRAIN_DATA`` if set, else ``../shared/train_data`` relative to the cwd: the
    train splits (never the shared benchmarks' questions) that choices are made on."""
    env = os.environ.get("GRAPHER_TRAIN_DATA")
    if env:
        return Path(env)
    return Path.cwd().parent / "shared" / "train_data"


def _require_str(record: dict[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or (key == "id" and not value):
        raise ValueError(f"{where}: field {key!r} must be a non-empty string, got {value!r}")
    return value


def detect_task_type(corpus: list[CorpusObject]) -> str:
    """tables = metadata with ``foreign_keys``/``db_id``; chunks = ``doc_id`` + ``chunk_index``;
    passages otherwise. Decided by the majority of objects so one odd object does not flip it."""
    tables = chunks = 0
    for obj in corpus:
        meta = obj.metadata
        if "foreign_keys" in meta or "db_id" in meta:
            tables += 1
        elif "doc_id" in meta and "chunk_index" in meta:
            chunks += 1
    half = len(corpus) / 2
    if corpus and tables > half:
        return "tables"
    if corpus and chunks > half:
        return "chunks"
    return "passages"


def load_dataset(
    path: str | Path, limit: int | None = None, task_type: str | None = None
) -> Dataset:
    """Load one benchmark folder. ``limit`` keeps the first N queries (the corpus stays whole).

    Raises ``FileNotFoundError`` for a missing folder/file and ``ValueError`` naming the file
    and line for a malformed record or a gold id that is not in the corpus.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"benchmark folder not found: {folder}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    if task_type is not None and task_type not in TASK_TYPES:
        raise ValueError(f"task type must be one of {TASK_TYPES}, got {task_type!r}")
    corpus: list[CorpusObject] = []
    seen: set[str] = set()
    corpus_file = folder / "corpus.jsonl"
    for number, record in read_jsonl(corpus_file, what="benchmark file"):
        where = f"{corpus_file}:{number}"
        object_id = _require_str(record, "id", where)
        if object_id in seen:
            raise ValueError(f"{where}: duplicate corpus id {object_id!r}")
        seen.add(object_id)
        metadata = record.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ValueError(f"{where}: 'metadata' must be an object")
        corpus.append(CorpusObject(object_id, _require_str(record, "text", where), metadata))
    queries: list[Query] = []
    query_file = folder / "queries.jsonl"
    for number, record in read_jsonl(query_file, what="benchmark file"):
        where = f"{query_file}:{number}"
        gold = record.get("gold")
        if not isinstance(gold, list) or not gold or not all(isinstance(g, str) for g in gold):
            raise ValueError(f"{where}: 'gold' must be a non-empty list of ids")
        missing = [g for g in gold if g not in seen]
        if missing:
            raise ValueError(f"{where}: gold ids not in the corpus: {missing[:5]}")
        extra = {k: v for k, v in record.items() if k not in ("id", "text", "gold")}
        queries.append(
            Query(
                _require_str(record, "id", where),
                _require_str(record, "text", where),
                list(dict.fromkeys(gold)),
                extra,
            )
        )
        if limit is not None and len(queries) >= limit:
            break
    if not corpus:
        raise ValueError(f"{corpus_file} has no objects")
    if not queries:
        raise ValueError(f"{query_file} has no queries")
    return Dataset(folder.name, folder, task_type or detect_task_type(corpus), corpus, queries)


def find_datasets(root: str | Path) -> list[Path]:
    """A dataset folder itself, or every dataset folder directly under a root (sorted)."""
    base = Path(root)
    if not base.is_dir():
        raise FileNotFoundError(f"benchmark folder not found: {base}")
    if (base / "corpus.jsonl").is_file():
        return [base]
    found = sorted(p for p in base.iterdir() if (p / "corpus.jsonl").is_file())
    if not found:
        raise FileNotFoundError(f"no dataset (folder with corpus.jsonl) under {base}")
    return found
