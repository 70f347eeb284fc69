"""``position-prior``, the baseline qa-gnn is credited against: what it learns, that it is fitted
on training queries only, and that the summary and the report carry qa-gnn vs the prior."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from grapher_bench.qa_gnn import cli
from grapher_bench.qa_gnn.cli import cv_folds, per_query, summarize
from grapher_bench.qa_gnn.prior import (
    PositionPrior,
    first_sentence,
    fit_logistic,
    fit_position_prior,
    position_features,
)
from grapher_bench.qa_gnn.report import prior_table, render
from grapher_core.errors import ConfigError, GraphERError, InputError


@dataclass
class Example:
    """The fields of a QAExample the prior, alpha tuning and the metrics read."""

    query_id: str
    n_gold: int
    labels: np.ndarray
    seeds: np.ndarray
    support: np.ndarray
    adjusted: np.ndarray


def synthetic_set(n_queries: int = 40, n: int = 20, seed: int = 0) -> SimpleNamespace:
    """Gold items are first sentences with ordinary dense scores: only position finds them."""
    rng = np.random.default_rng(seed)
    examples, candidates, buckets = [], [], []
    for q in range(n_queries):
        chunk = rng.integers(1, 5, size=n)
        first = rng.choice(n, size=5, replace=False)
        chunk[first] = 0
        labels = np.zeros(n)
        labels[first[:2]] = 1.0
        seeds = rng.uniform(0.3, 0.8, size=n)
        examples.append(Example(f"q{q}", 2, labels, seeds, np.zeros(n), seeds.copy()))
        candidates.append([SimpleNamespace(metadata={"chunk_index": int(c)}) for c in chunk])
        buckets.append({"gold": "2", "type": "odd" if q % 2 else "even"})
    return SimpleNamespace(
        name="synthetic",
        examples=examples,
        objects=np.zeros((1, 4), dtype=np.float32),
        buckets=buckets,
        graphs=[],
        candidates=candidates,
    )


def test_first_sentence_reads_the_chunk_index() -> None:
    assert first_sentence(SimpleNamespace(metadata={"chunk_index": 0})) == 1.0
    assert first_sentence(SimpleNamespace(metadata={"chunk_index": "0"})) == 1.0
    assert first_sentence(SimpleNamespace(metadata={"chunk_index": 3})) == 0.0
    assert first_sentence(SimpleNamespace(metadata={})) == 0.0
    assert first_sentence(SimpleNamespace(metadata={"chunk_index": "x"})) == 0.0
    cands = [SimpleNamespace(metadata={"chunk_index": i}) for i in (1, 0)]
    x = position_features(np.array([0.2, 0.6]), cands)
    assert x.tolist() == [[0.0, 0.0], [1.0, 1.0]]  # dense min-max scaled per query


def test_prior_learns_the_first_sentence_effect_and_ranks_gold_up() -> None:
    data = synthetic_set()
    train, test = list(range(30)), list(range(30, 40))
    prior = fit_position_prior(
        [data.examples[i] for i in train], [data.candidates[i] for i in train]
    )
    assert prior.coef[1] > 2.0  # a strong positive weight on "first sentence"
    assert abs(prior.coef[1]) > abs(prior.coef[0])  # dense carries no signal here
    examples = [data.examples[i] for i in test]
    ranked = [prior.scores(data.examples[i].seeds, data.candidates[i]) for i in test]
    dense = per_query(examples, [e.seeds for e in examples])["R@5"]
    with_prior = per_query(examples, ranked)["R@5"]
    assert np.mean(with_prior) > np.mean(dense) + 0.3
    assert all(r == 1.0 for r in with_prior)  # 5 first sentences hold both gold: all in the top 5


def test_fit_logistic_recovers_a_known_model() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4000, 2))
    y = (rng.random(4000) < 1 / (1 + np.exp(-(1.5 * x[:, 0] - 2.0 * x[:, 1] + 0.5)))).astype(float)
    coef, intercept = fit_logistic(x, y, l2=1e-6)
    assert np.allclose(coef, [1.5, -2.0], atol=0.2) and abs(intercept - 0.5) < 0.2
    with pytest.raises(InputError):
        fit_logistic(x, y[:10])


def test_fit_logistic_matches_the_qa_gnn_fusion_fit() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    from grapher_core.learned.qa_gnn.train import fit_fusion, fusion_features

    data = synthetic_set(12)
    rng = np.random.default_rng(2)
    gnn = [rng.normal(size=e.seeds.size) for e in data.examples]
    expected = fit_fusion(data.examples, gnn)
    x = np.concatenate(
        [fusion_features(e.seeds, e.adjusted, g) for e, g in zip(data.examples, gnn, strict=True)]
    )
    coef, intercept = fit_logistic(x, np.concatenate([e.labels for e in data.examples]))
    assert np.allclose(coef, expected.coef) and np.isclose(intercept, expected.intercept)


def test_cv_folds_keep_every_test_query_out_of_its_training_fold() -> None:
    splits = cv_folds(10, 3, seed=0)
    assert len(splits) == 3
    for train, test in splits:
        assert not set(train.tolist()) & set(test.tolist())
        assert sorted(train.tolist() + test.tolist()) == list(range(10))
    assert sorted(i for _, test in splits for i in test.tolist()) == list(range(10))
    with pytest.raises(ConfigError):
        cv_folds(3, 5, seed=0)


def test_prior_is_fitted_on_the_training_queries_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the protocol's own ``_train`` (the network's training stubbed): every fit of the
    prior sees exactly the training folds' queries, never the fold it then scores."""
    pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    import grapher_bench.qa_gnn.prior as prior_module
    import grapher_core.learned.qa_gnn.train as train_module

    seen: list[set[str]] = []
    real_fit = prior_module.fit_position_prior

    def spy(examples: Any, candidates: Any, l2: float = 1e-2) -> PositionPrior:
        seen.append({e.query_id for e in examples})
        return real_fit(examples, candidates, l2)

    fake = SimpleNamespace(
        stage1={"skipped": True},
        stage2={"seconds": 0.0, "epochs": 0},
        seconds=0.0,
        fusion=SimpleNamespace(coef=(1.0, 0.0, 0.0), intercept=0.0),
    )
    monkeypatch.setattr(prior_module, "fit_position_prior", spy)
    monkeypatch.setattr(train_module, "train_qa_gnn", lambda *a, **k: fake)
    args = argparse.Namespace(epochs=1, stage1_epochs=1, patience=1, seed=0)
    data = synthetic_set(30)
    scored: list[set[str]] = []

    def score(trained: dict[str, Any], test_set: Any) -> dict[str, Any]:
        scored.append({e.query_id for e in test_set.examples})
        return {"position-prior": cli.prior_scores(trained["prior"], test_set)}

    merged, timings = cli.cross_validate(
        data, 3, 0, lambda train_set: cli._train(train_set, args), score
    )
    all_ids = {e.query_id for e in data.examples}
    assert len(seen) == len(scored) == 3 and len(timings) == 3
    for fitted, tested in zip(seen, scored, strict=True):
        assert not fitted & tested and fitted | tested == all_ids
    assert all(t["prior"]["features"] == ["dense", "first sentence"] for t in timings)
    assert all(v is not None for v in merged["position-prior"])


def test_summary_and_report_test_qa_gnn_against_the_prior() -> None:
    data = synthetic_set(20)
    examples = data.examples
    prior = fit_position_prior(examples, data.candidates)
    scores = {
        "dense": [e.seeds for e in examples],
        "qa-adjust": [e.adjusted for e in examples],
        "position-prior": cli.prior_scores(prior, data),
        "qa-gnn": [e.seeds for e in examples],  # a qa-gnn that learned nothing
    }
    summary = summarize(data, examples, scores)
    test = summary["tests_vs_prior"]["qa-gnn"]
    assert {"p_permutation", "better", "worse"} <= set(test)
    assert test["worse"] > test["better"] and test["p_permutation"] < 0.01
    assert summary["tests"]["position-prior"]["better"] > 0  # the prior against dense too
    bucket = summary["buckets"]["type=odd"]
    assert "position-prior" in bucket and "test_vs_prior" in bucket
    runs = {"synthetic (3-fold CV)": summary}
    headline = prior_table(runs)
    assert len(headline) == 3 and headline[2].startswith("| synthetic (3-fold CV) | 20 |")


def test_report_renders_the_prior_in_every_ranker_table(tmp_path: Path) -> None:
    import json

    data = synthetic_set(20)
    prior = fit_position_prior(data.examples, data.candidates)
    scores = {
        "dense": [e.seeds for e in data.examples],
        "qa-adjust": [e.adjusted for e in data.examples],
        "position-prior": cli.prior_scores(prior, data),
        "qa-gnn (gnn only)": [e.seeds for e in data.examples],
        "qa-gnn": [e.seeds for e in data.examples],
    }
    summary = summarize(data, data.examples, scores)
    training = {
        "alpha": 0.9,
        "stage1": {"skipped": True},
        "stage2": {"seconds": 1.0, "epochs": 1},
        "seconds": 1.0,
        "fusion": {"coef": [1.0, 0.0, 0.0], "intercept": 0.0},
        "prior": prior.as_dict(),
    }
    run = {**summary, "training": [training]}
    (tmp_path / "cv.json").write_text(json.dumps({"synthetic (3-fold CV)": run}))
    ablation = {k: summary[k] for k in ("metrics", "tests", "tests_vs_prior")}
    (tmp_path / "ablations.json").write_text(
        json.dumps({"a -> b": {"full": {**ablation, "training": training}}})
    )
    text = render(tmp_path)
    assert "### qa-gnn against the position prior" in text
    assert "| synthetic (3-fold CV) (n=20) | **position-prior** |" in text
    p_prior = f"{summary['tests_vs_prior']['qa-gnn']['p_permutation']:.3g}"
    qa_row = next(line for line in text.splitlines() if "| **qa-gnn** |" in line)
    assert p_prior in qa_row.split("|")[-2]  # the last column: qa-gnn vs the prior
    bucket_row = next(line for line in text.splitlines() if "| type=odd |" in line)
    assert bucket_row.count("↑") == 2  # vs dense and vs the prior
    ablation_row = next(line for line in text.splitlines() if line.startswith("| a -> b | full"))
    assert ablation_row.count("↑") == 2
    coef = ", ".join(f"{c:.2f}" for c in prior.coef)
    assert f"[{coef}] |" in text  # the prior's coefficients in the training table


def test_results_from_before_the_prior_still_render(tmp_path: Path) -> None:
    import json

    run = {
        "n": 2,
        "metrics": {n: {"R@5": 0.5, "PR@5": 0.0, "PR@10": 0.5} for n in ("dense", "qa-gnn")},
        "tests": {"qa-gnn": {"p_permutation": 1.0, "better": 0, "worse": 0}},
        "buckets": {
            "gold=2": {
                "n": 2,
                "dense": 0.5,
                "qa-adjust": 0.5,
                "qa-gnn": 0.5,
                "test": {"p_permutation": 1.0, "better": 0, "worse": 0},
            }
        },
    }
    (tmp_path / "transfer.json").write_text(json.dumps({"a -> b": run}))
    text = render(tmp_path)
    assert "| a -> b (n=2) | **qa-gnn** |" in text and "against the position prior" not in text


def test_prior_errors_are_grapher_errors() -> None:
    with pytest.raises(GraphERError):
        fit_position_prior([], [])
    with pytest.raises(GraphERError):
        position_features(np.zeros(3), [SimpleNamespace(metadata={})])
