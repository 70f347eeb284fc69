"""Evaluating the pipeline a user deployed: their retriever hands the candidates, with their
metadata and relationships, and the one evaluation path (:mod:`grapher_core.evaluation.run`)
reranks, measures, chooses and reports on them.

The wrappers' ``evaluate_retriever`` functions run the user's retriever once per question and
convert what it returned with the same conversion their reranker uses; everything else -- the
checks, the grid over the graph detected in what was retrieved, gold at any metadata level, the
cost budget, the report -- is here, once for both frameworks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from grapher_core.candidates import Candidate, CorpusObject
from grapher_core.diagnostics import RESERVED_PREFIX, proximity_fields
from grapher_core.errors import InputError
from grapher_core.evaluation.cost import CostBudget
from grapher_core.evaluation.door import Door
from grapher_core.evaluation.measure import EvaluationScope, Pools
from grapher_core.evaluation.outcome import Evaluation
from grapher_core.evaluation.questions import Question

__all__ = ["DEFAULT_RANKERS", "EvalOptions", "check_options", "evaluate_pipeline"]

DEFAULT_RANKERS = ("gcs", "ppr", "gat")
"""The rankers of the grid when none are named (the GAT only with the ``gat`` extra)."""


@dataclass(frozen=True)
class EvalOptions:
    """The checked options of one evaluation (refused before any retrieval)."""

    ks: tuple[int, ...]
    for_k: int
    rankers: tuple[str, ...]
    budget: CostBudget
    repeats: int
    gold_key: str | None


def check_rankers(names: Sequence[str], option: str = "rankers") -> tuple[str, ...]:
    """The ranker names, lower-cased and each once; an unknown one is refused naming the
    registered ones."""
    from grapher_core.ranking.registry import available_rankers

    rankers = tuple(dict.fromkeys(str(r).strip().lower() for r in names if str(r).strip()))
    known = available_rankers()
    unknown = [r for r in rankers if r not in known]
    if not rankers or unknown:
        raise InputError(
            f"{option}: unknown ranker {(unknown or [str(names)])[0]!r}; choose from "
            f"{', '.join(known)}"
        )
    return rankers


def check_options(
    k: int | Sequence[int],
    for_k: int | None,
    rankers: Sequence[str],
    cost_budget: object,
    repeats: int,
    gold_key: str | None,
) -> EvalOptions:
    """Every option checked before the retriever is called: the cut-offs (positive
    integers), the K the choice reads (one of them, added when missing), the rankers, the
    cost budget, the repeats, the gold key."""
    values = [k] if isinstance(k, int) else list(k)
    if not values or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values
    ):
        raise InputError(f"k must be positive integers, got {k!r}")
    if for_k is not None and (not isinstance(for_k, int) or isinstance(for_k, bool) or for_k < 1):
        raise InputError(
            f"for_k must be a positive integer (the K you feed downstream), got {for_k!r}"
        )
    chosen_k = min(values) if for_k is None else for_k
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise InputError(f"repeats must be an integer >= 1, got {repeats!r}")
    if gold_key is not None and (not isinstance(gold_key, str) or not gold_key):
        raise InputError(f"gold_key must be a metadata key (a non-empty string), got {gold_key!r}")
    return EvalOptions(
        tuple(sorted({*values, chosen_k})),
        chosen_k,
        check_rankers(rankers),
        CostBudget.parse(cost_budget),
        repeats,
        gold_key,
    )


def _check_gold(pools: Pools, questions: Sequence[Question]) -> list[str]:
    """Refuse gold that no candidate of any question names (a wrong key or wrong ids: nothing
    could be measured); remarks for questions whose gold the retriever never returned."""
    seen: set[str] = set()
    for units in pools.units:
        for values in units.values():
            seen.update(values)
    wanted = {g for q in questions for g in q.gold}
    if not wanted & seen:
        key = "their ids" if pools.gold_key is None else f"their {pools.gold_key!r} values"
        sample = ", ".join(repr(v) for v in sorted(seen)[:3]) or "none"
        ids = [c.id for pool in pools.candidates for c in pool][:1]
        keys = sorted({str(k) for pool in pools.candidates for c in pool for k in c.metadata})
        raise InputError(
            f"no question's gold is among what the retriever returned, by {key} (e.g. "
            f"{sample}; gold e.g. {sorted(wanted)[0]!r}); a candidate id looks like "
            f"{ids[0] if ids else None!r} and metadata keys found are {keys[:10]}: give gold "
            "as those ids, or gold_key=<the metadata key your gold names>"
        )
    missing = sorted(wanted - seen)
    if not missing:
        return []
    return [
        f"note: {len(missing)} gold id{'s' if len(missing) > 1 else ''} never among any "
        f"question's candidates (e.g. {missing[0]!r}): no reranking can reach "
        f"{'them' if len(missing) > 1 else 'it'}; fetch more (a larger k) or check the ids"
    ]


def _objects(pools: Pools) -> list[CorpusObject]:
    """Every object the retriever handed over, once (for detection and PR@K by source)."""
    seen: dict[str, CorpusObject] = {}
    for pool in pools.candidates:
        for c in pool:
            seen.setdefault(c.id, CorpusObject(c.id, c.text, c.metadata))
    return list(seen.values())


def evaluate_pipeline(
    questions: Sequence[Question],
    pools_of: Sequence[Sequence[Candidate]],
    options: EvalOptions,
    *,
    door: Door,
    query_vectors: np.ndarray | None = None,
    retriever: str = "the retriever",
    questions_from: str = "questions",
    progress: bool = False,
) -> Evaluation:
    """The evaluation of the candidates a user's retriever returned (``pools_of``, one list
    per question, best first), deployed through ``door``."""
    from grapher_core.edges.detect import detect_proximities
    from grapher_core.evaluation.run import evaluate, plan_evaluation

    pools = Pools(
        tuple(q.gold for q in questions),
        tuple(q.text for q in questions),
        query_vectors,
        tuple(tuple(pool) for pool in pools_of),
        options.gold_key,
    )
    remarks = _check_gold(pools, questions)
    objects = _objects(pools)
    detected = [  # the door's own edges (LlamaIndex relationships) are its fixed proximities
        p
        for p in detect_proximities([Candidate(o.id, "", None, o.metadata) for o in objects])
        if not (fields := proximity_fields(p))
        or not all(f.startswith(RESERVED_PREFIX) for f in fields)
    ]
    scored = any(c.score is not None for pool in pools.candidates for c in pool)
    plan = plan_evaluation(
        options.rankers, detected, None, seeds=("rank", "score") if scored else ("rank",)
    )
    if not scored:
        remarks.append(
            "note: score seeds not tried: the retriever's candidates carry no score (LangChain: "
            "pass score_key=<the metadata key holding it>)"
        )
    size = max((len(pool) for pool in pools.candidates), default=0)
    scope = EvaluationScope(
        questions_from, tuple(q.id for q in questions), len(objects), size, options.ks
    )
    result = evaluate(
        plan,
        pools,
        scope,
        for_k=options.for_k,
        door=door,
        budget=options.budget,
        repeats=options.repeats,
        objects=objects,
        retriever=retriever,
        model=retriever,
        progress=progress,
    )
    return replace(result, remarks=(*result.remarks, *remarks))
