"""A ranking call's arrays cross to a GPU in one packed copy and come back apart, unchanged.

The packing (float32 words, integers as int32) and unpacking (views, int64 indices) are
tested here on CPU tensors; the pinned, non-blocking copy itself where a GPU is present.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
import torch

from grapher_core.errors import InputError
from grapher_core.learned.inputs import PackedArrays, arrays_to_device


def _arrays(n: int = 7, edges: int = 11, dim: int = 5) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [
        rng.random((n, 2), dtype=np.float32),
        rng.random((n, dim), dtype=np.float32),
        rng.random(dim, dtype=np.float32),
        rng.integers(0, n, (2, edges)).astype(np.int64),
        rng.random((edges, 7), dtype=np.float32),
    ]


def _assert_same(got: list[torch.Tensor], arrays: list[np.ndarray]) -> None:
    assert len(got) == len(arrays)
    for tensor, array in zip(got, arrays, strict=True):
        assert tuple(tensor.shape) == array.shape
        expected = torch.int64 if array.dtype.kind == "i" else torch.float32
        assert tensor.dtype == expected
        np.testing.assert_array_equal(tensor.cpu().numpy(), array)


def test_packed_arrays_come_back_unchanged_with_int64_indices() -> None:
    arrays = _arrays()
    packed = PackedArrays.pack(arrays)
    assert packed.buffer.dtype == np.float32 and packed.buffer.size == sum(a.size for a in arrays)
    _assert_same(packed.unpack(torch.from_numpy(packed.buffer)), arrays)
    reused = np.full(1000, np.nan, dtype=np.float32)  # a larger buffer from an earlier call
    again = PackedArrays.pack(arrays, reused)
    assert np.shares_memory(again.buffer, reused)
    _assert_same(again.unpack(torch.from_numpy(reused)), arrays)
    empty = [np.zeros((0, 2), dtype=np.float32), np.zeros((2, 0), dtype=np.int64)]
    _assert_same(PackedArrays.pack(empty).unpack(torch.zeros(0)), empty)


def test_indices_past_int32_and_other_dtypes_are_refused() -> None:
    with pytest.raises(InputError, match="int32"):
        PackedArrays.pack([np.array([2**31], dtype=np.int64)])
    with pytest.raises(InputError, match="dtype"):
        PackedArrays.pack([np.array(["a"])])


def test_on_cpu_the_arrays_are_the_callers_memory() -> None:
    arrays = _arrays()
    got = arrays_to_device(arrays, "cpu")
    _assert_same(got, arrays)
    assert all(np.shares_memory(t.numpy(), a) for t, a in zip(got, arrays, strict=True))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_cuda_one_copy_brings_every_array_and_the_buffer_is_reused() -> None:
    first, second = _arrays(), _arrays(n=9, edges=30)
    got = arrays_to_device(first, "cuda")
    assert all(t.device.type == "cuda" for t in got)
    _assert_same(got, first)
    _assert_same(arrays_to_device(second, "cuda"), second)  # the staging buffer rewritten
    _assert_same(got, first)  # the first call's tensors are their own
