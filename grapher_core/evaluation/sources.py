"""Results by source: a pooled corpus can hide a source that loses (an FK-less schema pooled
with FK-rich ones), so PR@K is broken down by where each question's gold objects live --
the database for pooled databases, the document or page for a corpus."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grapher_core.candidates import CorpusObject
from grapher_core.evaluation.gold import units_of
from grapher_core.evaluation.measure import Measurement
from grapher_core.evaluation.paired import compare_paired

__all__ = [
    "SOURCE_FIELDS",
    "SourceResult",
    "by_source",
    "losing",
    "source_field",
    "source_of_objects",
    "sources_of",
    "without_edges",
]

SOURCE_FIELDS = ("db_id", "doc_id", "source", "title")
"""Metadata fields naming an object's source, in the order they are preferred."""

NONE = "(no source)"


@dataclass(frozen=True)
class SourceResult:
    """PR@K on the questions of one source: the retriever's and the row's, and the questions
    the row won and lost against the retriever there."""

    source: str
    questions: int
    retriever: float
    row: float
    wins: int
    losses: int

    @property
    def below(self) -> bool:
        return self.row < self.retriever

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "questions": self.questions,
            "retriever": self.retriever,
            "chosen": self.row,
            "wins": self.wins,
            "losses": self.losses,
        }


def source_field(objects: Sequence[CorpusObject]) -> str | None:
    """The first of :data:`SOURCE_FIELDS` that most objects carry (at least half), else the
    one the most carry; ``None`` when none does."""
    counts = {name: sum(1 for o in objects if o.metadata.get(name)) for name in SOURCE_FIELDS}
    for name in SOURCE_FIELDS:
        if counts[name] and 2 * counts[name] >= len(objects):
            return name
    best = max(SOURCE_FIELDS, key=lambda name: counts[name])
    return best if counts[best] else None


def source_of_objects(objects: Sequence[CorpusObject], *, databases: bool) -> dict[str, str] | None:
    """Object id -> its source: the database (the id before its first '.') for pooled
    databases, else the metadata field :func:`source_field` picks; ``None`` when the objects
    name no source."""
    if databases:
        return {o.id: o.id.split(".", 1)[0] for o in objects}
    field = source_field(objects)
    if field is None:
        return None
    return {o.id: str(o.metadata.get(field) or NONE) for o in objects}


def sources_of(
    objects: Sequence[CorpusObject],
    gold: Sequence[Sequence[str]],
    *,
    databases: bool,
    gold_key: str | None = None,
) -> tuple[tuple[str, ...], ...] | None:
    """Per question, the sources of its gold (a question spanning sources belongs to each;
    with ``gold_key``, gold names values of that key, each at the source of the objects
    carrying it); ``None`` when the objects name no source."""
    source = source_of_objects(objects, databases=databases)
    if source is None:
        return None
    name_of: dict[str, str] = {}
    for o in objects:
        for unit in units_of(o.id, o.metadata, gold_key):
            name_of.setdefault(unit, source[o.id])
    return tuple(tuple(dict.fromkeys(name_of.get(i, NONE) for i in ids)) for ids in gold)


def without_edges(
    objects: Sequence[CorpusObject], *, databases: bool, seen: set[str], linked: set[str]
) -> set[str]:
    """The sources none of whose objects had an edge in any question's graph, among those
    with objects the retriever handed over (``seen``): a schema without foreign keys pooled
    with linked ones -- the graph cannot move anything there."""
    source = source_of_objects(objects, databases=databases)
    if source is None:
        return set()
    retrieved: set[str] = set()
    touched: set[str] = set()
    for object_id, name in source.items():
        if object_id in seen:
            retrieved.add(name)
            if object_id in linked:
                touched.add(name)
    return retrieved - touched


def by_source(
    row: Measurement, base: Measurement, sources: Sequence[Sequence[str]], k: int
) -> list[SourceResult]:
    """PR@``k`` of ``row`` and the retriever (``base``) per source, sources with the most
    questions first."""
    members: dict[str, list[int]] = {}
    for index, names in enumerate(sources):
        for name in names:
            members.setdefault(name, []).append(index)
    mine, theirs = row.perfect(k), base.perfect(k)
    out = []
    for name, indices in members.items():
        test = compare_paired(mine[indices], theirs[indices])
        out.append(
            SourceResult(
                name,
                len(indices),
                float(theirs[indices].mean()),
                float(mine[indices].mean()),
                test.wins,
                test.losses,
            )
        )
    return sorted(out, key=lambda r: (-r.questions, r.source))


def losing(results: Sequence[SourceResult]) -> list[SourceResult]:
    """The sources where the row is below the retriever, the largest loss in questions
    first."""
    return sorted((r for r in results if r.below), key=lambda r: r.wins - r.losses)
