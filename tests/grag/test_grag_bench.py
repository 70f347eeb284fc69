"""The G-RAG study's helpers: answer labels and the paired significance tests."""

from __future__ import annotations

import numpy as np
import pytest

from grapher_bench.grag_bench import has_answer, mcnemar, normalise_answer, paired_bootstrap


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
    assert test["p"] == pytest.approx(2 * 0.5 ** 10)
    assert mcnemar(a, a)["p"] == 1.0
