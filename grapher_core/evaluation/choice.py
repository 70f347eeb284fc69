"""Choosing a configuration, and the config file the choice becomes.

A configuration is chosen only where it is nowhere below the retriever's own order, so the
advice is never worse than keeping that order, which is the choice when nothing beats it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grapher_core.evaluation.measure import EvaluationScope, Measurement
from grapher_core.evaluation.report import gain_text

__all__ = ["choose", "config_for", "significant"]


def choose(rows: Sequence[Measurement], ks: Sequence[int]) -> Measurement | None:
    """The best configuration by PR@<largest K>, then gold@<smallest K>, then MRR -- only
    among those nowhere below the retriever (``rows[0]``) on gold@<smallest K>,
    PR@<smallest K> and PR@<largest K>, and above it on that order; ``None``: keep the
    retriever's order."""
    small, large = min(ks), max(ks)
    base = rows[0]

    def key(row: Measurement) -> tuple[int, int, float]:
        return (
            int(row.perfect(large).sum()),
            int(row.hits(small).sum()),
            float(row.reciprocal().sum()),
        )

    def safe(row: Measurement) -> bool:
        return (
            row.hits(small).sum() >= base.hits(small).sum()
            and row.perfect(small).sum() >= base.perfect(small).sum()
            and row.perfect(large).sum() >= base.perfect(large).sum()
        )

    eligible = [row for row in rows[1:] if safe(row) and key(row) > key(base)]
    return max(eligible, key=key) if eligible else None  # max keeps the first of equals


def significant(row: Measurement, base: Measurement, ks: Sequence[int]) -> bool:
    """Whether the paired tests of PR@<largest K> or gold@<smallest K> reach p < 0.05."""
    tests = row.versus(base, ks)
    return min(tests[f"PR@{max(ks)}"].p, tests[f"gold@{min(ks)}"].p) < 0.05


def config_for(
    choice: Measurement | None, rows: Sequence[Measurement], scope: EvaluationScope
) -> dict[str, Any]:
    """The configuration a written config saves (validated by the core's loader): the chosen
    one, or the retriever's order; either way with what the evaluation measured."""
    from grapher_core.ranking.config import retriever_order_config

    evaluation: dict[str, Any] = {
        "questions_file": scope.questions_file,
        "questions": len(scope.question_ids),
        "corpus_objects": scope.n_objects,
        "k": list(scope.ks),
        "retriever": rows[0].summary(scope.ks),
    }
    common = {"top_n": max(scope.ks), "fetch_k": scope.top_n}
    if choice is None or choice.setting is None:
        return retriever_order_config(
            **common,
            note="keep the retriever's order: no configuration beat it on these questions",
            evaluation=evaluation,
        )
    from grapher_core.request.settings import RerankSettings

    setting = choice.setting
    evaluation["chosen"] = choice.summary(scope.ks)
    caution = "" if significant(choice, rows[0], scope.ks) else "; not significant (p >= 0.05)"
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
        note=f"chosen by grapher eval: {gain_text(choice, rows[0], scope.ks)}{caution}",
        evaluation=evaluation,
    )
