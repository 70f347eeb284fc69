"""Labelled questions: what ``grapher eval``, ``grapher train`` and the wrappers'
``evaluate_retriever`` measure on, read from one JSONL format or given in Python.

A question is ``{"id", "text", "gold": [ids]}``; the gold ids name corpus objects, or -- with a
gold key -- values of one metadata key (a page, a document, a table). Every question is checked
before any model is loaded; a bad one is an ``InputError`` naming where it came from (file and
line, or the list position), the field and the value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grapher_core.errors import InputError, InputTypeError

__all__ = ["Question", "as_questions", "check_gold_known", "question_from", "read_questions"]


@dataclass(frozen=True)
class Question:
    """One labelled question: ``gold`` is empty when none is given; ``line`` is its line in
    the file it was read from (its position, from 1, when given in Python)."""

    id: str
    text: str
    gold: tuple[str, ...] = ()
    line: int = 0


def question_from(record: Mapping[str, Any], where: str, line: int, *, need_gold: bool) -> Question:
    """One question from a mapping (a JSONL line, or a dict given in Python), checked: a
    missing field, an empty text or gold list, a gold id listed twice is an ``InputError``
    naming ``where``, the field and the value."""
    fields = ("id", "text", "gold") if need_gold else ("id", "text")
    for name in fields:
        if name not in record:
            keys = ", ".join(repr(k) for k in list(record)[:8]) or "none"
            raise InputError(f"{where}: missing field {name!r} (keys found: {keys})")
    qid = record["id"]
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    if not isinstance(qid, str) or not qid:
        raise InputError(f"{where}: field 'id' must be a non-empty string, got {qid!r}")
    text = record["text"]
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: field 'text' must be a non-empty string, got {text!r}")
    value = record.get("gold")
    if value is None and not need_gold:
        return Question(qid, text, (), line)
    if not isinstance(value, (list, tuple)) or not all(isinstance(g, str) for g in value):
        raise InputError(f"{where}: field 'gold' must be a list of ids, got {value!r}")
    if not value:
        raise InputError(f"{where}: field 'gold' is empty: list the ids a perfect answer holds")
    listed: set[str] = set()
    for gold in value:
        if gold in listed:
            raise InputError(f"{where}: field 'gold': id {gold!r} is listed twice")
        listed.add(gold)
    return Question(qid, text, tuple(value), line)


def _unique(questions: list[Question], prefix: str, name: str) -> list[Question]:
    """The questions, refused when two share an id or there are none (``prefix``: where a
    question's line is named, ``name``: what they came from)."""
    seen: dict[str, int] = {}
    for question in questions:
        if question.id in seen:
            raise InputError(
                f"{prefix}{question.line}: field 'id': duplicate {question.id!r} (first on "
                f"line {seen[question.id]})"
            )
        seen[question.id] = question.line
    if not questions:
        raise InputError(f"{name} holds no question")
    return questions


def read_questions(
    path: Path, known: set[str] | None = None, *, need_gold: bool, gold_key: str | None = None
) -> list[Question]:
    """Every line of ``path`` (``{"id", "text", "gold": [ids]}``) checked before any work;
    with ``known`` (the corpus's ids, or its ``gold_key`` values), a gold id not among them
    is an ``InputError`` too. ``need_gold=False`` (``grapher rerank``) makes ``gold``
    optional."""
    from grapher_core.utils.jsonl import read_jsonl

    questions = [
        question_from(record, f"{path}:{number}", number, need_gold=need_gold)
        for number, record in read_jsonl(path, what="questions file")
    ]
    questions = _unique(questions, f"{path}:", f"questions file {path}")
    if known is not None:
        check_gold_known(questions, known, str(path), gold_key)
    return questions


def check_gold_known(
    questions: Iterable[Question], known: set[str], where: str, gold_key: str | None
) -> None:
    """Refuse a gold id that names no object (or, with ``gold_key``, no object's value of
    that key): a typo would measure a question no reranking can answer."""
    what = "in the corpus"
    if gold_key is not None:
        sample = ", ".join(repr(v) for v in sorted(known)[:3]) or "none"
        what = f"a value of metadata key {gold_key!r} in the corpus (values: {sample}, ...)"
    for question in questions:
        for gold in question.gold:
            if gold not in known:
                raise InputError(
                    f"{where}:{question.line}: field 'gold': id {gold!r} is not {what}"
                )


def as_questions(questions: Any, *, need_gold: bool = True) -> list[Question]:
    """The questions a Python caller gives: a path to a questions JSONL file, or a sequence of
    :class:`Question` or of mappings ``{"id", "text", "gold"}`` (``id`` defaults to the
    position, from 1) -- checked as a file's lines are."""
    if isinstance(questions, (str, Path)):
        return read_questions(Path(questions), need_gold=need_gold)
    if isinstance(questions, Mapping) or not isinstance(questions, Iterable):
        raise InputTypeError(
            "questions must be a path to a JSONL file or a list of {'id', 'text', 'gold'} "
            f"mappings / Question values, got {type(questions).__name__}"
        )
    out: list[Question] = []
    for position, item in enumerate(questions, start=1):
        where = f"questions[{position - 1}]"
        if isinstance(item, Question):
            item = {"id": item.id, "text": item.text, "gold": list(item.gold) or None}
        if not isinstance(item, Mapping):
            raise InputTypeError(
                f"{where}: a question is a mapping {{'id', 'text', 'gold'}} or a Question, "
                f"got {type(item).__name__}"
            )
        record = {"id": str(position), **item}
        out.append(question_from(record, where, position, need_gold=need_gold))
    return _unique(out, "questions, item ", "questions")
