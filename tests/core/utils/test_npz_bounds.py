"""``read_npz`` bounds what it derives before deriving it: the zip directory (method, ratio,
compressed sizes), row widths, and every working copy against the cap; data is read chunk by
chunk into its final dtype, finiteness and integer ranges checked per chunk."""

from __future__ import annotations

import io
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from grapher_core.errors import SidecarError
from grapher_core.utils import npz
from grapher_core.utils.npz import ArraySpec, read_npz

VECTORS = {"v": ArraySpec("f", 2, dtype="float64", finite=True)}


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array)
    return buffer.getvalue()


def _write(path: Path, method: int = zipfile.ZIP_DEFLATED, **members: bytes) -> Path:
    with zipfile.ZipFile(path, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(f"{name}.npy", data)
    return path


def _refused(path: Path, fields: dict[str, ArraySpec], match: str, **options: object) -> str:
    with pytest.raises(SidecarError, match=match) as caught:
        read_npz(path, fields, **options)  # type: ignore[arg-type]
    assert str(path) in str(caught.value)
    return str(caught.value)


def test_float32_comes_back_float64_read_only_without_a_whole_array_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(npz, "_CHUNK", 1 << 16)  # many chunks
    rows = np.random.default_rng(0).standard_normal((2000, 384)).astype(np.float32)
    path = _write(tmp_path / "a.npz", v=_npy(rows))
    tracemalloc.start()
    got = read_npz(path, VECTORS)["v"]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert got.dtype == np.float64 and not got.flags.writeable
    np.testing.assert_array_equal(got, rows)
    assert peak < got.nbytes * 1.1  # the float64 result and a chunk; no float32 whole copy


def test_a_nan_in_a_late_chunk_names_its_row_in_c_and_fortran_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(npz, "_CHUNK", 1 << 12)
    rows = np.ones((500, 64), dtype=np.float32)
    rows[431, 7] = np.inf
    _refused(_write(tmp_path / "c.npz", v=_npy(rows)), VECTORS, r"field 'v': row 431 holds NaN")
    fortran = np.asfortranarray(rows)
    _refused(_write(tmp_path / "f.npz", v=_npy(fortran)), VECTORS, "row 431 holds NaN")


def test_big_endian_and_narrowed_integers(tmp_path: Path) -> None:
    spec = {"i": ArraySpec("iu", 1, dtype="int64")}
    swapped = np.arange(5, dtype=">u4")
    got = read_npz(_write(tmp_path / "b.npz", i=_npy(swapped)), spec)["i"]
    assert got.dtype == np.int64 and got.tolist() == [0, 1, 2, 3, 4]
    huge = np.array([1, 2**64 - 1], dtype=np.uint64)
    _refused(_write(tmp_path / "h.npz", i=_npy(huge)), spec, r"field 'i': value .* does not fit")


def test_rows_wider_than_the_bound_are_refused(tmp_path: Path) -> None:
    wide = _write(tmp_path / "w.npz", v=_npy(np.zeros((1, 70_000), dtype=np.float32)))
    _refused(wide, VECTORS, r"field 'v': shape \(1, 70000\): rows wider than 65,536")


def test_working_copies_are_counted_before_reading(tmp_path: Path) -> None:
    rows = np.zeros((1000, 1000), dtype=np.float32)  # 4 MB stored, 8 MB as float64
    path = _write(tmp_path / "m.npz", v=_npy(rows))
    cap = 4_000_000 + 2 * npz._CHUNK + 1_000_000  # holds the stored bytes, not the float64 copy
    _refused(path, VECTORS, r"field 'v': .*\(8,000,000 for this field as float64\)", max_bytes=cap)
    costly = {"v": ArraySpec("f", 2, cost=3)}  # what the caller does with it counts too
    _refused(path, costly, "working memory", max_bytes=cap)
    assert read_npz(path, {"v": ArraySpec("f", 2)}, max_bytes=cap)["v"].dtype == np.float32


def test_a_large_member_past_its_ratio_is_refused_before_inflating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(npz, "_RATIO_FLOOR", 1 << 20)
    zeros = _npy(np.zeros((1024, 1024), dtype=np.float32))  # 4 MiB of zeros: ~1000:1
    path = _write(tmp_path / "z.npz", v=zeros)
    spec = {"v": ArraySpec("f", 2, max_ratio=64)}
    _refused(path, spec, r"field 'v': declares 4,194,\d+ bytes inflated from .* refused before")
    assert read_npz(path, {"v": ArraySpec("f", 2)})["v"].shape == (1024, 1024)  # deflate's bound
    small = _write(tmp_path / "s.npz", v=_npy(np.zeros((8, 8), dtype=np.float32)))
    assert read_npz(small, spec)["v"].shape == (8, 8)  # under the floor: never refused


def _patch_directory(path: Path, name: str, **values: int) -> None:
    """Rewrite ``name``'s sizes in the central directory (offsets as zipfile lays them out)."""
    raw = bytearray(path.read_bytes())
    entry = raw.index(b"PK\x01\x02")
    while raw[entry + 46 : entry + 46 + len(name)] != name.encode():
        entry = raw.index(b"PK\x01\x02", entry + 4)
    for field, offset in (("compress_size", 20), ("file_size", 24)):
        if field in values:
            raw[entry + offset : entry + offset + 4] = values[field].to_bytes(4, "little")
    path.write_bytes(bytes(raw))


def test_directory_lies_are_refused(tmp_path: Path) -> None:
    data = _npy(np.ones((4, 4), dtype=np.float32))
    bz = _write(tmp_path / "bz.npz", zipfile.ZIP_BZIP2, v=data)
    _refused(bz, VECTORS, r"field 'v': compression method 12: expected stored or deflated")
    stored = _write(tmp_path / "st.npz", zipfile.ZIP_STORED, v=data)
    _patch_directory(stored, "v.npy", file_size=len(data) + 64)
    _refused(stored, VECTORS, "stored member declares")
    far = _write(tmp_path / "far.npz", v=data)
    _patch_directory(far, "v.npy", compress_size=10_000_000)
    _refused(far, VECTORS, r"members declare 10,000,000 compressed bytes, the file has")
