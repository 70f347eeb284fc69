"""``GraphedKernel`` through the GAT's ``plan-graph``: its scatter kernel in padded, reused
buffers (a CUDA graph per bucket on a GPU).

Here on CPU the buffers run eagerly, which tests what a replay reads: padding that changes no
real node's score, buffers reused across calls of one bucket (a smaller graph after a larger
one must not see the larger one's edges), the bucket rule and the least-recently-used cap,
and calls from several threads. The CUDA tests (capture, replay, a failed capture) run where a
GPU is present.
"""

from __future__ import annotations

import threading
import warnings

import pytest

pytest.importorskip("torch")
import torch
from helpers_gat import narrow_inputs, perturbed_plan

from grapher_core.errors import InputError
from grapher_core.learned.gat.model import InferencePlan
from grapher_core.learned.graphed import (
    EDGE_BUCKETS,
    NODE_BUCKETS,
    GraphedKernel,
    size_bucket,
)

Args = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
DIM = 16


def _plan(seed: int = 2, architecture: str = "gat") -> InferencePlan:
    plan: InferencePlan = perturbed_plan(DIM, seed, architecture)
    return plan


def _args(kind: str, n: int, seed: int, device: str = "cpu") -> Args:
    arrays = narrow_inputs(kind, n, seed, DIM)
    keys = ("scalars", "objects", "query", "edge_index", "edge_attr")
    scalars, objects, query, edge_index, edge_attr = (
        torch.from_numpy(arrays[k]).to(device) for k in keys
    )
    return scalars, objects, query, edge_index, edge_attr


def _check(plan: InferencePlan, args: Args) -> torch.Tensor:
    with torch.inference_mode():
        got = plan(*args, path="plan-graph")
        reference = plan(*args, path="forward")
    assert got.shape == (args[1].shape[0],)
    torch.testing.assert_close(got, reference, atol=1e-5, rtol=1e-5)
    return got


def test_size_buckets_round_up_to_powers_of_two_with_a_padding_node() -> None:
    assert size_bucket(0, 0) == (NODE_BUCKETS[0], EDGE_BUCKETS[0])
    assert size_bucket(200, 4_046) == (256, 4_096)
    assert size_bucket(255, 4_097) == (256, 8_192)
    assert size_bucket(256, 848) == (512, 1_024)  # 256 nodes need a 257th, the padding node
    assert size_bucket(2_000, 87_768) == (2_048, 131_072)
    assert size_bucket(NODE_BUCKETS[1], 10) is None  # no room for the padding node
    assert size_bucket(100, EDGE_BUCKETS[1] + 1) is None
    with pytest.raises(InputError):
        size_bucket(-1, 0)


def test_a_smaller_graph_after_a_larger_one_in_the_same_bucket() -> None:
    """The second call leaves most of the first one's rows in the buffers: only its own rows
    and the edge list are rewritten, and its scores are its own."""
    plan = _plan()
    larger, smaller = _args("entity", 50, seed=50), _args("entity", 30, seed=30)
    assert size_bucket(50, larger[3].shape[1]) == size_bucket(30, smaller[3].shape[1])
    first = _check(plan, larger)
    _check(plan, smaller)
    again = _check(plan, larger)
    torch.testing.assert_close(again, first)
    assert len(plan.graphed.buckets) == 1


def test_buffers_made_in_inference_mode_serve_calls_outside_it() -> None:
    """The ranker calls in inference mode, a user's script may not: one plan serves both."""
    plan = _plan()
    args = _args("entity", 50, seed=50)
    first = _check(plan, args)
    again = plan(*args, path="plan-graph")  # outside inference mode, same buffers
    torch.testing.assert_close(again, first)
    other = _plan(seed=3)
    outside = other(*args, path="plan-graph")  # made outside, then used inside
    torch.testing.assert_close(_check(other, args), outside)


def test_a_plan_pickles_without_its_buffers_and_scores_the_same_after() -> None:
    """A reranker holding a GAT goes to worker processes by pickle: buffers and lock stay."""
    import pickle

    plan = _plan()
    args = _args("entity", 50, seed=50)
    first = _check(plan, args)
    back = pickle.loads(pickle.dumps(plan))
    assert back.graphed.buckets == () and plan.graphed.buckets != ()
    torch.testing.assert_close(_check(back, args), first)


def test_every_graph_kind_and_the_mlp_score_as_unpadded() -> None:
    for kind, n in [("table", 30), ("table", 300), ("entity", 120)]:
        _check(_plan(), _args(kind, n, seed=n))
    mlp = _plan(architecture="mlp")
    _check(mlp, _args("entity", 50, seed=3))


def test_buckets_past_the_cap_drop_the_least_recently_used() -> None:
    plan = _plan()
    plan.graphed = GraphedKernel(plan._graph_kernel, name="gat", max_graphs=2)
    sizes = [("table", 30), ("table", 300), ("entity", 200)]
    buckets = []
    for kind, n in sizes:
        args = _args(kind, n, seed=n)
        buckets.append(size_bucket(n, args[3].shape[1]))
        _check(plan, args)
    assert len(set(buckets)) == 3
    assert plan.graphed.buckets == tuple(buckets[1:])
    _check(plan, _args("table", 300, seed=300))  # used again: now the most recent
    assert plan.graphed.buckets == (buckets[2], buckets[1])


def test_a_graph_too_large_for_a_bucket_runs_unpadded() -> None:
    plan = _plan()
    args = _args("table", NODE_BUCKETS[1], seed=0)
    _check(plan, args)
    assert plan.graphed.buckets == ()


def test_edges_outside_the_graph_are_refused_before_the_buffers() -> None:
    plan = _plan()
    scalars, objects, query, edge_index, edge_attr = _args("table", 20, seed=0)
    outside = edge_index.clone()
    outside[0, 0] = 20  # would read a padding row
    with pytest.raises(InputError, match="outside"):
        plan(scalars, objects, query, outside, edge_attr, path="plan-graph")
    assert plan.graphed.buckets == ()


def test_threads_sharing_a_plan_get_their_own_scores() -> None:
    """The buckets' buffers are shared: calls take turns, each gets its own graph's scores."""
    plan = _plan()
    cases = [_args("entity", n, seed=n) for n in (40, 45, 50, 55)]
    with torch.inference_mode():
        expected = [plan(*args, path="forward") for args in cases]
    failures: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for _ in range(10):
                with torch.inference_mode():
                    got = plan(*cases[k], path="plan-graph")
                torch.testing.assert_close(got, expected[k], atol=1e-5, rtol=1e-5)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[0]


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@cuda
def test_cuda_captures_one_graph_per_bucket_and_replays_it() -> None:
    """Two graphs of one bucket share one capture; a graph of another bucket gets its own.
    The buckets are asserted first: node counts alone do not fix the edge bucket (entity
    graphs of 60 and 40 nodes have 1,132 and 760 edges, buckets 2,048 and 1,024)."""
    plan = InferencePlan(_plan().model.to("cuda"))
    larger = _args("entity", 50, seed=50, device="cuda")
    smaller = _args("entity", 30, seed=30, device="cuda")
    other = _args("table", 300, seed=3, device="cuda")
    bucket = size_bucket(50, larger[3].shape[1])
    assert bucket == size_bucket(30, smaller[3].shape[1]) == (64, 1_024)
    assert size_bucket(300, other[3].shape[1]) not in (bucket, None)
    first = _check(plan, larger)
    _check(plan, smaller)
    torch.testing.assert_close(_check(plan, larger), first)
    assert plan.graphed.captures == 1 and not plan.graphed.capture_failed
    assert plan.graphed.buckets == (bucket,)
    _check(plan, other)
    assert plan.graphed.captures == 2


@cuda
def test_a_failed_capture_is_said_and_the_plan_runs_unpadded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = InferencePlan(_plan().model.to("cuda"))

    def refuse(*_: object) -> None:
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(plan.graphed, "_capture", refuse)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _check(plan, _args("entity", 60, seed=1, device="cuda"))
    assert plan.graphed.capture_failed
    assert any("capture failed" in str(w.message) for w in caught)
    _check(plan, _args("entity", 40, seed=2, device="cuda"))
