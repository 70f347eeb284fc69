"""The words of question synthesis: the prompts, the lenient reading of a model's answer, and
the identifiers a question must not name.

An answer is read without ``eval``: a JSON object's ``question`` (the format asked for), a JSON
string, or else the first line that reads as a question, with the prefixes and quotes small
models add stripped. A question that names an object's identifier verbatim (a table id such as
``optuna.trial_params``, a page path such as ``ref/surface.html``) is trivially retrievable by
its words, not by what it asks: it is sent back once to be rewritten in plain words, and
dropped when the rewrite still names one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence

from grapher_core.candidates import CorpusObject

__all__ = [
    "PROMPT_VERSION",
    "PROMPT_WORDS",
    "identifiers",
    "named_identifier",
    "pair_prompt",
    "parse_question",
    "rewrite_prompt",
    "single_prompt",
]

PROMPT_VERSION = "synth-v1"
"""Goes into the answer cache's key: change it whenever a prompt below changes."""

MAX_OBJECT_CHARS = 1500
"""Characters of each object's text put in a prompt (small local models have short contexts)."""

_RULES = (
    "Rules: ask it the way a user of this collection would, in plain words; do not quote file "
    "names, page paths, table names with underscores or any other identifier; at most 35 "
    'words. Answer with JSON only: {"question": "..."}'
)


def _excerpt(obj: CorpusObject) -> str:
    text = obj.text.strip()
    return text if len(text) <= MAX_OBJECT_CHARS else text[:MAX_OBJECT_CHARS] + " ..."


def pair_prompt(a: CorpusObject, b: CorpusObject) -> str:
    """Ask for one question that needs both objects."""
    return (
        "You write test questions for a search system over a collection of documents or "
        "database tables. Here are two related items of the collection.\n\n"
        f"Item A:\n{_excerpt(a)}\n\nItem B:\n{_excerpt(b)}\n\n"
        "Write one question whose answer needs information from BOTH item A and item B "
        "(neither alone is enough).\n" + _RULES
    )


def single_prompt(a: CorpusObject) -> str:
    """Ask for one question this object alone answers (a control)."""
    return (
        "You write test questions for a search system over a collection of documents or "
        f"database tables. Here is one item of the collection.\n\nItem:\n{_excerpt(a)}\n\n"
        "Write one question that this item alone answers.\n" + _RULES
    )


def rewrite_prompt(question: str, names: Sequence[str]) -> str:
    """Ask for the same question without the identifiers it named."""
    listed = ", ".join(f'"{name}"' for name in names)
    return (
        f"Rewrite this question so that it does not contain {listed}: describe what they are "
        "in plain words instead, keep the meaning, at most 35 words.\n\n"
        f"Question: {question}\n\n"
        'Answer with JSON only: {"question": "..."}'
    )


_FENCE = re.compile(r"```[A-Za-z]*\n?(.*?)```", re.DOTALL)
_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)
_PREFIX = re.compile(
    r"^\s*(?:[-*>\d.)\s]+)?(?:\*\*)?(?:question|q)\s*\d*\s*[:.-]\s*(?:\*\*)?", re.I
)
_BULLET = re.compile(r"^\s*(?:[-*>]|\d+[.)])\s+")
_MIN_WORDS = 3
_MAX_CHARS = 400


_QUESTION_FIELD = re.compile(r'"question"\s*:\s*"((?:[^"\\]|\\.)+)', re.I)
"""A ``"question": "..."`` field even in JSON cut short or broken (a missing ``"}``)."""


def _from_json(text: str) -> str | None:
    found = _from_json_values(text)
    if found is None and (field := _QUESTION_FIELD.search(text)) is not None:
        found = field.group(1).replace('\\"', '"')
    return found


def _from_json_values(text: str) -> str | None:
    for piece in [text, *_OBJECT.findall(text)]:
        try:
            value = json.loads(piece)
        except ValueError:
            continue
        if isinstance(value, str):
            return value
        if isinstance(value, Mapping):
            found = value.get("question")
            if isinstance(found, str):
                return found
            strings = [v for v in value.values() if isinstance(v, str)]
            if len(strings) == 1:
                return strings[0]
    return None


_ASKING = re.compile(
    r"^(what|which|who|whom|whose|how|when|where|why|is|are|was|were|does|do|did|can|could|"
    r"should|list|name|find|show|give|describe|explain|compare)\b",
    re.I,
)


def _from_lines(text: str) -> str | None:
    """The first line holding a question mark, else the first line that opens like a
    question or a request ("List ...", "Which ..."); a refusal or a remark is none."""
    lines = [
        _PREFIX.sub("", _BULLET.sub("", line)).strip().strip("\"'`*") for line in text.splitlines()
    ]
    asked = [line for line in lines if "?" in line]
    if asked:
        return asked[0]
    return next((line for line in lines if _ASKING.match(line)), None)


def _clean(question: str) -> str | None:
    question = _PREFIX.sub("", _BULLET.sub("", question)).strip().strip("\"'`*").strip()
    question = " ".join(question.split())
    if len(question) > _MAX_CHARS or len(question.split()) < _MIN_WORDS:
        return None
    return question


def parse_question(answer: str | None) -> str | None:
    """The question in a model's answer, or ``None`` when there is none worth asking."""
    if not answer or not answer.strip():
        return None
    text = answer.strip()
    fenced = _FENCE.search(text)
    if fenced is not None:
        text = fenced.group(1).strip() or text
    found = _from_json(text)
    if found is None:
        found = _from_lines(text)
    return None if found is None else _clean(found)


PROMPT_WORDS = ("Item A", "Item B", "both items", "this item", "the item", "given collection")
"""The prompt's own words: a question that says "as described in Item A" is not one a user
asks, so these are treated like identifiers (rewritten away, else dropped)."""

NAME_FIELDS = ("table", "table_id", "doc_id", "source", "file_path", "file_name", "url")
"""Metadata fields whose values name an object (besides its id)."""
_IDENTIFIER_MARKS = re.compile(r"[_./#:\\]")


def identifiers(obj: CorpusObject, fields: Iterable[str] = NAME_FIELDS) -> list[str]:
    """The names of ``obj`` a question must not quote: its id and the values of its name
    fields (with a path's last part) that look like identifiers -- holding ``_ . / # :`` --
    not plain words (a table named ``trials`` may be asked about as "trials")."""
    values = [obj.id, *(obj.metadata.get(field) for field in fields)]
    found: list[str] = []
    for value in values:
        if not isinstance(value, str):
            continue
        for name in (value, value.rsplit("/", 1)[-1].split("#", 1)[0]):
            name = name.strip()
            if len(name) >= 4 and _IDENTIFIER_MARKS.search(name) and name not in found:
                found.append(name)
    return found


def named_identifier(question: str, names: Iterable[str]) -> list[str]:
    """The names in ``names`` that ``question`` quotes verbatim (case-insensitive, as whole
    words)."""
    lowered = question.lower()
    return [
        name
        for name in names
        if re.search(r"(?<![\w])" + re.escape(name.lower()) + r"(?![\w])", lowered)
    ]
