"""The multi-hop TRAIN splits of ``$GRAPHER_TRAIN_DATA`` (``<set>/train/``), for the learned
rankers' training runs, so that no model is fitted on the shared dev benchmarks it is scored on.

The folders use the benchmark format (``corpus.jsonl``, ``queries.jsonl``) plus
``candidates.jsonl``, each question's own distractor pool. The sentence-level rankers (qa-gnn)
need sentence chunks; the train splits only have passage-level gold, so :func:`sentence_folder`
writes a sentence-split copy whose gold is every sentence of a gold passage (a proxy label,
stated wherever it is used).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from grapher_bench.data import Dataset, default_train_root, load_dataset
from grapher_core.utils.jsonl import read_jsonl

__all__ = [
    "MULTIHOP_TRAIN_SETS",
    "load_candidate_pools",
    "load_train_set",
    "sentence_folder",
    "split_sentences",
    "train_folder",
]

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
