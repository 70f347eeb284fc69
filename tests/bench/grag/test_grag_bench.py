"""The G-RAG study's helpers: answer labels and the paired significance tests."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from grapher_bench.grag.bench import has_answer, mcnemar, normalise_answer, paired_bootstrap


def test_has_answer_uses_squad_normalisation_and_whole_words() -> None:
    assert normalise_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert has_answer("It was built in 1889 by Gustave Eiffel.", ["Gustave Eiffel"])
    assert has_answer("Born in the U.S.", ["US"]) is True
    assert not has_answer("A trilogy of films", ["trio"])  # no substring matches
    assert not has_answer("anything", [""])


def test_paired_bootstrap_and_mcnemar_detect_a_real_difference_only() -> None:
    rng = np.random.default_rng(0)
    base = rng.random(200)
    better = base + 0.05
    result = paired_bootstrap(better, base)
    assert result["diff"] == pytest.approx(0.05) and result["p"] < 0.01
    assert result["low"] - 1e-9 <= 0.05 <= result["high"] + 1e-9
    noise = paired_bootstrap(base + rng.normal(0, 0.1, 200), base)
    assert noise["p"] > 0.01
    # McNemar: 10 questions only a gets, 0 only b: p = 2 * 0.5^10
    a = np.array([1] * 10 + [1] * 5 + [0] * 5)
    b = np.array([0] * 10 + [1] * 5 + [0] * 5)
    test = mcnemar(a, b)
    assert (test["only_a"], test["only_b"]) == (10, 0)
    assert test["p"] == pytest.approx(2 * 0.5**10)
    assert mcnemar(a, a)["p"] == 1.0


def test_in_domain_split_is_seeded_and_disjoint() -> None:
    from grapher_bench.grag.cli import _kept, held_out

    ids = [f"q{i}" for i in range(50)]
    held = held_out(ids, 0.7)
    assert len(held) == 15 and held == held_out(list(ids), 0.7) and held <= set(ids)
    assert held != held_out(ids, 0.7, seed=1)

    class E:
        def __init__(self, query_id: str) -> None:
            self.query_id = query_id

    examples = [E(q) for q in ids]
    test, train = _kept(examples, held), _kept(examples, held, False)
    assert {e.query_id for e in test} == held and len(train) == 35
    assert not {e.query_id for e in train} & held
    assert _kept(examples, None) == examples
    with pytest.raises(ValueError, match="fraction"):
        held_out(ids, 1.0)


def test_grag_compare_pairs_the_same_rows_and_writes_its_section(tmp_path) -> None:
    import argparse
    import json

    from grapher_bench.grag.cli import run_compare

    def rows(mrr: list[float]) -> list[dict[str, float]]:
        return [{"MRR": m, "MHits@10": m, "PR@10": float(m > 0.5)} for m in mrr]

    better = {"gold": {"hotpotqa": {"G-RAG": rows([1.0] * 30), "MLP": rows([0.0] * 30)}}}
    worse = {"gold": {"hotpotqa": {"G-RAG": rows([0.0] * 30)}}}
    a, b, doc = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "doc.md"
    a.write_text(json.dumps(better))
    b.write_text(json.dumps(worse))
    doc.write_text("x\n<!-- cmp:start -->\nstale\n<!-- cmp:end -->\ny\n")
    args = argparse.Namespace(
        a=a, b=b, names="concepts,fast", rows="G-RAG,G-RAG-RL,MLP", docs=doc, markers="cmp"
    )
    assert run_compare(args) == 0
    text = doc.read_text()
    assert "stale" not in text and text.startswith("x\n") and text.endswith("y\n")
    assert "| gold | hotpotqa | G-RAG | MRR | 100.0 | 0.0 | +100.0 |" in text
    assert "+30 q" in text and "MLP" not in text  # rows absent from one run are skipped
    worse["gold"]["hotpotqa"]["G-RAG"] = rows([0.0] * 29)
    b.write_text(json.dumps(worse))
    with pytest.raises(ValueError, match="same questions"):
        run_compare(args)


def test_summary_names_concept_rows_by_their_run_and_keeps_shared_rows_once() -> None:
    from grapher_bench.grag.cli import render_summary

    def run(text: str, value: float) -> dict:
        m = {k: value for k in ("MRR", "MHits@10", "PR@5", "PR@10")}
        return {
            "protocol": {"concept_text": text, "top_n": 20},
            "runs": {
                "gold/hotpotqa": {
                    "trained_on": "x",
                    "metrics": {"w/o reranker": {**m, "MRR": 0.5}, "G-RAG-RL": m},
                }
            },
        }

    text = render_summary(run("fast", 0.4), [run("concepts", 0.6)])
    assert "| G-RAG-RL [fast] | 40.0 /" in text and "| G-RAG-RL [concepts] | 60.0 /" in text
    assert text.count("| w/o reranker |") == 1
    assert "[fast] G-RAG-RL beats the retriever's order on MRR in 0 of 1" in text
    assert "[concepts] G-RAG-RL beats the retriever's order on MRR in 1 of 1" in text
    assert "| G-RAG-RL | 40.0" in render_summary(run("fast", 0.4))  # one run: plain names


def test_ship_step_scores_every_epoch_and_records_its_seed(monkeypatch, tmp_path) -> None:
    """The study's patience would end a run while the untrained network leads; the shipped
    checkpoint is chosen over all epochs, and its JSON says which seed made it."""
    import argparse
    from types import SimpleNamespace
    from typing import Any

    import grapher_bench.grag.bench as bench
    import grapher_core.embeddings as embeddings
    import grapher_core.learned.grag.checkpoint as checkpoint
    import grapher_core.learned.grag.train as train
    from grapher_bench.grag.cli import _ship
    from grapher_core.learned.loop import FitResult

    seen: dict[str, Any] = {}

    def fake_train(examples: Any, spec: Any, config: Any, **_: Any) -> FitResult:
        seen["loop"] = config
        return FitResult(model=None, best_epoch=18, best_metrics={"MRR": 0.5}, n_train=8, n_val=2)

    monkeypatch.setattr(bench, "examples_for", lambda *a: ["example"])
    monkeypatch.setattr(train, "train_grag", fake_train)
    monkeypatch.setattr(embeddings, "default_embedder", lambda: SimpleNamespace(name="minilm"))
    saving = SimpleNamespace(save=lambda m, config, path: seen.update(config=config))
    monkeypatch.setattr(checkpoint, "GRAG", saving)
    args = argparse.Namespace(
        concept_text="fast", path_concepts="document", dropout=0.1, epochs=20, lr=1e-4,
        top_n=20, ship=tmp_path / "ship",
    )  # fmt: skip
    _ship(SimpleNamespace(name="hotpotqa"), args, 64, 1e-4)
    loop = seen["loop"]
    assert loop.patience == 20 and loop.epochs == 20
    training = seen["config"].training
    assert training["seed"] == loop.seed == 0 and training["best_epoch"] == 18
