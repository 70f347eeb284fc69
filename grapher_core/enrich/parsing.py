"""Parsing a model's answer into a list of entity strings -- without ever calling ``eval``.

Models asked for "a valid Python list" answer with a JSON list, a Python list (single quotes),
the list inside a code fence, or the list wrapped in prose. All of these are accepted; anything
else (a dict, nested lists, a bare sentence, a truncated list) is rejected with a reason, for that
one object only. Literals are read with ``json.loads`` or ``ast.literal_eval``, which build data
and never run code.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from typing import Any

from grapher_core.errors import GraphERError

#: Longest answer we try to parse (about 8 000 tokens, 16 times the default ``max_tokens`` of
#: the LLM extractor); longer ones are rejected before any parsing, so that one pathological
#: answer costs milliseconds, never the seconds that block every other request of a run.
MAX_ANSWER_CHARS = 32_000

#: How many bracketed pieces of one answer are tried as the list (the real list comes first
#: in every answer seen; thousands of ``[x]`` pieces would cost one ``literal_eval`` each).
MAX_BRACKET_CANDIDATES = 32

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)```", re.DOTALL)


class EntityParseError(GraphERError, ValueError):
    """The answer holds no acceptable list of entity strings."""


def parse_entity_list(answer: str | None) -> list[str]:
    """The entity strings in ``answer`` (duplicates kept; the caller deduplicates).

    Accepted shapes: ``["a", "b"]``, ``['a', 'b']``, either inside a code fence or surrounded by
    prose (the first bracketed list that parses wins), and ``{"entities": [...]}`` (what a
    JSON-schema ``response_format`` produces). Numbers inside the list become strings.
    Raises ``EntityParseError`` naming the problem otherwise.
    """
    if answer is None:
        raise EntityParseError("the model returned no content")
    if not isinstance(answer, str):
        raise EntityParseError(f"the model returned {type(answer).__name__}, not text")
    text = answer.strip()
    if not text:
        raise EntityParseError("the model returned an empty answer")
    if len(text) > MAX_ANSWER_CHARS:
        raise EntityParseError(f"answer is {len(text)} characters, over {MAX_ANSWER_CHARS}")
    last_problem = "no list found in the answer"
    for candidate in _candidates(text):
        value = _literal(candidate)
        if value is _NOT_PARSED:
            continue
        try:
            return _as_entities(value)
        except EntityParseError as problem:
            last_problem = str(problem)
    raise EntityParseError(f"{last_problem}: {_preview(text)}")


_NOT_PARSED = object()


def _candidates(text: str) -> Iterator[str]:
    """Pieces of the answer that may be the list, most likely first."""
    yield text
    for match in _FENCE.finditer(text):
        yield match.group(2).strip()
    covered = -1  # only top-level brackets: never an inner list of a rejected outer one
    tried = 0
    for start, end in _bracket_spans(text):
        if start > covered and tried < MAX_BRACKET_CANDIDATES:
            covered = end
            tried += 1
            yield text[start : end + 1]


#: How many times the bracket scan restarts after an opening bracket that never closed (an
#: apostrophe in prose inside brackets opens a "string" that swallows the rest). Bounded so
#: that the whole scan stays linear in the answer's length.
MAX_RESCANS = 4


def _bracket_spans(text: str) -> list[tuple[int, int]]:
    """``(open, close)`` index pairs of matched brackets, sorted by opening index.

    One left-to-right pass keeps a stack of open brackets (quotes are strings only inside
    brackets; outside they are apostrophes of prose). A wrong closing bracket abandons every
    bracket still open. When brackets are still open at the end, the scan restarts just after
    the first of them, at most ``MAX_RESCANS`` times: the work is O(len(text)), never the
    O(len(text)^2) of matching each opening bracket separately.
    """
    spans: set[tuple[int, int]] = set()
    position = 0
    for _ in range(MAX_RESCANS + 1):
        unclosed = _scan_brackets(text, position, spans)
        if unclosed is None:
            break
        position = unclosed + 1
    return sorted(spans)


def _scan_brackets(text: str, position: int, spans: set[tuple[int, int]]) -> int | None:
    """Add the matched pairs from ``position`` on; the first bracket left open, if any."""
    closing = {"[": "]", "{": "}"}
    stack: list[tuple[int, str]] = []
    quote: str | None = None
    escaped = False
    for index in range(position, len(text)):
        char = text[index]
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in closing:
            stack.append((index, closing[char]))
        elif not stack:
            continue
        elif char in "\"'":
            quote = char
        elif char in "]}":
            if char == stack[-1][1]:
                spans.add((stack.pop()[0], index))
            else:
                stack.clear()
    return stack[0][0] if stack else None


def _literal(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(candidate)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_PARSED


def _as_entities(value: Any) -> list[str]:
    if isinstance(value, dict):
        lists = [v for k, v in value.items() if isinstance(v, list) and str(k).lower() in _KEYS]
        if len(lists) != 1:
            raise EntityParseError("answer is an object without one 'entities' list")
        value = lists[0]
    if not isinstance(value, (list, tuple)):
        raise EntityParseError(f"answer is a {type(value).__name__}, not a list")
    out: list[str] = []
    for item in value:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            out.append(str(item))
        else:
            raise EntityParseError(f"list item {item!r} is not a string")
    return out


_KEYS = {"entities", "entity", "named_entities", "result", "results", "output"}


def _preview(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")
