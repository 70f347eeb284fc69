"""``PathChooser``: the fastest path equal to forward, measured once per size class.

Timings are injected (no timed tests): the mechanism is what is tested here, on a real plan's
paths where equality matters and on stand-in outputs where only the choice does. Measured
choices on a GPU: ``.ci/gpu-check`` (``gat-latency --paths``, its ``chosen`` column).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("torch")
import torch
from helpers_gat import narrow_inputs, perturbed_plan

from grapher_core.errors import InputError
from grapher_core.learned.graphed import PathChoice, PathChooser, Run, Timer

FALLBACK = PathChoice("plan-scatter", "the rule")
PATHS = ("plan-graph", "plan-scatter", "plan", "forward")


def _timer(timings: dict[str, float]) -> Timer:
    """Runs the call, and says it took ``timings[path]`` ms."""

    def timer(path: str, call: Callable[[], object]) -> float:
        call()
        return timings[path] * 1e-3

    return timer


def _runs(outputs: dict[str, torch.Tensor], log: list[str]) -> Run:
    def run(path: str) -> torch.Tensor:
        log.append(path)
        output = outputs.get(path)
        if output is None:
            raise RuntimeError(f"{path} cannot run here")
        return output

    return run


def test_the_fastest_equal_path_wins_with_its_reason() -> None:
    timings = {"plan-graph": 5.0, "plan-scatter": 2.7, "plan": 3.0, "forward": 3.6}
    chooser = PathChooser(repeats=4, timer=_timer(timings))
    scores = torch.tensor([0.5, -1.0, 2.0])
    log: list[str] = []
    choice = chooser.choose("k", PATHS, _runs(dict.fromkeys(PATHS, scores), log), FALLBACK)
    assert choice.path == "plan-scatter" and choice.measured
    assert [p for p, _ in choice.timings_ms] == ["plan-scatter", "plan", "forward", "plan-graph"]
    assert [ms for _, ms in choice.timings_ms] == pytest.approx([2.7, 3.0, 3.6, 5.0])
    assert "fastest measured" in choice.reason and "plan-scatter 2.7 ms" in choice.reason
    assert log[0] == "forward"  # the reference runs first
    assert len(log) == 1 + 3 + 4 * len(PATHS)  # reference, one check each, 4 timed rounds


def test_a_path_unequal_to_forward_is_never_chosen_however_fast() -> None:
    timings = {"plan-graph": 0.1, "plan-scatter": 2.0, "plan": 1.0, "forward": 3.0}
    chooser = PathChooser(repeats=2, timer=_timer(timings))
    scores = torch.tensor([0.5, -1.0, 2.0])
    outputs = dict.fromkeys(PATHS, scores)
    outputs["plan-graph"] = scores + torch.tensor([0.0, 1e-2, 0.0])  # off by 1e-2
    outputs["plan"] = torch.tensor([0.5, float("nan"), 2.0])  # NaN is unequal too
    choice = chooser.choose("k", PATHS, _runs(outputs, []), FALLBACK)
    assert choice.path == "plan-scatter"
    assert dict(choice.excluded).keys() == {"plan-graph", "plan"}
    assert "unequal to forward" in dict(choice.excluded)["plan-graph"]
    assert {p for p, _ in choice.timings_ms} == {"plan-scatter", "forward"}
    within = dict(outputs, **{"plan-graph": scores + 5e-5})  # within tolerance: equal
    again = PathChooser(repeats=2, timer=_timer(timings))
    assert again.choose("k", PATHS, _runs(within, []), FALLBACK).path == "plan-graph"


def test_a_choice_is_kept_per_size_class_and_measured_once() -> None:
    timings = {"plan-graph": 1.0, "plan-scatter": 2.0, "plan": 3.0, "forward": 4.0}
    chooser = PathChooser(repeats=2, timer=_timer(timings))
    log: list[str] = []
    run = _runs(dict.fromkeys(PATHS, torch.ones(2)), log)
    assert chooser.choose("other", PATHS, None, FALLBACK) is FALLBACK  # nothing measured
    assert chooser.choices == {}
    first = chooser.choose(("cuda:0", (256, 4096)), PATHS, run, FALLBACK)
    measured = len(log)
    assert chooser.choose(("cuda:0", (256, 4096)), PATHS, run, FALLBACK) is first
    assert chooser.choose(("cuda:0", (256, 4096)), PATHS, None, FALLBACK) is first
    assert len(log) == measured  # kept: not measured again
    timings["plan-graph"] = 9.0
    second = chooser.choose(("cuda:0", (2048, 131072)), PATHS, run, FALLBACK)
    assert (first.path, second.path) == ("plan-graph", "plan-scatter")
    assert len(log) > measured and len(chooser.choices) == 2


def test_a_failed_calibration_falls_back_and_a_failing_path_is_left_out() -> None:
    timings = dict.fromkeys(PATHS, 1.0)
    chooser = PathChooser(repeats=2, timer=_timer(timings))
    outputs = dict.fromkeys(("plan-scatter", "plan"), torch.ones(3))  # forward cannot run
    failed = chooser.choose("k", PATHS, _runs(outputs, []), FALLBACK)
    assert failed.path == "plan-scatter" and not failed.measured
    assert "calibration failed" in failed.reason and "the rule" in failed.reason
    assert chooser.choose("k", PATHS, None, FALLBACK) is failed  # kept: not retried per call
    outputs = {"forward": torch.ones(3), "plan": torch.ones(3)}  # two paths raise
    left_out = PathChooser(repeats=2, timer=_timer(timings)).choose(
        "k", PATHS, _runs(outputs, []), FALLBACK
    )
    assert left_out.path in ("plan", "forward")
    assert {p for p, _ in left_out.excluded} == {"plan-graph", "plan-scatter"}
    assert all("raised RuntimeError" in why for _, why in left_out.excluded)


def test_a_bad_input_is_raised_not_measured() -> None:
    """An input error names the input; it is not a reason to fall back, and nothing is kept."""
    chooser = PathChooser(repeats=2, timer=_timer(dict.fromkeys(PATHS, 1.0)))

    def run(path: str) -> torch.Tensor:
        raise InputError("edge_index holds a node outside [0, 3)")

    with pytest.raises(InputError, match="outside"):
        chooser.choose("k", PATHS, run, FALLBACK)
    assert chooser.choices == {}


def test_a_real_plan_measured_on_the_wall_clock_keeps_one_of_its_equal_paths() -> None:
    """The default timer on a real plan (CPU here): every path agrees with forward, so none
    is left out and the choice is one of them, with four timings."""
    import pickle

    plan = perturbed_plan(16, seed=2)
    arrays = narrow_inputs("entity", 40, seed=1, dim=16)
    keys = ("scalars", "objects", "query", "edge_index", "edge_attr")
    args = [torch.from_numpy(arrays[k]) for k in keys]
    chooser = PathChooser(repeats=2)

    def run(path: str) -> torch.Tensor:
        return plan(*args, path=path)

    with torch.inference_mode():
        choice = chooser.choose("cpu-test", PATHS, run, FALLBACK)
    assert choice.measured and choice.excluded == ()
    assert choice.path in PATHS and len(choice.timings_ms) == len(PATHS)
    assert all(ms > 0 for _, ms in choice.timings_ms)
    assert pickle.loads(pickle.dumps(chooser)).choices == {}  # measured here, not elsewhere


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_a_cuda_plan_measures_its_paths_once_per_size_class() -> None:
    """On a GPU: the first call measures, later calls of the class reuse the choice, the
    scores equal forward's, and a CUDA-graph bucket whose replay lost keeps no buffers."""
    from grapher_core.learned.gat.model import InferencePlan

    plan = InferencePlan(perturbed_plan(16, seed=2).model.to("cuda"))
    arrays = narrow_inputs("entity", 50, seed=50, dim=16)
    keys = ("scalars", "objects", "query", "edge_index", "edge_attr")
    args = [torch.from_numpy(arrays[k]).to("cuda") for k in keys]
    with torch.inference_mode():
        got = plan.run(*args)
        reference = plan(*args, path="forward")
        torch.testing.assert_close(got, reference, atol=1e-5, rtol=1e-5)
        (choice,) = plan.chooser.choices.values()
        assert choice.measured and choice.path in PATHS, choice.reason
        if choice.path != "plan-graph":
            assert plan.graphed.buckets == ()
        plan.run(*args)
    assert len(plan.chooser.choices) == 1
