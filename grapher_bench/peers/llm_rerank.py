"""An LLM reranker as a bench peer (``llm-rerank``) and GraphER stacked on it
(``llm-rerank+<row>``), through the same OpenAI-compatible client and reply cache as qa-eval.

``llm-rerank`` is LlamaIndex's ``LLMRerank`` postprocessor, rebuilt on our client: the
retriever's top 20 (:data:`WINDOW`) go to the model in batches of 10 (:data:`BATCH`, LlamaIndex's
``choice_batch_size``) with LlamaIndex's choice-select prompt, verbatim
(:data:`~grapher_bench.qa_eval.prompts.CHOICE_SELECT_TEMPLATE`); the model answers
``Doc: 9, Relevance: 7`` lines. The documents it names come first, by relevance (ties keep the
order they were named in, batch by batch, as LlamaIndex's stable sort does); every other
candidate follows in the retriever's order. A reply with nothing usable leaves its batch in the
retriever's order and is counted (``unparsed``), as is a request that failed after retries
(``failed``, retried by the next run).

``llm-rerank+gcs[mentions]`` (any graph ranker and graph of the bench) is GraphER's graph
ranking after the LLM reranker: the whole pool in the order the LLM reranker returns it, seeded
by the library's one rule (``1 / rank`` of that order), as chaining the two postprocessors
does. ``llm-scores+gcs[mentions]`` seeds it with the LLM's scores instead, the candidates in
the retriever's order: a named document's relevance / 10 (0.1 .. 1); the others
``0.05 / retriever rank``, below every named one. Either way the model judges each candidate
from its own text and GraphER then adds what the graph supports (a bridge passage that looks
irrelevant alone rises when it links to the ones the model picked).

Every reply is cached (the SQLite cache of ``grapher-bench qa-eval``, keyed on model, prompt
version and the sha256 of the filled prompt) and committed as it arrives, so a rerun costs no
request and a killed run resumes; ``llm-rerank`` and its stacks share the replies.
The endpoint comes from :func:`configure_llm` (the ``--llm-base-url`` / ``--llm-model`` options)
or ``$GRAPHER_LLM_BASE_URL`` / ``$GRAPHER_LLM_MODEL``; without one an llm ranker is refused.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from grapher_core.candidates import Candidate
from grapher_core.errors import ConfigError

__all__ = [
    "BATCH",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "LLM_RERANK",
    "MISSING_ENDPOINT",
    "STACK_PREFIXES",
    "TAIL",
    "WINDOW",
    "LLMEndpoint",
    "LLMRanking",
    "LLMRerankStats",
    "LLMReranker",
    "configure_llm",
    "endpoint_from",
    "is_llm_ranker",
    "llm_endpoint",
    "llm_graph",
    "llm_peer_rankings",
    "order_by_choices",
    "parse_choices",
    "stack_prefix",
    "stacked_row",
    "using_llm",
]

LLM_RERANK = "llm-rerank"
WINDOW = 20
"""Candidates the model reads per question: the retriever's top 20."""
BATCH = 10
"""Documents per prompt (LlamaIndex ``LLMRerank``'s default ``choice_batch_size``)."""
TAIL = 0.05
"""Score of an unnamed candidate at retriever rank r: ``TAIL / r`` (below relevance 1 = 0.1)."""
ENV_BASE_URL = "GRAPHER_LLM_BASE_URL"
ENV_MODEL = "GRAPHER_LLM_MODEL"
ENV_API_KEY = "GRAPHER_LLM_API_KEY"
_NOT_STACKED = frozenset({"baseline", "db-first"})
STACK_PREFIXES = (f"{LLM_RERANK}+", "llm-scores+")
"""The two ways GraphER stacks on the LLM reranker (:func:`stack_prefix`)."""


# ----------------------------------------------------------------------------------- names


def is_llm_ranker(name: str) -> bool:
    """``llm-rerank`` or a stack ``llm-rerank+<ranker>[<graph>]`` /
    ``llm-scores+<ranker>[<graph>]``."""
    return name == LLM_RERANK or stack_prefix(name) is not None


def stack_prefix(name: str) -> str | None:
    """``"llm-rerank+"`` (GraphER after the LLM reranker, seeded from the order it returns, as
    chaining the two postprocessors does), ``"llm-scores+"`` (seeded with the LLM's relevance
    scores, candidates in the retriever's order), or ``None`` for any other name."""
    return next((p for p in STACK_PREFIXES if name.startswith(p)), None)


def stacked_row(name: str, task_type: str) -> tuple[str, str]:
    """The graph ranker and graph of ``llm-rerank+<ranker>[<graph>]`` (the task type's first
    graph when none is named, as qa-eval reads a bare ``gcs``)."""
    from grapher_bench.enrichment import graphs_for, proximities_for
    from grapher_core.ranking.registry import available_rankers

    prefix = stack_prefix(name)
    if prefix is None:
        raise ConfigError(f"not a stacked llm ranker: {name!r}")
    row = name[len(prefix) :]
    match = re.fullmatch(r"([a-z0-9_-]+)(?:\[([a-z0-9+_-]+)\])?", row)
    if match is None:
        raise ConfigError(
            f"{name!r}: expected llm-rerank+RANKER[GRAPH], e.g. llm-rerank+gcs[mentions]"
        )
    ranker, graph = match.group(1), match.group(2)
    if ranker in _NOT_STACKED or ranker not in available_rankers():
        known = [r for r in available_rankers() if r not in _NOT_STACKED]
        raise ConfigError(
            f"{name!r}: GraphER stacks on the LLM with a graph ranker ({', '.join(known)}), "
            f"not {ranker!r}"
        )
    graph = graph or graphs_for(task_type)[0]
    proximities_for(graph)  # an unknown graph fails here, naming it
    return ranker, graph


def llm_graph(name: str, task_type: str) -> str:
    """The graph an llm ranker uses: none for ``llm-rerank``, the row's for a stack."""
    if name == LLM_RERANK:
        return "none"
    return stacked_row(name, task_type)[1]


# -------------------------------------------------------------------------------- endpoint


@dataclass(frozen=True)
class LLMEndpoint:
    """Where the LLM reranker's requests go and where its replies are cached."""

    base_url: str
    model: str
    api_key: str | None = None
    cache: Path | None = None  # None: <grapher cache>/qa-eval.sqlite
    concurrency: int = 1
    timeout: float = 300.0
    max_retries: int = 4
    max_tokens: int = 160
    window: int = WINDOW
    batch: int = BATCH

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(
                f"the LLM reranker's base URL must be http(s), such as "
                f"http://127.0.0.1:8080/v1, got {self.base_url!r}"
            )
        if not self.model.strip():
            raise ConfigError("the LLM reranker's model name must not be empty")
        if self.window < 1 or self.batch < 1:
            raise ConfigError(f"window and batch must be >= 1, got {self.window}, {self.batch}")

    def cache_path(self) -> Path:
        from grapher_bench.cache import cache_root

        return self.cache if self.cache is not None else cache_root(create=False) / "qa-eval.sqlite"


_CURRENT: list[LLMEndpoint | None] = [None]
MISSING_ENDPOINT = (
    "an llm ranker needs an OpenAI-compatible endpoint: give --llm-base-url URL and "
    f"--llm-model NAME (or set ${ENV_BASE_URL} and ${ENV_MODEL})"
)


def configure_llm(endpoint: LLMEndpoint | None) -> None:
    """Set (or clear, with ``None``) the endpoint every llm ranker of this process uses."""
    _CURRENT[0] = endpoint


@contextmanager
def using_llm(endpoint: LLMEndpoint | None) -> Iterator[None]:
    """:func:`configure_llm` for the duration of a block, the previous setting restored."""
    previous = _CURRENT[0]
    configure_llm(endpoint)
    try:
        yield
    finally:
        configure_llm(previous)


def endpoint_from(base_url: str | None, model: str | None, **options: Any) -> LLMEndpoint | None:
    """An endpoint from options, falling back on the environment; ``None`` when neither names
    one, a ``ConfigError`` when only half of one is given."""
    base_url = base_url or os.environ.get(ENV_BASE_URL) or None
    model = model or os.environ.get(ENV_MODEL) or None
    if base_url is None and model is None:
        return None
    if base_url is None or model is None:
        raise ConfigError(
            MISSING_ENDPOINT + f" (got only the {'model' if base_url is None else 'URL'})"
        )
    if options.get("api_key") is None:
        options["api_key"] = os.environ.get(ENV_API_KEY) or None
    return LLMEndpoint(base_url, model, **options)


def llm_endpoint() -> LLMEndpoint:
    """The configured endpoint, else one from the environment; refused when there is none."""
    if _CURRENT[0] is not None:
        return _CURRENT[0]
    endpoint = endpoint_from(None, None)
    if endpoint is None:
        raise ConfigError(MISSING_ENDPOINT)
    return endpoint


# --------------------------------------------------------------------------------- parsing

_MARKUP = str.maketrans({"*": " ", "`": " ", "#": " ", "：": ":"})
_DOC = r"\bdoc(?:ument)?s?\b\s*(?:#|no\.?|number)?\s*"
_WITH_RELEVANCE = re.compile(
    _DOC + r"[:=#]?\s*(\d+)\b[^\d\n]{0,24}?\b(?:relevance(?:\s+score)?|score|rel)\b\s*[:=]?\s*"
    r"(\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
_NUMBER_ONLY = re.compile(_DOC + r"[:=#]\s*(\d+)\b(?!\s*:)", re.IGNORECASE)
_JSON_LIST = re.compile(r"\[[^\[\]]{0,4000}\]")
_DOC_KEYS = ("doc", "document", "doc_id", "id", "number", "index")
_REL_KEYS = ("relevance", "relevance_score", "score")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        found = re.search(r"\d+(?:\.\d+)?", value)
        return float(found.group(0)) if found else None
    return None


def _json_choices(text: str) -> list[tuple[int, int, float | None]]:
    """``[{"doc": 3, "relevance": 8}, ...]`` as (position, number, relevance)."""
    out: list[tuple[int, int, float | None]] = []
    for match in _JSON_LIST.finditer(text):
        try:
            data = json.loads(match.group(0))
        except ValueError:
            continue
        if not isinstance(data, list):
            continue
        for offset, item in enumerate(data):
            if not isinstance(item, dict):
                continue
            keys = {str(k).lower(): v for k, v in item.items()}
            number = next((_number(keys[k]) for k in _DOC_KEYS if k in keys), None)
            relevance = next((_number(keys[k]) for k in _REL_KEYS if k in keys), None)
            if number is not None and number == int(number):
                out.append((match.start() + offset, int(number), relevance))
    return out


def parse_choices(reply: str | None, n_docs: int) -> list[tuple[int, float]]:
    """The documents a choice-select reply names, as (0-based index, relevance 1-10), in the
    order named.

    Read: ``Doc: 9, Relevance: 7`` (LlamaIndex's format) and its variants (``Document 9 -
    relevance 7/10``, ``**Doc: 9**, Relevance: 7``, several on one line, prose around them), a
    JSON list of ``{"doc": 9, "relevance": 7}``, and ``Doc: 9`` with no relevance (read as 1).
    Numbers outside 1..``n_docs`` are ignored, a document named twice keeps its first mention,
    a relevance outside 1-10 is clipped to it (the prompt asks for 1-10). ``Document 3:`` alone
    (the listing's own layout echoed back) names nothing. ``<think>`` blocks are ignored.
    """
    from grapher_bench.qa_eval.scoring import strip_reasoning

    if not reply or not reply.strip():
        return []
    text = strip_reasoning(reply).translate(_MARKUP)
    found: list[tuple[int, int, float | None]] = _json_choices(text)
    covered: list[tuple[int, int]] = []
    for match in _WITH_RELEVANCE.finditer(text):
        found.append((match.start(), int(match.group(1)), float(match.group(2))))
        covered.append(match.span())
    for match in _NUMBER_ONLY.finditer(text):
        if not any(start <= match.start() < end for start, end in covered):
            found.append((match.start(), int(match.group(1)), None))
    out: list[tuple[int, float]] = []
    seen: set[int] = set()
    for _, number, relevance in sorted(found, key=lambda item: item[0]):
        if not 1 <= number <= n_docs or number in seen:
            continue
        seen.add(number)
        out.append((number - 1, min(10.0, max(1.0, relevance if relevance is not None else 1.0))))
    return out


def order_by_choices(
    n_pool: int, batches: Sequence[Sequence[tuple[int, float]]], batch: int = BATCH
) -> tuple[list[int], list[float]]:
    """Pool positions best first and their scores, from each batch's choices.

    ``batches[b]`` holds the choices of the batch of pool positions ``b*batch ..``; named ones
    first by relevance (stable: batch order, then the order named), then every other
    position in pool order. Scores: relevance / 10 for a named position, ``TAIL / (p + 1)``
    for the others (the seeds of a stack).
    """
    named: list[tuple[int, float]] = []
    for b, choices in enumerate(batches):
        named += [(b * batch + index, relevance) for index, relevance in choices]
    named = [(p, r) for p, r in named if p < n_pool]
    named.sort(key=lambda item: -item[1])
    chosen = {p for p, _ in named}
    order = [p for p, _ in named] + [p for p in range(n_pool) if p not in chosen]
    scores = [r / 10.0 for _, r in named] + [
        TAIL / (p + 1) for p in range(n_pool) if p not in chosen
    ]
    return order, scores


# -------------------------------------------------------------------------------- reranker


@dataclass
class LLMRerankStats:
    """What the reranker's requests gave over a run (one dataset)."""

    queries: int = 0
    prompts: int = 0
    computed: int = 0
    cached: int = 0
    unparsed: int = 0
    failed: int = 0
    fallback_queries: int = 0
    named: int = 0

    def note(self, label: str = LLM_RERANK) -> str:
        """One line for the run's notes."""
        return (
            f"{label}: {self.prompts} choice-select replies ({self.computed} new, "
            f"{self.cached} cached); {self.unparsed} named no usable document and "
            f"{self.failed} failed (their batches kept the retriever's order); "
            f"{self.fallback_queries}/{self.queries} questions wholly in retriever order; "
            f"{self.named / max(1, self.queries):.1f} documents named per question"
        )


@dataclass
class LLMRanking:
    """One question's order (pool positions best first) and scores."""

    order: list[int]
    scores: list[float]
    replies: list[str | None] = field(default_factory=list)


class LLMReranker:
    """Listwise LLM reranking of each question's top ``window`` in batches of ``batch``."""

    def __init__(
        self,
        completer: Any,
        cache: Any | None = None,
        *,
        window: int = WINDOW,
        batch: int = BATCH,
        block: int = 25,
    ) -> None:
        if window < 1 or batch < 1 or block < 1:
            raise ConfigError(f"window, batch and block must be >= 1: {window}, {batch}, {block}")
        self.completer = completer
        self.cache = cache
        self.window = window
        self.batch = batch
        self.block = block

    def prompts_for(self, query: str, pool: Sequence[Candidate]) -> list[str]:
        """The choice-select prompts of one question: one per batch of its top ``window``."""
        from grapher_bench.qa_eval.prompts import choice_select_prompt

        top = [c.text for c in pool[: self.window]]
        return [
            choice_select_prompt(query, top[start : start + self.batch])
            for start in range(0, len(top), self.batch)
        ]

    def rank(
        self,
        queries: Sequence[str],
        pools: Sequence[Sequence[Candidate]],
        *,
        progress: bool = False,
    ) -> tuple[list[LLMRanking], LLMRerankStats, list[float]]:
        """Every question's ranking, the run's counts, and per-question milliseconds (the
        wall time of its block of requests shared out; a cached reply costs ~0)."""
        from grapher_core.enrich.completion import completion_text
        from grapher_core.enrich.runner import run_extraction

        if len(queries) != len(pools):
            raise ConfigError(f"{len(queries)} questions but {len(pools)} candidate lists")
        stats = LLMRerankStats(queries=len(queries))
        rankings: list[LLMRanking] = []
        timings: list[float] = []
        for start in range(0, len(queries), self.block):
            tick = time.perf_counter()
            prompts = [
                self.prompts_for(q, p)
                for q, p in zip(
                    queries[start : start + self.block],
                    pools[start : start + self.block],
                    strict=True,
                )
            ]
            flat = [text for group in prompts for text in group]
            run = run_extraction(
                flat,
                self.completer,
                cache=self.cache,
                progress=progress,
                label=f"{LLM_RERANK} prompts [{self.completer.name}]",
            )
            stats.prompts += len(flat)
            stats.computed += run.n_computed
            stats.cached += run.n_cached
            results = iter(run.results)
            for pool in pools[start : start + self.block]:
                batches: list[list[tuple[int, float]]] = []
                replies: list[str | None] = []
                n_top = min(self.window, len(pool))
                for first in range(0, n_top, self.batch):
                    reply = completion_text(next(results))
                    replies.append(reply)
                    size = min(self.batch, n_top - first)
                    choices = parse_choices(reply, size) if reply is not None else []
                    if reply is None:
                        stats.failed += 1
                    elif not choices:
                        stats.unparsed += 1
                    batches.append(choices)
                order, scores = order_by_choices(len(pool), batches, self.batch)
                named = sum(len(b) for b in batches)
                stats.named += named
                stats.fallback_queries += int(named == 0)
                rankings.append(LLMRanking(order, scores, replies))
            share = (time.perf_counter() - tick) * 1000.0 / max(1, len(prompts))
            timings += [share] * len(prompts)
        return rankings, stats, timings


def _reranker(endpoint: LLMEndpoint, cache: Any) -> LLMReranker:
    from grapher_bench.qa_eval.prompts import CHOICE_SELECT_VERSION
    from grapher_core.enrich.completion import OpenAITextCompleter

    completer = OpenAITextCompleter(
        endpoint.model,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        version=CHOICE_SELECT_VERSION,
        max_output_tokens=endpoint.max_tokens,
        concurrency=endpoint.concurrency,
        timeout=endpoint.timeout,
        max_retries=endpoint.max_retries,
        temperature=0.0,
    )
    return LLMReranker(completer, cache, window=endpoint.window, batch=endpoint.batch)


def llm_peer_rankings(
    name: str,
    dataset: Any,
    candidates: Sequence[Sequence[Candidate]],
    *,
    query_vectors: Sequence[Any] | None = None,
    notes: list[str] | None = None,
    progress: bool = False,
) -> tuple[list[tuple[list[str], list[float], list[int]]], list[float]]:
    """``llm-rerank`` or a stack over every question: (ids, scores, retriever ranks) per
    question, and per-question milliseconds."""
    from grapher_core.enrich.cache import EntityCache

    stacked = None if name == LLM_RERANK else stacked_row(name, dataset.task_type)
    endpoint = llm_endpoint()
    queries = [q.text for q in dataset.queries]
    with EntityCache(endpoint.cache_path()) as cache:
        rankings, stats, timings = _reranker(endpoint, cache).rank(
            queries, candidates, progress=progress
        )
    if notes is not None:
        notes.append(stats.note(name))
    out: list[tuple[list[str], list[float], list[int]]] = []
    if stacked is None:
        for ranking, pool in zip(rankings, candidates, strict=True):
            ids = [pool[p].id for p in ranking.order]
            out.append((ids, ranking.scores, [p + 1 for p in ranking.order]))
        return out, timings
    from grapher_bench.enrichment import proximities_for
    from grapher_core.rerank import GraphReranker

    ranker, graph = stacked
    by_scores = stack_prefix(name) == "llm-scores+"
    # llm-scores+: the LLM's scores as given (positive, higher is better), read raw -- the
    # default rank policy would see only the retriever's order they arrive in. llm-rerank+: the
    # candidates in the order the LLM reranker returns, seeded by the library's one rule.
    reranker = GraphReranker(
        proximities_for(graph), ranker, explain=0, seed_transform="raw" if by_scores else None
    )
    vectors = list(query_vectors) if query_vectors is not None else [None] * len(queries)
    for index, (ranking, pool) in enumerate(zip(rankings, candidates, strict=True)):
        seeds = dict(zip(ranking.order, ranking.scores, strict=True))
        if by_scores:
            seeded = [replace(c, score=seeds[p]) for p, c in enumerate(pool)]  # retriever order
        else:
            seeded = [replace(pool[p], score=seeds[p]) for p in ranking.order]  # LLM's order
        tick = time.perf_counter()
        ranked = reranker.rerank(seeded, query=queries[index], query_embedding=vectors[index])
        timings[index] += (time.perf_counter() - tick) * 1000.0
        ranks = [r.original_rank for r in ranked]
        if not by_scores:  # positions in the LLM's order -> the retriever's ranks
            ranks = [ranking.order[r - 1] + 1 for r in ranks]
        out.append(([r.id for r in ranked], [r.score for r in ranked], ranks))
    return out, timings
