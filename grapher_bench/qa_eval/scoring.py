"""LLM-free answer measures (SQuAD exact match and token F1, answer in context) and the
lenient reading of the judge's verdict.

The SQuAD normalisation is the official one (lower case, punctuation and the articles
a/an/the removed, whitespace collapsed); a prediction is scored against the answer and each
alias and the best score counts.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = [
    "answer_in_text",
    "best_exact_match",
    "best_f1",
    "exact_match",
    "normalize_answer",
    "parse_judgement",
    "token_f1",
]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, truth: str) -> float:
    """1.0 when the normalised strings are equal."""
    return float(normalize_answer(prediction) == normalize_answer(truth))


def token_f1(prediction: str, truth: str) -> float:
    """SQuAD token F1 between the normalised strings."""
    predicted = normalize_answer(prediction).split()
    gold = normalize_answer(truth).split()
    if not predicted or not gold:
        return float(predicted == gold)
    common = Counter(predicted) & Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def _truths(truths: Iterable[str]) -> list[str]:
    out = [t for t in truths if isinstance(t, str) and t.strip()]
    if not out:
        raise ValueError("no ground-truth answer to score against")
    return out


def best_exact_match(prediction: str, truths: Sequence[str]) -> float:
    """Exact match against the answer and its aliases (the best one counts)."""
    return max(exact_match(prediction, t) for t in _truths(truths))


def best_f1(prediction: str, truths: Sequence[str]) -> float:
    """Token F1 against the answer and its aliases (the best one counts)."""
    return max(token_f1(prediction, t) for t in _truths(truths))


def answer_in_text(text: str, truths: Sequence[str]) -> bool:
    """True when a normalised answer or alias occurs in the normalised text, on word bounds."""
    haystack = f" {normalize_answer(text)} "
    return any(
        f" {needle} " in haystack
        for needle in (normalize_answer(t) for t in _truths(truths))
        if needle
    )


_DECISION = re.compile(
    r"decision\W{0,3}(?:is|was|:|=|-)?\W{0,3}(?:is\W{0,3})?[\"'*`(\[]*\s*(yes|no)\b", re.IGNORECASE
)
_BARE = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
_VERDICT = re.compile(
    r"\b(?:answer is|verdict\W{0,3}|so the answer is)\W{0,3}(yes|no)\b", re.IGNORECASE
)


def parse_judgement(reply: str | None) -> bool | None:
    """The judge's yes/no, read leniently; ``None`` when the reply holds no clear decision.

    Accepted: ``Decision: yes``, ``**Decision:** No``, ``the decision is "yes"``, a reply that
    starts with yes/no, ``the verdict: no``. The last decision in the reply wins (models
    sometimes restate the format before deciding). An unparsed reply is never read as "no".
    """
    if not reply or not reply.strip():
        return None
    for pattern in (_DECISION, _VERDICT):
        found = pattern.findall(reply)
        if found:
            return found[-1].lower() == "yes"
    bare = _BARE.match(reply)
    if bare:
        return bare.group(1).lower() == "yes"
    return None
