"""Results by kind of question: what the graph gains where a question needs two linked objects
and what it costs where one object answers it.

A questions line may carry ``kind`` (synthesised questions do: ``pair`` or ``single``;
hand-written ones may); the evaluation's rows are then split by it. Without any ``kind`` there
is nothing to split and nothing is printed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from grapher_core.evaluation.measure import Measurement
from grapher_core.evaluation.metrics import pct

__all__ = ["KindResult", "by_kind", "kinds_table", "read_kinds"]


@dataclass(frozen=True)
class KindResult:
    """PR@K and gold@K of one kind of question: the retriever's and each row's, and the
    questions a row won and lost against the retriever there."""

    kind: str
    questions: int
    pr: Mapping[str, float]  # row name -> PR@K on these questions
    gold: Mapping[str, float]  # row name -> gold@K on these questions
    wins: Mapping[str, int]
    losses: Mapping[str, int]


def read_kinds(path: Path) -> dict[str, str]:
    """Question id -> its ``kind``, for the lines of ``path`` that give one (the file was
    checked by ``read_questions`` already; a line it cannot read is skipped)."""
    from grapher_core.utils.jsonl import read_jsonl

    kinds: dict[str, str] = {}
    for _, record in read_jsonl(path, what="questions file"):
        kind = record.get("kind")
        if isinstance(kind, str) and kind.strip():
            kinds[str(record.get("id"))] = kind.strip()
    return kinds


def by_kind(
    rows: Sequence[Measurement],
    question_ids: Sequence[str],
    kinds: Mapping[str, str],
    k: int,
) -> list[KindResult]:
    """Per kind (in order of first appearance), each row's PR@K and gold@K on its questions
    and its wins and losses against ``rows[0]`` (the retriever) on PR@K."""
    order = list(dict.fromkeys(kinds[q] for q in question_ids if q in kinds))
    results = []
    base = rows[0]
    for kind in order:
        mask = [kinds.get(q) == kind for q in question_ids]
        pr: dict[str, float] = {}
        gold: dict[str, float] = {}
        wins: dict[str, int] = {}
        losses: dict[str, int] = {}
        base_perfect = base.perfect(k)[mask]
        for row in rows:
            perfect = row.perfect(k)[mask]
            pr[row.name] = float(perfect.mean())
            total = sum(len(r) for r, m in zip(row.gold_ranks, mask, strict=True) if m)
            gold[row.name] = float(row.hits(k)[mask].sum() / total) if total else 0.0
            wins[row.name] = int(((perfect == 1) & (base_perfect == 0)).sum())
            losses[row.name] = int(((perfect == 0) & (base_perfect == 1)).sum())
        results.append(KindResult(kind, sum(mask), pr, gold, wins, losses))
    return results


def kinds_table(results: Sequence[KindResult], rows: Sequence[Measurement], k: int) -> str:
    """The breakdown as printed: one line per kind and row."""
    lines = [f"PR@{k} and gold@{k} by kind of question (retriever -> each row; +won/-lost):"]
    width = max(len(r.name) for r in rows)
    for result in results:
        lines.append(f"  {result.kind} ({result.questions} q)")
        base = rows[0].name
        for row in rows:
            name = row.name
            change = "" if name == base else f"  +{result.wins[name]}/-{result.losses[name]}"
            lines.append(
                f"    {name.ljust(width)}  PR@{k} {pct(result.pr[name]):>5}  "
                f"gold@{k} {pct(result.gold[name]):>5}{change}"
            )
    return "\n".join(lines)
