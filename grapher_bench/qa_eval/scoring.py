"""LLM-free answer measures (SQuAD exact match and token F1, gold in answer, answer in
context), what a reply answers, and the lenient reading of the judge's verdict.

Every comparison goes through ONE normalisation, :func:`normalize_answer` -- SQuAD's official
one (lower case, ASCII punctuation and the articles a/an/the removed, whitespace collapsed) --
so "gold in answer" and "answer in context" are the same test on two texts and can be compared
with each other and with EM/F1. A prediction is scored against the answer and each alias and the
best score counts. Known limit, shared with SQuAD's script: non-ASCII punctuation stays, so
"661–80" (an en dash) does not contain "661".
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

from grapher_core.errors import InputError

__all__ = [
    "answer_in_context",
    "answer_in_text",
    "best_exact_match",
    "best_f1",
    "exact_match",
    "final_answer",
    "gold_in_answer",
    "is_refusal",
    "normalize_answer",
    "parse_judgement",
    "strip_reasoning",
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
        raise InputError("no ground-truth answer to score against")
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


def gold_in_answer(answer: str, truths: Sequence[str]) -> bool:
    """Did the model's answer state the gold answer? :func:`answer_in_text` on the answer."""
    return answer_in_text(answer, truths)


def answer_in_context(context: str, truths: Sequence[str]) -> bool:
    """Was the gold answer in what the model read? The same test, so the same normalisation."""
    return answer_in_text(context, truths)


# ------------------------------------------------------------------------------ model replies

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"<think(?:ing)?>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_ANSWER_LABEL = re.compile(r"^[\s*_#>]*(?:final\s+)?answer[\s*_]*[:：][\s*_]*", re.IGNORECASE)


def strip_reasoning(reply: str) -> str:
    """The reply without its ``<think>...</think>`` reasoning.

    An unclosed block (a reply cut while thinking) is dropped to the end, and text before a
    lone closing tag (chat templates that open the block in the prompt) is dropped: reasoning
    quotes the context and restates the format, so it is neither the answer nor the verdict.
    """
    text = _THINK_BLOCK.sub(" ", reply)
    closing = list(_THINK_CLOSE.finditer(text))
    if closing:
        text = text[closing[-1].end() :]
    opened = _THINK_OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    return text.strip()


def final_answer(reply: str) -> str:
    """What an answer reply answers: reasoning dropped, a leading ``Answer:`` label removed
    (A.1.2 ends with "Answer:" and models often repeat it), whitespace trimmed. This is the
    text scored and the text the judge reads."""
    return _ANSWER_LABEL.sub("", strip_reasoning(reply), count=1).strip()


_REFUSALS = (
    "enough information",  # A.1.2's own sentence and its paraphrases
    "insufficient information",
    "not enough context",
    "i dont know",
    "i do not know",
    "cannot answer",
    "cannot be answered",
    "unable to answer",
    "cannot be determined",
    "cannot determine",
    "no information",
)


def is_refusal(answer: str) -> bool:
    """A.1.2's refusal sentence or a close paraphrase of it (SQuAD-normalised)."""
    text = normalize_answer(answer)
    return any(phrase in text for phrase in _REFUSALS)


_WORDS: dict[str, bool] = {
    "yes": True,
    "no": False,
    "correct": True,
    "incorrect": False,
    "true": True,
    "false": False,
    "是": True,
    "是的": True,
    "正确": True,
    "对": True,
    "否": False,
    "不是": False,
    "不正确": False,
    "错误": False,
    "不对": False,
}
_CJK_VALUE = r"(不正确|不是|不对|是的|正确|错误|是|否|对)"
_LABEL = r"(?:decision|verdict|judge?ment|evaluation|conclusion)"
_LABELLED = re.compile(
    rf"\b(?:final\s+)?{_LABEL}\b[\"']?\s*(?:is|was)?\s*[:=\-–—]?\s*"
    r"(?:that\s+)?(?:the\s+(?:generated\s+)?answer\s+is\s+)?[\"'(\[<]*\s*"
    r"(yes|no|correct|incorrect|true|false)\b",
    re.IGNORECASE,
)
_CJK_LABELLED = re.compile(rf"(?:决定|判断|结论|裁决|评估)\s*[:：]?\s*{_CJK_VALUE}")
_ANSWER_LINE = re.compile(
    r"^\s*(?:final\s+)?answer\s*[:=\-]\s*[\"'(\[]*(yes|no|correct|incorrect)\b",
    re.IGNORECASE | re.MULTILINE,
)
_SO_ANSWER = re.compile(r"\b(?:so\s+)?the\s+(?:final\s+)?answer\s+is\s*[:\"']*\s*(yes|no)\b", re.I)
_ANSWER_IS = re.compile(
    r"\b(?:the\s+)?(?:generated\s+)?(?<!truth\s)answer\s+is\s+(not\s+)?"
    r"(correct|incorrect|right|wrong|accurate|inaccurate)\b",
    re.IGNORECASE,
)
_ECHOED = re.compile(r"\s*[>\"']*\s*(?:or|/|\|)\s*[<\"']*\s*(?:yes|no)\b", re.IGNORECASE)
_CONDITIONAL = re.compile(r"\b(?:if|whether|unless|should|would|could)\b", re.IGNORECASE)
_JSON_OBJECT = re.compile(r"\{[^{}]{0,500}\}")
_JSON_KEYS = ("decision", "verdict", "judgement", "judgment", "correct", "is_correct", "answer")
_BARE_START = re.compile(
    r"^\W*(yes|no)(?:(?=\s*(?:[.,!;:)\-–—]|$))"
    r"|\s+(?=(?:the|it|this|that|because|since|as|both|they|he|she|its|there|i)\b))",
    re.IGNORECASE,
)
_CJK_START = re.compile(rf"^\W*{_CJK_VALUE}(?=\W|$)")
_MARKUP = str.maketrans({"*": " ", "`": " ", "#": " ", "：": ":", "“": '"', "”": '"', "’": "'"})


def _value(word: str) -> bool | None:
    return _WORDS.get(word.strip().strip(".!。！\"'").lower())


def _conditional(text: str, position: int) -> bool:
    """The match sits in a sentence that begins "if"/"whether"/..., i.e. restates the rule."""
    sentence = re.split(r"[.!?\n]", text[:position])[-1]
    return bool(_CONDITIONAL.search(sentence))


def _json_verdicts(text: str) -> list[tuple[int, bool]]:
    """Verdicts written as a JSON object: ``{"decision": "yes"}``, ``{"correct": true}``."""
    found: list[tuple[int, bool]] = []
    for match in _JSON_OBJECT.finditer(text):
        try:
            data = json.loads(match.group(0))
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        keys = {str(k).lower(): v for k, v in data.items()}
        for key in _JSON_KEYS:
            value = keys.get(key)
            verdict = value if isinstance(value, bool) else _value(str(value or ""))
            if verdict is not None:
                found.append((match.start(), verdict))
                break
    return found


def parse_judgement(reply: str | None) -> bool | None:
    """The judge's yes/no, read leniently; ``None`` when the reply holds no clear decision.

    Explicit decisions, wherever they stand: ``Decision: yes``, ``**Decision:** No``, ``the
    decision is "yes"``, ``Verdict - correct``, ``Final answer: no`` on its own line, ``so the
    answer is yes``, ``the generated answer is (not) correct``, a JSON object
    (``{"decision": "yes"}``, ``{"correct": false}``), ``决定：是``; the last one wins (models
    restate the format before deciding). A format echo (``Decision: <yes or no>``) and a
    sentence that states the rule (``if ..., the decision is yes``) are not decisions. With no
    explicit decision: a reply that is one verdict word (``Yes.``, ``**No**``, ``Correct``,
    ``是``), or that starts with yes/no (``Yes, because ...``; not ``No information ...``).
    ``<think>`` blocks are ignored. An unparsed reply is never read as "no".
    """
    if not reply or not reply.strip():
        return None
    raw = strip_reasoning(reply)
    if not raw:
        return None
    text = raw.translate(_MARKUP)
    found: list[tuple[int, bool]] = _json_verdicts(raw)
    for pattern in (_LABELLED, _ANSWER_LINE, _SO_ANSWER, _CJK_LABELLED):
        for match in pattern.finditer(text):
            if _ECHOED.match(text, match.end()) or _conditional(text, match.start()):
                continue
            verdict = _value(match.group(1))
            if verdict is not None:
                found.append((match.start(), verdict))
    for match in _ANSWER_IS.finditer(text):
        if not _conditional(text, match.start()):
            positive = match.group(2).lower() in ("correct", "right", "accurate")
            found.append((match.start(), positive != bool(match.group(1))))
    if found:
        return max(found, key=lambda item: item[0])[1]
    whole = _value(re.sub(r"[\s\W]+$", "", text.strip()).strip(" \"'([")) if text else None
    if whole is not None:
        return whole
    for pattern in (_BARE_START, _CJK_START):
        bare = pattern.match(text.strip())
        if bare:
            return _value(bare.group(1))
    return None
