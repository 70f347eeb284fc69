"""The GAT's inference paths give the same scores, and one function picks a path per device.

``plan`` (sorted CSR segments, the CPU kernel), ``plan-scatter`` (the kernel measured on CUDA),
``plan-graph`` (that kernel in padded buffers, a CUDA graph on a GPU, eager here) and
``forward`` (torch-geometric) must agree to 1e-5 on the graphs the ranker meets: sparse
table-like graphs and dense entity-like ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
import torch
from helpers_gat import narrow_inputs, perturbed_plan

from grapher_bench.latency.gat import graph_inputs
from grapher_core.errors import ConfigError, InputError
from grapher_core.learned.gat import model as gat_model
from grapher_core.learned.gat.checkpoint import GAT
from grapher_core.learned.gat.model import (
    INFERENCE_PATHS,
    InferencePlan,
    inference_path,
    path_choice,
)
from grapher_core.learned.graphed import PathChoice, PathChooser

ARGS = ("scalars", "objects", "query", "edge_index", "edge_attr")


Args = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def _tensors(arrays: dict[str, np.ndarray]) -> Args:
    scalars, objects, query, edge_index, edge_attr = (torch.from_numpy(arrays[k]) for k in ARGS)
    return scalars, objects, query, edge_index, edge_attr


def _scores(plan: InferencePlan, args: Args) -> dict[str, torch.Tensor]:
    with torch.inference_mode():
        return {path: plan(*args, path=path) for path in INFERENCE_PATHS}


def _assert_equal(scores: dict[str, torch.Tensor]) -> None:
    reference = scores["forward"]
    assert torch.isfinite(reference).all()
    for path, got in scores.items():
        assert got.shape == reference.shape, path
        torch.testing.assert_close(got, reference, atol=1e-5, rtol=1e-5, msg=path)


@pytest.fixture(scope="module")
def shipped_plan() -> InferencePlan:
    model, _ = GAT.load(GAT.default_path("gat"))
    return InferencePlan(model.eval())


@pytest.mark.parametrize(("kind", "n"), [("table", 60), ("entity", 200)])
def test_paths_give_equal_scores_with_the_shipped_gat(
    shipped_plan: InferencePlan, kind: str, n: int
) -> None:
    arrays = graph_inputs(kind, n, seed=3)
    if kind == "entity":  # dense: many in-edges per node, as on multi-hop pools
        assert arrays["edge_index"].shape[1] > 10 * n
    scores = _scores(shipped_plan, _tensors(arrays))
    _assert_equal(scores)
    outside_inference_mode = shipped_plan(*_tensors(arrays))  # the model's weights need grad
    torch.testing.assert_close(outside_inference_mode, scores["plan"])


@pytest.mark.parametrize("kind", ["table", "entity"])
def test_paths_agree_across_edge_chunks(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 7 edges: segments and heads cross chunk boundaries everywhere."""
    monkeypatch.setattr(gat_model, "EDGE_CHUNK", 7)
    arrays = narrow_inputs(kind, 40, seed=1, dim=16)
    _assert_equal(_scores(perturbed_plan(16, seed=2), _tensors(arrays)))


def test_paths_agree_on_shuffled_edges_and_self_loops_only() -> None:
    """The plan sorts edges itself; a graph of self-loops alone has one edge per segment."""
    plan = perturbed_plan(16, seed=4)
    arrays = narrow_inputs("entity", 30, seed=5, dim=16)
    order = np.random.default_rng(0).permutation(arrays["edge_index"].shape[1])
    shuffled = dict(arrays, edge_index=arrays["edge_index"][:, order].copy())
    shuffled["edge_attr"] = arrays["edge_attr"][order].copy()
    _assert_equal(_scores(plan, _tensors(shuffled)))
    loops = np.arange(30)
    only_loops = dict(arrays, edge_index=np.stack([loops, loops]))
    loop_attr = np.zeros((30, 7), dtype=np.float32)
    loop_attr[:, 0] = loop_attr[:, -1] = 1.0  # weight 1, "self" flag
    only_loops["edge_attr"] = loop_attr
    _assert_equal(_scores(plan, _tensors(only_loops)))


def test_paths_agree_when_logits_spread_past_one_shift() -> None:
    """Logits spread wider than SHIFT_SPREAD: the plan's softmax shifts each segment by its
    own maximum (one shared shift would underflow whole segments to zero) and still equals
    forward."""
    plan = perturbed_plan(16, seed=6)
    arrays = narrow_inputs("entity", 40, seed=7, dim=16)
    with torch.no_grad():
        for conv in plan.model.convs:
            conv.att.mul_(40.0)
    wide = InferencePlan(plan.model)
    args = _tensors(arrays)
    with torch.inference_mode():
        table_h = wide._encode(args[0], args[1], args[2].reshape(1, -1))
        edges = gat_model._sorted_edges(args[3], args[4], 40, wide.heads)
        table = table_h.new_empty(2 * 40 + edges.feature_rows.shape[0], wide.heads * wide.hidden)
        layer = wide.layers[0]
        torch.addmm(layer.bias, table_h, layer.weight, out=table[:80].view(40, -1))
        torch.mm(edges.feature_rows, layer.edge_weight, out=table[80:])
        logits = wide._logits(table, edges, layer)
    assert float(logits.max() - logits.min()) > gat_model.SHIFT_SPREAD  # the wide branch runs
    _assert_equal(_scores(wide, args))


def test_edge_feature_rows_are_grouped_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan's bag reads one row per distinct edge-feature row: the grouping reproduces
    every edge's features exactly, continuous weights included, and falls back to one row
    per edge when the grouping key collides."""
    rng = np.random.default_rng(0)
    attr = np.zeros((500, 7), dtype=np.float32)
    attr[:, 0] = rng.choice([0.25, 0.5, 1.0], 500)
    attr[:, 2] = rng.integers(0, 2, 500)
    attr[::7, 0] = rng.random(attr[::7].shape[0])  # continuous weights too
    rows, inverse = gat_model._distinct_rows(attr)
    np.testing.assert_array_equal(rows[inverse], attr)
    assert rows.shape[0] == len({tuple(r) for r in attr.tolist()}) < 500
    empty_rows, empty_inverse = gat_model._distinct_rows(np.zeros((0, 7), dtype=np.float32))
    assert empty_rows.shape == (0, 7) and empty_inverse.size == 0
    wide = rng.random((5, gat_model._ROW_KEY.size + 1)).astype(np.float32)
    rows, inverse = gat_model._distinct_rows(wide)  # wider than the key: one row per edge
    np.testing.assert_array_equal(inverse, np.arange(5))
    np.testing.assert_array_equal(rows[inverse], wide)
    monkeypatch.setattr(gat_model, "_ROW_KEY", np.ones(64))  # [1, 0] and [0, 1] collide
    colliding = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    rows, inverse = gat_model._distinct_rows(colliding)
    np.testing.assert_array_equal(inverse, [0, 1, 2])  # one row per edge
    np.testing.assert_array_equal(rows[inverse], colliding)


def test_bad_edges_and_paths_are_refused(shipped_plan: InferencePlan) -> None:
    args = _tensors(graph_inputs("table", 20, seed=0))
    scalars, objects, query, edge_index, edge_attr = args
    outside = edge_index.clone()
    outside[0, 0] = 20
    with pytest.raises(InputError, match="outside"):
        shipped_plan(scalars, objects, query, outside, edge_attr)
    negative = edge_index.clone()
    negative[1, -1] = -1
    with pytest.raises(InputError, match="outside"):
        shipped_plan(scalars, objects, query, negative, edge_attr)
    with pytest.raises(ConfigError, match="path"):
        shipped_plan(*args, path="fastest")  # type: ignore[arg-type]


def test_cpu_and_other_devices_follow_the_shipped_rule_and_cuda_waits_for_a_measurement() -> None:
    """CPU: plan (measured fastest everywhere; timing forward per process would cost up to a
    second); devices without the CSR kernel: forward; CUDA before any measurement: the
    unpadded scatter kernel, said as unmeasured."""
    for n, edges in [(1, 1), (200, 4_046), (2_000, 87_768), (20_000, 2_000_000)]:
        assert inference_path("cpu", n, edges) == "plan"
        assert inference_path(torch.device("cpu"), n, edges) == "plan"
        assert "shipped rule for CPU" in path_choice("cpu", n, edges).reason
        assert inference_path("mps", n, edges) == "forward"
        assert inference_path("meta", n, edges) == "forward"
        unmeasured = path_choice("cuda:1", n, edges)
        assert unmeasured.path == "plan-scatter" and not unmeasured.measured
        assert "not measured" in unmeasured.reason
    with pytest.raises(InputError):
        inference_path("cpu", -1, 0)


def test_cuda_measures_the_paths_that_fit_the_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a run, a CUDA size class is measured once: plan-graph is a candidate only where a
    CUDA-graph bucket holds the graph, and the fastest equal path is kept per size class."""
    timings = {"plan-graph": 0.6, "plan-scatter": 1.8, "plan": 2.5, "forward": 3.1}
    chooser = PathChooser(repeats=3, timer=lambda path, call: timings[path] * 1e-3)
    asked: list[str] = []

    def run(path: str) -> torch.Tensor:
        asked.append(path)
        return torch.ones(4)

    small = path_choice("cuda:0", 200, 4_046, chooser, run)
    assert small.path == "plan-graph" and small.measured
    assert [p for p, _ in small.timings_ms] == ["plan-graph", "plan-scatter", "plan", "forward"]
    asked.clear()
    assert path_choice("cuda:0", 250, 3_000, chooser, run) == small  # same class: kept
    assert asked == []
    timings["plan-graph"] = 5.1  # padding 87k edges to 131k costs more than it saves
    large = path_choice("cuda:0", 2_000, 87_768, chooser, run)
    assert large.path == "plan-scatter"
    huge = path_choice("cuda:0", 20_000, 2_000_000, chooser, run)
    assert "plan-graph" not in dict(huge.timings_ms)  # past the buckets: not a candidate
    assert path_choice("cuda:1", 200, 4_046, chooser) == path_choice("cuda:1", 200, 4_046)


def test_the_ranker_scores_through_the_chosen_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """GATRanker asks its plan for the path on every call and its scores equal forward's
    whichever path is chosen."""
    from helpers_gat import graph_of, table_candidates

    from grapher_core.learned.gat import ranker as gat_ranker
    from grapher_core.ranking.base import RankContext
    from grapher_core.ranking.seeds import make_seeds

    candidates = table_candidates(25, 384, seed=7)
    graph, seeds = graph_of(candidates), make_seeds(candidates)
    context = RankContext(candidates, None, np.asarray(candidates[0].embedding))
    ranker = gat_ranker.GATRanker()
    asked: list[tuple[str, int, int]] = []

    def choose(*args: torch.Tensor, edges_checked: bool = False) -> PathChoice:
        _, objects, _, edge_index, _, *checked = args
        assert checked == [True] or edges_checked  # made from the graph: no device sync
        asked.append((objects.device.type, objects.shape[0], edge_index.shape[1]))
        return PathChoice(path, "test")

    monkeypatch.setattr(ranker._plan, "choose", choose)
    scores = {}
    for path in INFERENCE_PATHS:
        scores[path] = ranker.rank(graph, seeds, context)
    assert asked[0][:2] == ("cpu", 25) and asked[0][2] > 25
    assert len(asked) == len(INFERENCE_PATHS)
    for path in INFERENCE_PATHS:
        np.testing.assert_allclose(scores[path], scores["forward"], atol=1e-5, rtol=1e-5)


def test_the_latency_table_goes_at_the_end_and_replaces_only_itself(tmp_path: Path) -> None:
    """``gat-latency --paths --write-doc``: other sections stay as they are, a rerun replaces
    its own section, and a device this machine lacks gets rows that say so."""
    from grapher_bench.cli import main
    from grapher_bench.latency.gat import NOT_MEASURED, SECTION

    doc = tmp_path / "speed.md"
    doc.write_text("# Speed\n\n## Other\n\nkept\n", encoding="utf-8")
    argv = ["gat-latency", "--paths", "--sizes", "12", "--repeats", "2", "--budget-s", "0.1"]
    argv += ["--devices", "cpu,cuda", "--write-doc", str(doc)]
    assert main(argv) == 0
    doc.write_text(doc.read_text(encoding="utf-8") + "\n## Later\n\nalso kept\n", encoding="utf-8")
    assert main(argv) == 0
    text = doc.read_text(encoding="utf-8")
    assert text.count(SECTION) == 1
    assert text.index("## Other") < text.index("## Later") < text.index(SECTION)
    assert "kept" in text and "also kept" in text
    table = [line for line in text.splitlines() if line.startswith(("| table", "| entity"))]
    assert [line.split(" | ")[3] for line in table if "| cpu |" in line] == ["cpu", "cpu"]
    if not torch.cuda.is_available():
        assert sum(NOT_MEASURED in line for line in table) == 2
    cpu_rows = [line for line in table if "| cpu |" in line]
    assert all(line.rstrip(" |").endswith("| plan") for line in cpu_rows)  # the CPU rule
    assert all(line.count("CUDA only") == 1 for line in cpu_rows)  # plan-graph, not timed
    assert "Why each path was chosen" in text and "shipped rule for CPU" in text


def test_the_end_to_end_table_has_a_row_per_pool_and_says_what_was_not_measured(
    tmp_path: Path,
) -> None:
    """``gat-latency --end-to-end --write-doc``: the GAT call, its kernel and GCS per pool,
    with both ratios; a device this machine lacks is named, not left out silently."""
    from grapher_bench.cli import main
    from grapher_bench.latency.gat import END_TO_END_SECTION, NOT_MEASURED

    doc = tmp_path / "speed.md"
    argv = ["gat-latency", "--end-to-end", "--sizes", "12", "--repeats", "2"]
    assert main([*argv, "--devices", "cpu,cuda", "--write-doc", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert text.count(END_TO_END_SECTION) == 1
    rows = [line for line in text.splitlines() if line.startswith(("| table", "| entity"))]
    assert len(rows) == (4 if torch.cuda.is_available() else 2)
    assert all(line.count("x (") == 2 and line.rstrip(" |").endswith("plan") for line in rows[:2])
    if not torch.cuda.is_available():
        assert f"cuda rows: {NOT_MEASURED}" in text
