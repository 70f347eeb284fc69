"""Loader for the shared benchmark format: ``<dataset>/{corpus,queries}.jsonl``.

Each line of ``corpus.jsonl`` is ``{"id", "text", "metadata"}``; each line of ``queries.jsonl``
is ``{"id", "text", "gold", ...}`` (extra fields are kept in :attr:`Query.extra`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grapher_core.candidates import CorpusObject
from grapher_core.utils.jsonl import read_jsonl

TASK_TYPES: tuple[str, ...] = ("tables", "passages", "chunks")

__all__ = [
    "MULTIHOP_TRAIN_SETS",
    "TASK_TYPES",
    "Dataset",
    "Query",
    "add_train_split_arguments",
    "default_benchmarks_root",
    "default_train_root",
    "detect_task_type",
    "find_datasets",
    "load_candidate_pools",
    "load_dataset",
    "load_train_set",
    "sentence_folder",
    "split_sentences",
    "train_folder",
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


# -- the multi-hop TRAIN splits ------------------------------------------------------------
# The multi-hop TRAIN splits of ``$GRAPHER_TRAIN_DATA`` (``<set>/train/``), for the learned
# rankers' training runs, so that no model is fitted on the shared dev benchmarks it is scored on.
#
# The folders use the benchmark format (``corpus.jsonl``, ``queries.jsonl``) plus
# ``candidates.jsonl``, each question's own distractor pool. The sentence-level rankers (qa-gnn)
# need sentence chunks; the train splits only have passage-level gold, so :func:`sentence_folder`
# writes a sentence-split copy whose gold is every sentence of a gold passage (a proxy label,
# stated wherever it is used).

MULTIHOP_TRAIN_SETS: tuple[str, ...] = ("hotpotqa", "2wikimultihopqa", "musique")
#: a sentence ends at . ! ? (optionally closing quote/bracket) before a capital, digit or quote
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z0-9\"'(])")
#: abbreviations a boundary must not follow (``U.S. Army``, ``Dr. Who``, ``St. Louis``)
_ABBREV = re.compile(r"(?:\b[A-Z]\.|\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|No|Vol|vs|Co|Inc|Ltd|Mt)\.)$")


def train_folder(name: str, root: str | Path | None = None) -> Path:
    """``<root>/<name>/train`` (root: ``$GRAPHER_TRAIN_DATA``, default ``../shared/train_data``)."""
    base = Path(root) if root is not None else default_train_root()
    folder = base / name / "train"
    if not (folder / "corpus.jsonl").is_file():
        raise FileNotFoundError(f"no train split at {folder} (set GRAPHER_TRAIN_DATA)")
    return folder


def load_train_set(name: str, root: str | Path | None = None, limit: int | None = None) -> Dataset:
    """One train split as a :class:`Dataset` named after its set (the folder is ``train``)."""
    dataset = load_dataset(train_folder(name, root), limit=limit)
    dataset.name = name
    return dataset


def load_candidate_pools(folder: str | Path) -> dict[str, list[str]]:
    """``candidates.jsonl``: query id -> that question's own distractor pool (gold inside)."""
    path = Path(folder) / "candidates.jsonl"
    return {str(r["id"]): [str(c) for c in r["candidates"]] for _, r in read_jsonl(path)}


def split_sentences(paragraph: str) -> list[str]:
    """A regex sentence split (the train splits lost the original sentence boundaries)."""
    parts: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(paragraph):
        if _ABBREV.search(paragraph[start : match.start()]):
            continue
        head = paragraph[start : match.end()].strip()
        if head:
            parts.append(head)
        start = match.end()
    tail = paragraph[start:].strip()
    if tail:
        parts.append(tail)
    return parts or [paragraph.strip()]


def _body(text: str, title: str) -> str:
    """The passage text without its ``"<title>\\n"`` prefix."""
    head, sep, rest = text.partition("\n")
    return rest if sep and head.strip() == title.strip() else text


def sentence_folder(
    name: str, root: str | Path | None = None, out_root: str | Path | None = None
) -> Path:
    """A ``*_sentences``-format copy of one train split, written once under ``out_root``
    (default ``~/.cache/grapher/train_sentences``): ids ``<passage id>#<k>``, metadata
    ``doc_id``/``chunk_index``/``title``/``n_chunks_in_doc``; gold = every sentence of a gold
    passage (the proxy label), ``gold_docs`` = the passage gold."""
    dataset = load_train_set(name, root)
    base = (
        Path(out_root) if out_root is not None else Path.home() / ".cache/grapher/train_sentences"
    )
    folder = base / f"{name}_sentences"
    if (folder / "queries.jsonl").is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    sentences: dict[str, list[str]] = {}
    rows = []
    for obj in dataset.corpus:
        title = str(obj.metadata.get("title") or obj.id)
        parts = split_sentences(_body(obj.text, title))
        sentences[obj.id] = [f"{obj.id}#{k}" for k in range(len(parts))]
        for k, text in enumerate(parts):
            meta = {"doc_id": obj.id, "chunk_index": k, "title": title}
            rows.append(
                {
                    "id": f"{obj.id}#{k}",
                    "text": text,
                    "metadata": meta | {"n_chunks_in_doc": len(parts)},
                }
            )
    queries = [
        {
            "id": q.id,
            "text": q.text,
            "gold": [s for g in q.gold for s in sentences[g]],
            "gold_docs": q.gold,
            **q.extra,
        }
        for q in dataset.queries
    ]
    for file, records in (("corpus.jsonl", rows), ("queries.jsonl", queries)):
        tmp = folder / f"{file}.tmp"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in records))
        tmp.replace(folder / file)
    return folder


def add_train_split_arguments(
    parser: Any, dev_sets: Sequence[str], *, top_n: int, epochs: int
) -> None:
    """The options every train-splits study reads: where the data is, which train and dev
    sets, the seeds, the pool size and the epochs (the studies add their own after these)."""
    parser.add_argument("--train-data", type=Path, default=None, help="$GRAPHER_TRAIN_DATA")
    parser.add_argument("--benchmarks", type=Path, default=None, help="$GRAPHER_BENCHMARKS")
    parser.add_argument("--sets", default=",".join(MULTIHOP_TRAIN_SETS))
    parser.add_argument("--dev", default=",".join(dev_sets))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--top-n", type=int, default=top_n)
    parser.add_argument("--epochs", type=int, default=epochs)
