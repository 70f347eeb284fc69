"""The default-ranking study's table marks every cell below the retriever's order."""

from __future__ import annotations

from grapher_bench.bench.default_study import CONFIGS, _losses, _score, table


def row(values: dict[str, tuple[float, float, float]]) -> dict[str, object]:
    base = (50.0, 40.0, 60.0)
    return {
        "dataset": "toy",
        "retriever": "dense",
        "graph": "fk",
        "n_queries": 3,
        "retriever's order": base,
        **{label: values.get(label, base) for label in CONFIGS},
    }


def test_a_cell_below_the_retriever_is_marked_and_counted() -> None:
    rows = [row({"default": (50.0, 40.0, 59.0)}), row({"degree b=0.5": (51.0, 41.0, 61.0)})]
    text = table(rows)
    assert "50.0 / 40.0 / 59.0 −" in text and "51.0 / 41.0 / 61.0 |" in text
    assert _losses(rows) == {label: int(label == "default") for label in CONFIGS}


def test_score_counts_gold_in_the_top_k() -> None:
    ids = [f"c{i}" for i in range(12)]
    assert _score(ids, ["c0", "c7"]) == (1, 2, 0, 1)
    assert _score(ids, ["c11"]) == (0, 1, 0, 0)
