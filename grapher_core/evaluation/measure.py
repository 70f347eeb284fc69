"""Measuring orderings over the questions' pools: the retriever's own order, then each
configuration of the grid reranking the same candidates, timed call by call.

Every configuration ranks through :func:`~grapher_core.evaluation.door.rerank_pool`, built by
the door it is deployed through (:class:`~grapher_core.evaluation.door.Door`): the one place an
evaluation asks the library for an order, so what is measured is what that door deploys. Gold
is matched at the level it is given (object ids, or a metadata key's values:
:mod:`grapher_core.evaluation.gold`). A timing is the median of ``repeats`` passes, each with a
fresh reranker (its vector cache empty), so one burst of load does not decide a cost.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.diagnostics import RankerUnfitWarning
from grapher_core.errors import GraphERError
from grapher_core.evaluation.door import CLI_DOOR, Door, rank_pool, rerank_pool, reranker_for
from grapher_core.evaluation.gold import level_ranks, units_of
from grapher_core.evaluation.grid import Setting
from grapher_core.evaluation.metrics import (
    GoldRanks,
    all_in_top,
    first_gold_reciprocal,
    found_in_top,
)
from grapher_core.evaluation.paired import PairedComparison, compare_paired
from grapher_core.utils.progress import Progress

__all__ = [
    "EvaluationScope",
    "GridResult",
    "Heard",
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
    """What every configuration ranks: per question its gold ids, its text, its vector
    (``queries`` ``None``: the call embeds the question when it needs to) and the retriever's
    candidates (best first); ``gold_key``: gold names values of this metadata key (``None``:
    candidate ids)."""

    gold: tuple[tuple[str, ...], ...]
    texts: tuple[str, ...]
    queries: np.ndarray | None = field(repr=False)  # (questions, dim)
    candidates: tuple[Sequence[Candidate], ...] = field(repr=False)
    gold_key: str | None = None
    units: tuple[Mapping[str, tuple[str, ...]], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        units = tuple(
            {c.id: units_of(c.id, c.metadata, self.gold_key) for c in pool}
            for pool in self.candidates
        )
        object.__setattr__(self, "units", units)

    def __len__(self) -> int:
        return len(self.gold)

    def query(self, index: int) -> np.ndarray | None:
        return None if self.queries is None else self.queries[index]

    def ranks(self, index: int, order: Sequence[str]) -> GoldRanks:
        """Question ``index``'s gold ranks in ``order`` (candidate ids, best first), at the
        level the gold is given."""
        units = self.units[index]
        return level_ranks([units.get(i, ()) for i in order], self.gold[index])

    def subset(self, indices: Sequence[int]) -> Pools:
        """The pools of the questions at ``indices`` (a fold), in that order."""
        return Pools(
            tuple(self.gold[i] for i in indices),
            tuple(self.texts[i] for i in indices),
            None if self.queries is None else self.queries[list(indices)],
            tuple(self.candidates[i] for i in indices),
            self.gold_key,
        )


@dataclass(frozen=True)
class Measurement:
    """One ordering over every question: each gold id's rank per question, and the rerank
    call's latency per question (none for the retriever's own order)."""

    name: str
    setting: Setting | None
    gold_ranks: tuple[GoldRanks, ...]
    latency_ms: tuple[float, ...] = ()
    # per question the ids in this order (what a wrapper would return), and the ids that had an
    # edge in some question's graph
    orders: tuple[tuple[str, ...], ...] = field(default=(), repr=False, compare=False)
    linked: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

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
    # label -> what its ranker said with RankerUnfitWarning (it does not fit these inputs)
    unfit: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


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


def measure_retriever(pools: Pools) -> Measurement:
    """The retriever's own order: the row every configuration is compared with."""
    orders = tuple(tuple(c.id for c in pool) for pool in pools.candidates)
    ranks = tuple(pools.ranks(i, order) for i, order in enumerate(orders))
    return Measurement("retriever", None, ranks, orders=orders)


@dataclass(frozen=True)
class Heard:
    """What a configuration's reranker said while it ranked: every message once, and those
    of the category that says the ranker does not fit these inputs."""

    messages: tuple[str, ...]
    unfit: tuple[str, ...]

    @classmethod
    def of(cls, caught: Sequence[warnings.WarningMessage], ranker: Any = None) -> Heard:
        """What was caught; plus what the (loaded once) ``ranker`` keeps of its misfit
        (``unfit``): said once per process, it may have been said before this run."""
        said = [(str(w.message), w.category) for w in caught]
        unfit = [m for m, c in said if issubclass(c, RankerUnfitWarning)]
        kept = getattr(ranker, "unfit", None)
        if isinstance(kept, str) and kept:
            unfit.append(kept)
        return cls(tuple(dict.fromkeys(m for m, _ in said)), tuple(dict.fromkeys(unfit)))


def _one_pass(
    reranker: Any, pools: Pools, door: Door, counter: Progress | None
) -> tuple[list[float], list[tuple[str, ...]], set[str]]:
    """Every question once: the call's latency, the order, the ids that had an edge."""
    latency: list[float] = []
    orders: list[tuple[str, ...]] = []
    linked: set[str] = set()
    for index, (text, pool) in enumerate(zip(pools.texts, pools.candidates, strict=True)):
        start = time.perf_counter()
        result = rerank_pool(reranker, pool, text, pools.query(index), door.answer)
        latency.append((time.perf_counter() - start) * 1000)
        orders.append(tuple(r.id for r in result.ranked))
        graph = result.graph
        if graph is not None and graph.n_edges:
            touched = np.diff(graph.adjacency.indptr) + np.diff(graph.adjacency.tocsc().indptr)
            linked.update(graph.ids[i] for i in np.flatnonzero(touched))
        if counter is not None:
            counter.update()
    return latency, orders, linked


def measure_setting(
    setting: Setting,
    built: Mapping[str, Any],
    pools: Pools,
    counter: Progress,
    *,
    door: Door = CLI_DOOR,
    repeats: int = 1,
) -> tuple[Measurement, list[str], Heard]:
    """One configuration over every question: its gold ranks, each call's latency (the
    median of ``repeats`` passes, each with a fresh reranker), what the reranker warned
    about (each message once)."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        reranker = reranker_for(setting, built, door)
        # one untimed call first: a learned ranker's first call loads torch's kernels
        first = pools.candidates[0] if pools.candidates else ()
        if first:
            rank_pool(
                reranker_for(setting, built, door),
                first,
                pools.texts[0],
                pools.query(0),
                door.answer,
            )
        passes = [_one_pass(reranker, pools, door, counter)]
        for _ in range(max(1, repeats) - 1):
            passes.append(_one_pass(reranker_for(setting, built, door), pools, door, None))
    latency = tuple(float(np.median(times)) for times in zip(*(p[0] for p in passes), strict=True))
    orders = tuple(passes[0][1])
    ranks = tuple(pools.ranks(i, order) for i, order in enumerate(orders))
    heard = Heard.of(said, built.get(setting.ranker))
    row = Measurement(setting.label, setting, ranks, latency, orders, frozenset(passes[0][2]))
    return row, list(heard.messages), heard


def measure_grid(
    grid: Sequence[Setting],
    built: Mapping[str, Any],
    pools: Pools,
    *,
    progress: bool,
    door: Door = CLI_DOOR,
    repeats: int = 1,
) -> GridResult:
    """The retriever's order, then every configuration of ``grid`` deployed through
    ``door``; a configuration whose ranker refuses these inputs is set aside with its
    reason, not fatal."""
    rows = [measure_retriever(pools)]
    notes: dict[str, int] = {}
    failed: dict[str, str] = {}
    said: dict[str, tuple[str, ...]] = {}
    unfit: dict[str, tuple[str, ...]] = {}
    counter = Progress(len(grid) * len(pools), "reranking", enabled=progress)
    for setting in grid:
        try:
            row, messages, heard = measure_setting(
                setting, built, pools, counter, door=door, repeats=repeats
            )
        except GraphERError as error:
            failed[setting.label] = " ".join(str(error).split()) or type(error).__name__
            continue
        rows.append(row)
        said[setting.label] = tuple(messages)
        if heard.unfit:
            unfit[setting.label] = heard.unfit
        for message in messages:
            notes[message] = notes.get(message, 0) + 1
    counter.close()
    return GridResult(tuple(rows), notes, failed, said, unfit)


def needs_vectors(setting: Setting, built: Mapping[str, Any], detected: Sequence[Any]) -> bool:
    """Whether the configuration's ranker or graph reads the candidates' vectors: a wrapper
    whose store does not hand them back then embeds every candidate's text on each call."""
    from grapher_core.ranking.base import needs_embeddings

    proximities = detected if setting.proximities is None else setting.proximities
    ranker = built.get(setting.ranker)
    return needs_embeddings(ranker) or any(needs_embeddings(p) for p in proximities)


def reembedding_ms(embedder: Any, pools: Pools, samples: int = 3, repeats: int = 1) -> float:
    """What embedding one question's candidate texts costs, in ms (the median over up to
    ``samples`` pools of each pool's median of ``repeats`` timings, after one untimed call
    that loads the model): the price per query of a wrapper whose store does not hand the
    vectors back."""
    if not pools.candidates or not pools.candidates[0]:
        return 0.0
    embedder.embed_documents([pools.candidates[0][0].text or " "])  # load the model, untimed
    times: list[float] = []
    for pool in pools.candidates[:samples]:
        texts = [candidate.text or " " for candidate in pool]
        runs = []
        for _ in range(max(1, repeats)):
            start = time.perf_counter()
            embedder.embed_documents(texts)
            runs.append((time.perf_counter() - start) * 1000)
        times.append(float(np.median(runs)))
    return float(np.median(times))
