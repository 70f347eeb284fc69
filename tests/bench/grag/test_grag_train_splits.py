"""The G-RAG train-splits verdict table: trained rows as mean ± sd over the seeds, the
baselines (the retriever's order and the untrained network) beside them."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from grapher_bench.grag.train_splits import BASE, TRAINED, UNTRAINED, aggregate, render


def test_table_has_seed_mean_sd_and_per_seed_intervals() -> None:
    def run(seed: int) -> dict[str, object]:
        metrics = {
            BASE: {"MRR": 0.50, "PR@10": 0.70},
            UNTRAINED: {"MRR": 0.45, "PR@10": 0.65},
            TRAINED: {"MRR": 0.48 + 0.01 * seed, "PR@10": 0.70},
        }
        ci = {"diff": -0.02 + 0.01 * seed, "low": -0.05, "high": 0.01, "p": 0.5}
        return {"sets": {"musique": {"n": 192, "metrics": metrics, "vs_base": ci}}}

    agg = aggregate({"runs": {str(s): run(s) for s in range(3)}})
    assert agg["musique"]["rows"][TRAINED]["MRR"] == pytest.approx([0.48, 0.49, 0.50])
    row = render(agg).splitlines()[2]
    assert row.startswith("| musique | 192 | 50.0 / 70.0 | 45.0 / 65.0 | 49.0 ± 1.0 | 70.0 ± 0.0 |")
    assert "| -1.0 ± 1.0 | +4.0 ± 1.0 |" in row
    assert "-2.0 [-5.0, +1.0], -1.0 [-5.0, +1.0], +0.0 [-5.0, +1.0]" in row
