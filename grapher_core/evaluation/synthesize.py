"""Questions when the user has none: an OpenAI-compatible LLM writes them from the corpus.

For pairs of linked objects (:mod:`grapher_core.evaluation.synthesize_plan`) it writes a
question that needs both; for single objects, a control question that one answers. Gold is
known by construction. Questions naming an object's identifier are rewritten once, else
dropped (:mod:`grapher_core.evaluation.synthesize_text`); so are exact repeats. Each question
is a line of the same JSONL ``grapher eval --questions`` reads, with ``kind`` (``pair`` /
``single``) and ``via`` (the edge) beside ``id``, ``text`` and ``gold``: a user reads, edits
and evaluates it like a hand-written file, and the report breaks the result down by ``kind``.

The model is reached through the enrichment client (:class:`~grapher_core.enrich.completion.
OpenAITextCompleter`: timeouts, retries, bounded concurrency) and its runner, so every answer
is kept in the SQLite reply cache as soon as it arrives: a killed run resumes where it stopped
and a rerun with the same seed asks nothing again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grapher_core.candidates import CorpusObject
from grapher_core.errors import InputError
from grapher_core.evaluation.synthesize_plan import PAIR, Seed, plan_seeds
from grapher_core.evaluation.synthesize_text import (
    PROMPT_VERSION,
    PROMPT_WORDS,
    identifiers,
    named_identifier,
    pair_prompt,
    parse_question,
    rewrite_prompt,
    single_prompt,
)

__all__ = [
    "Synthesis",
    "SyntheticQuestion",
    "synthesis_client",
    "synthesize_questions",
    "write_questions",
]


@dataclass(frozen=True)
class SyntheticQuestion:
    """One written question: its gold by construction, its kind and the edge it spans."""

    id: str
    text: str
    gold: tuple[str, ...]
    kind: str
    via: str = ""
    rewritten: bool = False

    def to_record(self) -> dict[str, Any]:
        """The questions-file line (what ``grapher eval --questions`` reads)."""
        record: dict[str, Any] = {"id": self.id, "text": self.text, "gold": list(self.gold)}
        record["kind"] = self.kind
        if self.via:
            record["via"] = self.via
        return record


@dataclass(frozen=True)
class Synthesis:
    """The questions kept and what happened to the others."""

    questions: tuple[SyntheticQuestion, ...]
    asked: int
    pairs_asked: int
    failed: Sequence[str] = ()  # seeds whose answer did not arrive or held no question
    rewritten: int = 0  # named an identifier, rewritten without it
    dropped_named: Sequence[str] = ()  # still named one after the rewrite
    dropped_repeats: int = 0
    cached: int = 0
    notes: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        """One line for a log or a report."""
        pairs = sum(1 for q in self.questions if q.kind == PAIR)
        return (
            f"{len(self.questions)} of {self.asked} questions kept ({pairs} pair, "
            f"{len(self.questions) - pairs} single); {len(self.failed)} without a usable "
            f"answer, {self.rewritten} rewritten and {len(self.dropped_named)} dropped for "
            f"naming an identifier (or the prompt's items), {self.dropped_repeats} repeats "
            "dropped; "
            f"{self.cached} answers from the cache"
        )


def synthesis_client(model: str, **options: Any) -> Any:
    """The enrichment client set up for synthesis: temperature 0, the synthesis prompt
    version in the cache key. ``options`` go to :class:`OpenAITextCompleter` (``base_url``,
    ``api_key``, ``timeout``, ``concurrency``, ``max_retries``, ...)."""
    from grapher_core.enrich.completion import OpenAITextCompleter

    options.setdefault("temperature", 0.0)
    options.setdefault("max_output_tokens", 120)
    return OpenAITextCompleter(model, version=PROMPT_VERSION, **options)


def _ask(client: Any, prompts: Sequence[str], cache: Any, progress: bool, label: str) -> Any:
    from grapher_core.enrich.runner import run_extraction

    return run_extraction(prompts, client, cache=cache, progress=progress, label=label)


def _answers(run: Any) -> list[str | None]:
    from grapher_core.enrich.completion import completion_text

    return [completion_text(result) for result in run.results]


@dataclass
class _Draft:
    seed: Seed
    names: list[str]
    text: str | None = None
    rewritten: bool = False


def _rewrite(client: Any, drafts: list[_Draft], cache: Any, progress: bool) -> int:
    """Send the drafts that name an identifier back once; returns how many were cached."""
    named = [(d, hits) for d in drafts if d.text and (hits := named_identifier(d.text, d.names))]
    if not named:
        return 0
    prompts = [rewrite_prompt(d.text or "", hits) for d, hits in named]
    run = _ask(client, prompts, cache, progress, "rewriting questions that name an identifier")
    for (draft, _), answer in zip(named, _answers(run), strict=True):
        draft.text, draft.rewritten = parse_question(answer), True
    return int(run.n_cached)


def synthesize_questions(
    corpus: Sequence[CorpusObject],
    client: Any,
    n: int,
    *,
    pair_share: float = 2 / 3,
    seed: int = 0,
    cache: Any = None,
    progress: bool = False,
    id_prefix: str = "syn",
) -> Synthesis:
    """``n`` questions about ``corpus`` written by ``client`` (:func:`synthesis_client`, or
    any extractor of the enrichment runner whose result holds the answer's text), about
    ``round(n * pair_share)`` linked pairs and the rest single objects; ``cache`` is an
    :class:`~grapher_core.enrich.cache.EntityCache` for the answers."""
    objects = {o.id: o for o in corpus}
    seeds = plan_seeds(list(corpus), n, pair_share=pair_share, seed=seed)
    if not seeds:
        raise InputError("no object of the corpus has text enough to write a question about")
    drafts = [
        _Draft(s, [*PROMPT_WORDS, *(name for i in s.ids for name in identifiers(objects[i]))])
        for s in seeds
    ]
    prompts = [
        pair_prompt(*(objects[i] for i in s.ids))
        if s.kind == PAIR
        else single_prompt(objects[s.ids[0]])
        for s in seeds
    ]
    run = _ask(client, prompts, cache, progress, "writing questions")
    for draft, answer in zip(drafts, _answers(run), strict=True):
        draft.text = parse_question(answer)
    cached = int(run.n_cached) + _rewrite(client, drafts, cache, progress)
    return _kept(drafts, seeds, cached, id_prefix)


def _kept(drafts: list[_Draft], seeds: list[Seed], cached: int, prefix: str) -> Synthesis:
    """The drafts that became questions, numbered in seed order; the rest counted."""
    kept: list[SyntheticQuestion] = []
    failed: list[str] = []
    named: list[str] = []
    seen: set[str] = set()
    repeats = 0
    for draft in drafts:
        label = "+".join(draft.seed.ids)
        if draft.rewritten and (draft.text is None or named_identifier(draft.text, draft.names)):
            named.append(label)
        elif draft.text is None:
            failed.append(label)
        elif (key := draft.text.lower()) in seen:
            repeats += 1
        else:
            seen.add(key)
            number = f"{prefix}-{len(kept) + 1:03d}"
            seed = draft.seed
            kept.append(
                SyntheticQuestion(
                    number, draft.text, seed.ids, seed.kind, seed.via, draft.rewritten
                )
            )
    return Synthesis(
        tuple(kept),
        asked=len(seeds),
        pairs_asked=sum(1 for s in seeds if s.kind == PAIR),
        failed=tuple(failed),
        rewritten=sum(1 for q in kept if q.rewritten),
        dropped_named=tuple(named),
        dropped_repeats=repeats,
        cached=cached,
    )


def write_questions(path: Path, questions: Sequence[SyntheticQuestion]) -> None:
    """One JSON object per line, as ``grapher eval --questions`` reads them."""
    if not questions:
        raise InputError(f"no question to write to {path}: every answer failed or was dropped")
    lines = [json.dumps(q.to_record(), ensure_ascii=False) for q in questions]
    try:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError as error:
        raise InputError(
            f"cannot write the questions to {path}: {error.strerror or error}"
        ) from None
