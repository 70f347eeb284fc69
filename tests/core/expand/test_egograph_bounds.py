"""The ego-graph sidecar bounds what loading derives: vector width, member count, the float64
copy of its vectors and the ratio its members inflate by, all before reading them."""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from grapher_core.candidates import CorpusObject
from grapher_core.edges.keys import ForeignKeys
from grapher_core.errors import SidecarError
from grapher_core.expand.egograph import MAX_VECTOR_DIM, EgoGraphIndex
from grapher_core.utils import npz

MENTIONS = ForeignKeys("mentions", target_field="title")


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array)
    return buffer.getvalue()


def _sidecar(path: Path, n: int, vectors: np.ndarray, members: np.ndarray | None = None) -> Path:
    """A sidecar of ``n`` one-member ego-graphs (or ``members``, one group each in turn)."""
    members = np.arange(n, dtype=np.int64) if members is None else members
    indptr = np.linspace(0, len(members), n + 1).astype(np.int64)
    ids = json.dumps([f"o{i}" for i in range(n)])
    arrays = {"vectors": vectors, "indptr": indptr, "members": members,
              "hops": np.array([1]), "ids": np.array([ids])}  # fmt: skip
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            archive.writestr(f"{name}.npy", _npy(array))
    return path


def _refused(path: Path, field: str, match: str, **options: object) -> None:
    with pytest.raises(SidecarError, match=match) as caught:
        EgoGraphIndex.load(path, **options)  # type: ignore[arg-type]
    assert str(path) in str(caught.value) and f"field {field!r}" in str(caught.value)


def test_vectors_wider_than_the_bound_are_refused(tmp_path: Path) -> None:
    wide = np.zeros((2, MAX_VECTOR_DIM + 1), dtype=np.float32)
    _refused(_sidecar(tmp_path / "w.npz", 2, wide), "vectors", "rows wider than 65,536")


def test_more_members_than_n_squared_are_refused(tmp_path: Path) -> None:
    vectors = np.eye(3, dtype=np.float32)
    path = _sidecar(tmp_path / "m.npz", 3, vectors, np.zeros(10, dtype=np.int64))
    _refused(path, "members", r"10 members for 3 ego-graphs")


def test_the_float64_copy_is_counted_against_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(npz, "_CHUNK", 1 << 16)
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((2000, 256)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    path = _sidecar(tmp_path / "v.npz", 2000, rows)
    cap = int(rows.nbytes * 1.5)  # the ids' parse and the rest fit beside the float32 rows only
    _refused(path, "vectors", r"working memory .*as float64", max_bytes=cap)
    assert EgoGraphIndex.load(path, max_bytes=2 * cap).vectors.dtype == np.float64
    tracemalloc.start()
    loaded = EgoGraphIndex.load(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert loaded.vectors.dtype == np.float64 and loaded.vectors.shape == (2000, 256)
    np.testing.assert_array_equal(loaded.vectors, rows)
    assert peak < 1.5 * loaded.vectors.nbytes + 2 * npz._CHUNK  # one float64 copy, chunks


def test_a_round_trip_still_loads_and_searches_the_same(tmp_path: Path) -> None:
    corpus = [
        CorpusObject(i, f"{i} text", {"title": i, "mentions": m})
        for i, m in (("A", ["B"]), ("B", ["C"]), ("C", []), ("D", []))
    ]
    index = EgoGraphIndex.build(corpus, np.eye(4, 3) + 0.1, [MENTIONS])
    index.save(tmp_path / "ego.npz")
    loaded = EgoGraphIndex.load(tmp_path / "ego.npz")
    query = np.array([0.2, 1.0, 0.1])
    assert [p for p, _ in loaded.search(query, 4)] == [p for p, _ in index.search(query, 4)]
    assert loaded.indptr.dtype == np.int64 and loaded.members.dtype == np.int64
