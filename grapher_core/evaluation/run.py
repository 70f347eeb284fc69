"""The one evaluation path: whoever hands the candidates -- ``grapher eval`` retrieving from a
corpus by cosine similarity, or a user's own LangChain / LlamaIndex retriever through
``evaluate_retriever`` -- the same grid reranks them through the door that would deploy it,
the same measurement, choice, cost budget and report follow.

::

    plan = plan_evaluation(rankers, detected, embedder)      # the grid, learned rankers loaded
    result = evaluate(plan, pools, scope, for_k=5, door=door, objects=objects)
    print(result)                                             # an Evaluation
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from grapher_core.candidates import CorpusObject
from grapher_core.evaluation.choice import choose, config_for, unfit_configurations
from grapher_core.evaluation.cost import CostBudget, Load, load_now
from grapher_core.evaluation.door import CLI_DOOR, Door
from grapher_core.evaluation.grid import (
    SEEDS,
    Setting,
    build_grid,
    missing_extras,
    need_a_ranker,
    rankers_available,
)
from grapher_core.evaluation.measure import (
    EvaluationScope,
    GridResult,
    Pools,
    ReembedCost,
    measure_grid,
    needs_vectors,
    reembedding_ms,
)
from grapher_core.evaluation.outcome import Evaluation
from grapher_core.evaluation.sources import by_source, sources_of, without_edges

__all__ = ["DEFAULT_REPEATS", "Plan", "evaluate", "plan_evaluation"]

DEFAULT_REPEATS = 3
"""Passes each latency is the median of (each with a fresh reranker)."""


@dataclass(frozen=True)
class Plan:
    """What will be measured: the grid over the ``detected`` graph, the learned rankers
    loaded once (``built``), each ranker's reason to be skipped (``None``: usable), and what
    a ranker said while loading that it does not fit (``loaded_unfit``)."""

    rankers: tuple[str, ...]
    detected: tuple[Any, ...]
    grid: tuple[Setting, ...]
    built: Mapping[str, Any] = field(repr=False)
    skipped: Mapping[str, str | None]
    loaded_unfit: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def setup_lines(self) -> list[str]:
        """The graph, what is skipped, and the grid, as the command prints them first."""
        from grapher_core.edges.detect import describe

        lines = [f"graph detected in the metadata: {describe(list(self.detected))}"]
        if not self.detected:
            lines.append(
                "note: no graph in the metadata (foreign_keys, links, mentions, entities or "
                "doc_id + chunk_index): GCS and PPR can only keep the retriever's order"
            )
        lines += [f"skipped: {n}: {r}" for n, r in self.skipped.items() if r is not None]
        lines.append(f"grid: {len(self.grid)} configurations")
        return lines + [f"  {setting.label}" for setting in self.grid]


def plan_evaluation(
    rankers: Sequence[str],
    detected: Sequence[Any],
    embedder: Any,
    *,
    seeds: Sequence[str] = tuple(SEEDS),
) -> Plan:
    """The grid of ``rankers`` over the ``detected`` graph (``seeds``: the seed policies
    the retriever's output allows), the learned ones loaded once with ``embedder``."""
    loaded: dict[str, tuple[str, ...]] = {}
    missing = missing_extras(rankers)  # every ranker missing its extra: refused here
    usable = [name for name in rankers if name not in missing]
    skipped, built = rankers_available(usable, embedder, loaded)
    skipped.update(missing)
    need_a_ranker(rankers, skipped)
    grid = build_grid(rankers, detected, skipped, seeds)
    return Plan(tuple(rankers), tuple(detected), tuple(grid), built, skipped, loaded)


def _cost(
    measured: GridResult, plan: Plan, pools: Pools, embedder: Any, repeats: int
) -> ReembedCost:
    """Which configurations read vectors, and -- only when the pools carry them (the corpus's
    vectors) -- what embedding one pool costs a wrapper whose store does not hand them back.
    Without vectors in the pools, the calls embedded the candidates themselves, as the
    deployed wrapper does, and the latency measured holds that cost already."""
    labels = frozenset(
        row.name
        for row in measured.rows
        if row.setting is not None and needs_vectors(row.setting, plan.built, plan.detected)
    )
    carried = all(c.embedding is not None for pool in pools.candidates for c in pool)
    if not labels or not carried or embedder is None:
        return ReembedCost(0.0, labels)
    return ReembedCost(reembedding_ms(embedder, pools, repeats=repeats), labels)


def evaluate(
    plan: Plan,
    pools: Pools,
    scope: EvaluationScope,
    *,
    for_k: int,
    door: Door = CLI_DOOR,
    budget: CostBudget | None = None,
    repeats: int = DEFAULT_REPEATS,
    objects: Sequence[CorpusObject] = (),
    databases: bool = False,
    embedder: Any = None,
    retriever: str = "the retriever",
    model: str = "-",
    progress: bool = False,
) -> Evaluation:
    """Measure the retriever's order and every configuration of ``plan`` on ``pools``
    (deployed through ``door``), choose within ``budget`` (default 5x the default's cost),
    and break PR@K down by source over ``objects`` (the corpus, or every object the
    retriever handed over)."""
    from grapher_core.edges.detect import describe

    if objects:
        from grapher_core.diagnostics import CorpusFacts

        door = replace(door, corpus=CorpusFacts.of((o.id, o.metadata) for o in objects))
    before = load_now()
    measured = measure_grid(
        plan.grid, plan.built, pools, progress=progress, door=door, repeats=repeats
    )
    load = Load.around(before, repeats)
    skipped = {n: r for n, r in plan.skipped.items() if r is not None}
    skipped.update(measured.failed)
    excluded = unfit_configurations(measured.rows, measured.unfit, plan.loaded_unfit)
    cost = _cost(measured, plan, pools, embedder, repeats)
    choice = choose(
        measured.rows, for_k, excluded, cost=cost, budget=CostBudget() if budget is None else budget
    )
    recommended = choice.row if choice.row is not None else choice.default
    results, flat = _by_source(measured, recommended, for_k, pools, objects, databases)
    graph = describe(list(plan.detected))
    if door.fixed_label:
        graph = f"{door.fixed_label} + {graph}"
    gold = sum(map(len, pools.gold))
    level = "" if pools.gold_key is None else f" of metadata key {pools.gold_key!r}"
    setup = (
        f"{len(pools):,} questions ({gold:,} gold ids{level}); retriever: {retriever}; "
        f"deployed through {door.name}",
        *plan.setup_lines(),
    )
    return Evaluation(
        scope,
        measured.rows,
        choice,
        cost,
        load,
        dict(measured.notes),
        skipped,
        retriever,
        model,
        graph,
        pools.gold_key,
        results,
        flat,
        door=door.name,
        setup=setup,
        _config=config_for(choice, measured.rows, scope),
    )


def _by_source(
    measured: GridResult,
    row: Any,
    k: int,
    pools: Pools,
    objects: Sequence[CorpusObject],
    databases: bool,
) -> tuple[tuple[Any, ...] | None, frozenset[str]]:
    """PR@``k`` by source for ``row`` (the recommended one) and the sources where no object
    had an edge in any question's graph under it."""
    if row is None or not objects:
        return None, frozenset()
    sources = sources_of(objects, pools.gold, databases=databases, gold_key=pools.gold_key)
    if sources is None:
        return None, frozenset()
    results = tuple(by_source(row, measured.rows[0], sources, k))
    seen = {c.id for pool in pools.candidates for c in pool}
    flat = without_edges(objects, databases=databases, seen=seen, linked=set(row.linked))
    return results, frozenset(flat)
