"""Measuring orderings over the questions' pools: the retriever's own order, then each
configuration of the grid reranking the same candidates, timed call by call.

Every configuration ranks through :func:`rank_pool` (built by :func:`reranker_for`): the one
place an evaluation asks the library for an order, so what is measured is what a door deploys.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.errors import GraphERError
from grapher_core.evaluation.grid import Setting
from grapher_core.evaluation.metrics import (
    GoldRanks,
    all_in_top,
    first_gold_reciprocal,
    found_in_top,
    gold_ranks,
)
from grapher_core.evaluation.paired import PairedComparison, compare_paired
from grapher_core.utils.progress import Progress

__all__ = [
    "EvaluationScope",
    "GridResult",
    "Measurement",
    "Pools",
    "ReembedCost",
    "measure_grid",
    "measure_retriever",
    "measure_setting",
    "needs_vectors",
    "rank_pool",
    "reembedding_ms",
    "reranker_for",
]


@dataclass(frozen=True)
class EvaluationScope:
    """What an evaluation ran on, as its config and its report record it."""

    questions_file: str
    question_ids: tuple[str, ...]
    n_objects: int
    top_n: int  # candidates the retriever hands over per question
    ks: tuple[int, ...]  # the cut-offs, ascending


@dataclass(frozen=True, eq=False)
class Pools:
    """What every configuration ranks: per question its gold ids, its text, its vector and the
    retriever's candidates (best first)."""

    gold: tuple[tuple[str, ...], ...]
    texts: tuple[str, ...]
    queries: np.ndarray = field(repr=False)  # (questions, dim)
    candidates: tuple[Sequence[Candidate], ...] = field(repr=False)

    def __len__(self) -> int:
        return len(self.gold)


@dataclass(frozen=True)
class Measurement:
    """One ordering over every question: each gold id's rank per question, and the rerank
    call's latency per question (none for the retriever's own order)."""

    name: str
    setting: Setting | None
    gold_ranks: tuple[GoldRanks, ...]
    latency_ms: tuple[float, ...] = ()

    @property
    def total_gold(self) -> int:
        return sum(len(ranks) for ranks in self.gold_ranks)

    def hits(self, k: int) -> np.ndarray:
        """Per question: gold objects in the top ``k``."""
        return np.array([found_in_top(ranks, k) for ranks in self.gold_ranks])

    def perfect(self, k: int) -> np.ndarray:
        """Per question: 1 when all its gold objects are in the top ``k``."""
        return np.array([all_in_top(ranks, k) for ranks in self.gold_ranks], dtype=int)

    def reciprocal(self) -> np.ndarray:
        """Per question: 1 / the rank of its best-ranked gold object (0 when none)."""
        return np.array([first_gold_reciprocal(ranks) for ranks in self.gold_ranks])

    def gold_at(self, k: int) -> float:
        """gold@K: gold objects in the top ``k`` over all gold objects."""
        return float(self.hits(k).sum() / self.total_gold)

    def metrics(self, ks: Sequence[int]) -> dict[str, float]:
        """gold@K for each K, PR@K for each K, then MRR (the table's and reports' order)."""
        out = {f"gold@{k}": self.gold_at(k) for k in ks}
        out.update({f"PR@{k}": float(self.perfect(k).mean()) for k in ks})
        out["MRR"] = float(self.reciprocal().mean())
        return out

    def latency(self) -> dict[str, float] | None:
        """Median and 95th percentile of the rerank call, in ms."""
        if not self.latency_ms:
            return None
        values = np.asarray(self.latency_ms)
        return {"median": float(np.median(values)), "p95": float(np.percentile(values, 95))}

    def summary(self, ks: Sequence[int]) -> dict[str, Any]:
        return {"metrics": self.metrics(ks), "latency_ms": self.latency()}

    def versus(self, base: Measurement, ks: Sequence[int]) -> dict[str, PairedComparison]:
        """Paired tests against ``base`` per K: McNemar on PR@K, the sign test on gold@K."""
        out: dict[str, PairedComparison] = {}
        for k in ks:
            out[f"PR@{k}"] = compare_paired(self.perfect(k), base.perfect(k))
            out[f"gold@{k}"] = compare_paired(self.hits(k), base.hits(k))
        return out


@dataclass(frozen=True)
class GridResult:
    """The retriever's row then one per configuration measured; what the rerankers warned
    about (message -> configurations that said it), the configurations that failed
    (label -> reason), and each configuration's own messages (label -> messages), so the
    choice can set aside a configuration whose ranker said it does not fit."""

    rows: tuple[Measurement, ...]
    notes: Mapping[str, int]
    failed: Mapping[str, str]
    messages: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class ReembedCost:
    """What a wrapper pays per query beyond the rerank call when its store does not hand the
    candidates' vectors back: ``ms`` to embed one pool's texts, for the configurations
    (``labels``) whose ranker or graph reads vectors."""

    ms: float
    labels: frozenset[str]

    def wrapper_ms(self, row: Measurement) -> float | None:
        """The row's median rerank call, plus the embedding when it reads vectors."""
        latency = row.latency()
        if latency is None:
            return None
        return latency["median"] + (self.ms if row.name in self.labels else 0.0)


def reranker_for(setting: Setting, built: Mapping[str, Any]) -> Any:
    """The reranker of one configuration; ``built``: learned rankers loaded once."""
    from grapher_core.rerank import GraphReranker

    return GraphReranker(
        None if setting.proximities is None else list(setting.proximities),
        built.get(setting.ranker, setting.ranker),
        setting.alpha if setting.ranker not in built else None,
        seed_transform=setting.seed_transform,
        explain=0,
        **dict(setting.options),
    )


def rank_pool(
    reranker: Any, pool: Sequence[Candidate], query: str, query_embedding: np.ndarray
) -> list[str]:
    """The ids of one question's pool, best first, as ``reranker`` orders them: the one
    ranking call of an evaluation, the same request every door runs (the pool carries the
    corpus vectors; anything else the call asks for, the core's own embedder answers)."""
    from grapher_core.request import run_call

    result = run_call(reranker.call(pool, query=query, query_embedding=query_embedding))
    return [ranked.id for ranked in result.ranked]


def measure_retriever(pools: Pools) -> Measurement:
    """The retriever's own order: the row every configuration is compared with."""
    ranks = tuple(
        gold_ranks([c.id for c in pool], gold)
        for pool, gold in zip(pools.candidates, pools.gold, strict=True)
    )
    return Measurement("retriever", None, ranks)


def measure_setting(
    setting: Setting, built: Mapping[str, Any], pools: Pools, counter: Progress
) -> tuple[Measurement, list[str]]:
    """One configuration over every question: its gold ranks and rerank latencies, and what
    the reranker warned about (each message once)."""
    reranker = reranker_for(setting, built)
    ranks: list[GoldRanks] = []
    latency: list[float] = []
    questions = zip(pools.gold, pools.texts, pools.queries, pools.candidates, strict=True)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        # one untimed call first: a learned ranker's first call loads torch's kernels
        rank_pool(reranker, pools.candidates[0], pools.texts[0], pools.queries[0])
        for gold, text, query, pool in questions:
            start = time.perf_counter()
            order = rank_pool(reranker, pool, text, query)
            latency.append((time.perf_counter() - start) * 1000)
            ranks.append(gold_ranks(order, gold))
            counter.update()
    messages = list(dict.fromkeys(str(w.message) for w in said))
    return Measurement(setting.label, setting, tuple(ranks), tuple(latency)), messages


def measure_grid(
    grid: Sequence[Setting], built: Mapping[str, Any], pools: Pools, *, progress: bool
) -> GridResult:
    """The retriever's order, then every configuration of ``grid``; a configuration whose
    ranker refuses these inputs is set aside with its reason, not fatal."""
    rows = [measure_retriever(pools)]
    notes: dict[str, int] = {}
    failed: dict[str, str] = {}
    said: dict[str, tuple[str, ...]] = {}
    counter = Progress(len(grid) * len(pools), "reranking", enabled=progress)
    for setting in grid:
        try:
            row, messages = measure_setting(setting, built, pools, counter)
        except GraphERError as error:
            failed[setting.label] = " ".join(str(error).split()) or type(error).__name__
            continue
        rows.append(row)
        said[setting.label] = tuple(messages)
        for message in messages:
            notes[message] = notes.get(message, 0) + 1
    counter.close()
    return GridResult(tuple(rows), notes, failed, said)


def needs_vectors(setting: Setting, built: Mapping[str, Any], detected: Sequence[Any]) -> bool:
    """Whether the configuration's ranker or graph reads the candidates' vectors: a wrapper
    whose store does not hand them back then embeds every candidate's text on each call."""
    from grapher_core.ranking.base import needs_embeddings

    proximities = detected if setting.proximities is None else setting.proximities
    ranker = built.get(setting.ranker)
    return needs_embeddings(ranker) or any(needs_embeddings(p) for p in proximities)


def reembedding_ms(embedder: Any, pools: Pools, samples: int = 3) -> float:
    """What embedding one question's candidate texts costs, in ms (the median of up to
    ``samples`` pools, after one untimed call that loads the model): the price per query of
    a wrapper whose store does not hand the vectors back."""
    if not pools.candidates or not pools.candidates[0]:
        return 0.0
    embedder.embed_documents([pools.candidates[0][0].text or " "])  # load the model, untimed
    times: list[float] = []
    for pool in pools.candidates[:samples]:
        texts = [candidate.text or " " for candidate in pool]
        start = time.perf_counter()
        embedder.embed_documents(texts)
        times.append((time.perf_counter() - start) * 1000)
    return float(np.median(times))
