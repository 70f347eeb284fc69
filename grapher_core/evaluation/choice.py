"""Choosing a configuration, and the config file the choice becomes.

The default (GCS at its defaults, rank seeds, the detected graph) is what a user deploys
without choosing; a grid of a dozen configurations measured on a few dozen questions always
holds one that is a question or two ahead of it by chance. So the choice prefers the default
and switches only to a configuration that beats *the default* with the exact paired McNemar
test at p < 0.05 on PR@K, K being the cut-off the user feeds downstream; a configuration
whose ranker warned that it does not fit these inputs (a
:class:`~grapher_core.diagnostics.RankerUnfitWarning`) is never chosen, nor one above the cost
budget (:class:`~grapher_core.evaluation.cost.CostBudget`; the choice says which it set aside
for its cost). When the default is below the retriever's own order and nothing beats it
significantly, the advice is to keep that order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from grapher_core.evaluation.cost import CostBudget
from grapher_core.evaluation.grid import DEFAULT
from grapher_core.evaluation.measure import EvaluationScope, Measurement, ReembedCost
from grapher_core.evaluation.metrics import pct
from grapher_core.evaluation.paired import PairedComparison, compare_paired
from grapher_core.utils.stats import mcnemar_exact

__all__ = [
    "LEVEL",
    "Choice",
    "choose",
    "config_for",
    "questions_needed",
    "row_cost",
    "unfit_configurations",
]

LEVEL = 0.05
"""The p-value below which a win over the default is taken as real."""


@dataclass(frozen=True)
class Choice:
    """What the evaluation recommends: ``row`` (``None``: keep the retriever's order), the
    cut-off ``k`` it was chosen on, the default it was weighed against, the one-line
    ``reason``, what more questions would tell (``hint``), the configurations set aside
    (label -> the warning that set them aside), the cost budget in ms per query
    (``budget_ms``; ``None``: none) with its wording, the configurations above it (label ->
    ms per query) and, when the budget changed the choice, why (``cost_note``)."""

    row: Measurement | None
    k: int
    default: Measurement | None
    reason: str
    hint: str | None = None
    excluded: Mapping[str, str] = field(default_factory=dict)
    budget_ms: float | None = None
    budget: str = "no cost budget"
    over_budget: Mapping[str, float] = field(default_factory=dict)
    cost_note: str | None = None

    @property
    def keeps_default(self) -> bool:
        return self.row is not None and self.row is self.default


def unfit_configurations(
    rows: Sequence[Measurement],
    messages: Mapping[str, Iterable[str]],
    load_messages: Mapping[str, Iterable[str]] | None = None,
) -> dict[str, str]:
    """Label -> the warning that says the configuration's ranker does not fit these inputs
    (``messages``: label -> what it raised as
    :class:`~grapher_core.diagnostics.RankerUnfitWarning`). A ranker warns once per process,
    so what one configuration said holds for every configuration of the same ranker over the
    same graph; what a ranker said while loading (``load_messages``, ranker -> messages) holds
    for all of its configurations."""
    said: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        if row.setting is not None:
            key = (row.setting.ranker, row.setting.graph)
            said.setdefault(key, []).extend(messages.get(row.name, ()))
    out: dict[str, str] = {}
    for row in rows:
        setting = row.setting
        if setting is None:
            continue
        heard = [*said[(setting.ranker, setting.graph)]]
        heard += list((load_messages or {}).get(setting.ranker, ()))
        if heard:
            out[row.name] = heard[0]
    return out


def _key(row: Measurement, k: int) -> tuple[int, int]:
    """PR@K's questions, then gold@K's objects: what the choice compares."""
    return int(row.perfect(k).sum()), int(row.hits(k).sum())


def _versus(row: Measurement, other: Measurement, k: int) -> PairedComparison:
    return compare_paired(row.perfect(k), other.perfect(k))


def _find_default(rows: Sequence[Measurement], excluded: Mapping[str, str]) -> Measurement | None:
    """The default's row; without GCS in the grid, the first configuration measured that
    did not warn (what the user asked for first)."""
    fit = [row for row in rows[1:] if row.name not in excluded]
    return next((row for row in fit if row.setting == DEFAULT), fit[0] if fit else None)


@dataclass(frozen=True)
class _Priced:
    """The budget applied to the rows: the limit in ms, its wording, the rows above it."""

    limit: float | None
    wording: str
    over: dict[str, float]


def row_cost(row: Measurement, cost: ReembedCost | None) -> float | None:
    """What a configuration costs per query: its median rerank call, plus re-embedding the
    pool when it reads vectors a store does not hand back (``cost``)."""
    if cost is not None:
        return cost.wrapper_ms(row)
    latency = row.latency()
    return None if latency is None else latency["median"]


def _price(
    rows: Sequence[Measurement],
    default: Measurement,
    cost: ReembedCost | None,
    budget: CostBudget | None,
) -> _Priced:
    budget = budget or CostBudget(None, None)
    default_ms = row_cost(default, cost)
    limit = budget.limit(default_ms)
    over: dict[str, float] = {}
    if limit is not None:
        for row in rows[1:]:
            ms = row_cost(row, cost)
            if ms is not None and ms > limit:
                over[row.name] = ms
    return _Priced(limit, budget.describe(default_ms), over)


def _priced_out(rows: Sequence[Measurement], priced: _Priced, default: Measurement) -> str:
    """Why the configurations that beat the default were not chosen: their cost."""
    named = ", ".join(f"{r.name} ({_ms(priced.over[r.name])} per query)" for r in rows[:3])
    return (
        f"{named} beat{'s' if len(rows) == 1 else ''} the default ({default.name}) "
        f"significantly but cost{'s' if len(rows) == 1 else ''} more than the {priced.wording}: "
        "not chosen; raise the budget (--cost-budget, cost_budget=) to choose on quality alone"
    )


def _ms(value: float) -> str:
    return f"{value:.2f} ms" if value < 100 else f"{value:,.0f} ms"


def choose(
    rows: Sequence[Measurement],
    k: int,
    excluded: Mapping[str, str] | None = None,
    *,
    cost: ReembedCost | None = None,
    budget: CostBudget | None = None,
) -> Choice:
    """The recommendation on PR@``k`` (gold@``k`` breaking ties), ``rows[0]`` being the
    retriever's order: the best configuration within the cost ``budget`` that beats the
    default significantly and is not below the retriever; else the default when it is at or
    above the retriever (and changes some question's gold@``k``: otherwise deploying it buys
    nothing measured); else the retriever's order. A configuration that would have won but
    costs more than the budget is named, with its cost (``cost_note``)."""
    excluded = dict(excluded or {})
    base, n = rows[0], len(rows[0].gold_ranks)
    default = _find_default(rows, excluded)
    if default is None:
        return Choice(
            None, k, None, _keep_retriever("no configuration was measured"), None, excluded
        )
    priced = _price(rows, default, cost, budget)
    others = [r for r in rows[1:] if r is not default and r.name not in excluded]
    beating = [
        r
        for r in others
        if _significant_win(_versus(r, default, k)) and _key(r, k) >= _key(base, k)
    ]
    winners = [r for r in beating if r.name not in priced.over]
    priced_out = [r for r in beating if r.name in priced.over]
    note = _priced_out(priced_out, priced, default) if priced_out else None
    if winners:
        best = max(winners, key=lambda r: (*_key(r, k), float(r.reciprocal().sum())))
        test = _versus(best, default, k)
        reason = (
            f"switch to {best.name}: it beats the default ({default.name}) on PR@{k} "
            f"{_counts(test)}, significant on {n} questions; {_against_retriever(best, base, k)}"
        )
        hint: str | None = _with_train(None, n)
        return Choice(
            best,
            k,
            default,
            reason,
            hint,
            excluded,
            priced.limit,
            priced.wording,
            priced.over,
            note,
        )
    hint = _with_train(_hint(others, default, k, n), n)
    row, reason = _without_winner(default, base, k, within=" within the budget" if note else "")
    return Choice(
        row, k, default, reason, hint, excluded, priced.limit, priced.wording, priced.over, note
    )


def _without_winner(
    default: Measurement, base: Measurement, k: int, within: str = ""
) -> tuple[Measurement | None, str]:
    """With nothing (``within`` the budget) beating it: the default, or the retriever's order
    when the default is below it or changes nothing."""
    if _key(default, k) < _key(base, k):
        why = (
            f"the default ({default.name}) is below it on PR@{k} "
            f"({pct(base.perfect(k).mean())} -> {pct(default.perfect(k).mean())}, "
            f"{_counts(_versus(default, base, k))}) and nothing{within} beat the default "
            "significantly"
        )
        return None, _keep_retriever(why)
    if (default.hits(k) == base.hits(k)).all():
        why = f"the default ({default.name}) changes no question's gold@{k}"
        return None, _keep_retriever(why)
    reason = (
        f"keep the default ({default.name}): no configuration{within} beat it significantly "
        f"on PR@{k}; {_against_retriever(default, base, k)}"
    )
    return default, reason


TRAIN_AT = 30
"""Labelled questions from which ``grapher train`` is worth a mention (its own minimum)."""


def _with_train(hint: str | None, n: int) -> str | None:
    """The hint, and -- with enough questions and the gat extra installed -- that ``grapher
    train`` can fine-tune the GAT on them and keeps it only if it wins on held-out folds."""
    from importlib.util import find_spec

    if n < TRAIN_AT or find_spec("torch") is None or find_spec("torch_geometric") is None:
        return hint
    line = (
        f"with {n} labelled questions, `grapher train` can fine-tune the GAT on them; it keeps "
        "the result only if it beats GCS and the shipped GAT on held-out folds"
    )
    return line if hint is None else f"{hint}; {line}"


def _significant_win(test: PairedComparison) -> bool:
    return test.wins > test.losses and test.p < LEVEL


def _counts(test: PairedComparison) -> str:
    return f"+{test.wins}/-{test.losses}, McNemar p={test.p:.2g}"


def _keep_retriever(why: str) -> str:
    return f"keep the retriever's order: no configuration beat it on these questions ({why})"


def _against_retriever(row: Measurement, base: Measurement, k: int) -> str:
    return (
        f"against the retriever PR@{k} {pct(base.perfect(k).mean())} -> "
        f"{pct(row.perfect(k).mean())} ({_counts(_versus(row, base, k))})"
    )


def _hint(others: Sequence[Measurement], default: Measurement, k: int, n: int) -> str | None:
    """The closest contender the test did not support, and how many questions would make a
    win of its size significant."""
    ahead = [(r, _versus(r, default, k)) for r in others]
    ahead = [(r, t) for r, t in ahead if t.wins > t.losses]
    if not ahead:
        return None
    row, test = max(ahead, key=lambda pair: (pair[1].wins - pair[1].losses, -pair[1].p))
    text = (
        f"{row.name} won {test.wins}/{test.losses} against the default on PR@{k}, "
        f"p={test.p:.2g}: not significant on {n} questions"
    )
    if test.p < LEVEL:  # significant over the default but below the retriever
        return (
            f"{row.name} beats the default on PR@{k} ({_counts(test)}) but is below the retriever"
        )
    needed = questions_needed(test.wins, test.losses, n)
    if needed is None:
        return f"{text}; a win this size would need more than {100 * n:,} questions"
    return f"{text}; with ~{needed:,} questions a win this size would be significant"


def questions_needed(wins: int, losses: int, n: int, most: int = 100) -> int | None:
    """About how many questions a win of this size (the same shares of won and lost
    questions) needs to reach p < :data:`LEVEL`; ``None`` beyond ``most`` times ``n``."""
    if wins <= losses or n < 1:
        return None

    def significant_at(questions: int) -> bool:
        scale = questions / n
        return mcnemar_exact(round(wins * scale), round(losses * scale)) < LEVEL

    low, high = n, most * n
    if not significant_at(high):
        return None
    while high - low > max(1, low // 50):  # the p-value falls with the questions: bisect
        middle = (low + high) // 2
        if significant_at(middle):
            high = middle
        else:
            low = middle
    digits = max(0, int(math.log10(high)) - 1)  # two significant figures, rounded up
    return int(math.ceil(high / 10**digits) * 10**digits)


def config_for(
    choice: Choice, rows: Sequence[Measurement], scope: EvaluationScope
) -> dict[str, Any]:
    """The configuration a written config saves (validated by the core's loader): the chosen
    one, or the retriever's order; either way with what the evaluation measured and why."""
    from grapher_core.ranking.config import retriever_order_config

    ks = scope.ks
    evaluation: dict[str, Any] = {
        "questions_file": scope.questions_file,
        "questions": len(scope.question_ids),
        "corpus_objects": scope.n_objects,
        "k": list(ks),
        "for_k": choice.k,
        "retriever": rows[0].summary(ks),
    }
    if choice.default is not None:
        evaluation["default"] = choice.default.summary(ks)
    common = {"top_n": choice.k, "fetch_k": scope.top_n}
    if choice.row is None or choice.row.setting is None:
        return retriever_order_config(**common, note=choice.reason, evaluation=evaluation)
    from grapher_core.request.settings import RerankSettings

    setting = choice.row.setting
    evaluation["chosen"] = choice.row.summary(ks)
    settings = RerankSettings(
        proximities=setting.proximities,
        ranker=setting.ranker,
        alpha=setting.alpha,
        ranker_options=dict(setting.options),
        seed_transform=setting.seed_transform,
        top_n=common["top_n"],
    )
    return settings.to_config(
        keep_retriever_order=False,
        fetch_k=common["fetch_k"],
        note=f"chosen by grapher eval: {choice.reason}",
        evaluation=evaluation,
    )
