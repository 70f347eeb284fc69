"""The ego-graph sidecar (``EgoGraphIndex.save`` / ``load``) is checked, not trusted.

Each damaged, foreign or oversized variant is refused with a ``SidecarError`` naming the file
(and the field), before any large allocation: sizes come from the zip directory and the array
headers, never from inflating or allocating first.
"""

from __future__ import annotations

import contextlib
import io
import json
import tracemalloc
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grapher_core.candidates import Candidate, CorpusObject
from grapher_core.diagnostics import GraphERWarning
from grapher_core.edges.keys import ForeignKeys
from grapher_core.errors import InputError, InputFileNotFoundError, SidecarError
from grapher_core.expand.egograph import EgoGraphIndex, corpus_fingerprint
from grapher_core.expand.source import InMemorySource
from grapher_core.rerank import GraphReranker

MENTIONS = ForeignKeys("mentions", target_field="title")
IDS = ["A", "B", "C", "D"]


def _corpus(ids: list[str] = IDS) -> list[CorpusObject]:
    links = {ids[0]: [ids[1]], ids[1]: [ids[2]]}
    return [CorpusObject(i, f"{i} text", {"title": i, "mentions": links.get(i, [])}) for i in ids]


def _vectors(n: int = 4) -> np.ndarray:
    return np.eye(n, 3) + 0.1


@pytest.fixture
def saved(tmp_path: Path) -> tuple[EgoGraphIndex, Path]:
    index = EgoGraphIndex.build(_corpus(), _vectors(), [MENTIONS])
    path = tmp_path / "ego.npz"
    index.save(path)
    return index, path


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def _write(path: Path, members: dict[str, bytes | np.ndarray]) -> Path:
    """An .npz written member by member, so any member can be anything."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in members.items():
            data = value if isinstance(value, bytes) else _npy(value)
            archive.writestr(f"{name}.npy", data)
    return path


def _tampered(path: Path, **changes: Any) -> Path:
    arrays: dict[str, Any] = _arrays(path)
    for name, value in changes.items():
        if value is None:
            arrays.pop(name)
        else:
            arrays[name] = value
    return _write(path.with_name("tampered.npz"), arrays)


def _refused(path: Path, field: str | None, match: str, **options: Any) -> SidecarError:
    with pytest.raises(SidecarError, match=match) as caught:
        EgoGraphIndex.load(path, **options)
    message = str(caught.value)
    assert str(path) in message
    if field is not None:
        assert f"field {field!r}" in message
    assert "\n" not in message
    return caught.value


def test_round_trip_keeps_everything_and_writes_the_exact_path(
    saved: tuple[EgoGraphIndex, Path], tmp_path: Path
) -> None:
    index, path = saved
    loaded = EgoGraphIndex.load(path, corpus=_corpus())
    assert loaded.ids == index.ids and loaded.hops == index.hops
    assert np.allclose(loaded.vectors, index.vectors)
    assert [loaded.group(i) for i in range(4)] == [index.group(i) for i in range(4)]
    assert loaded.fingerprint == corpus_fingerprint(IDS)
    bare = tmp_path / "sidecar"  # np.savez would have written sidecar.npz
    index.save(bare)
    assert bare.is_file() and not bare.with_suffix(".npz").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ego.npz", "sidecar"]  # no temporary


def test_foreign_corpus_is_refused_with_a_count(saved: tuple[EgoGraphIndex, Path]) -> None:
    _, path = saved
    _refused(path, None, r"another corpus: 4 of its 4 ids are not in", corpus=["x", "y"])
    with pytest.raises(SidecarError, match="another corpus"):
        EgoGraphIndex.load(path).reranker(GraphReranker([MENTIONS]), objects=_corpus(list("WXYZ")))


def test_a_grown_corpus_warns_that_new_objects_have_no_ego_graph(
    saved: tuple[EgoGraphIndex, Path],
) -> None:
    _, path = saved
    with pytest.warns(GraphERWarning, match=r"older version of the corpus: 1 of its 5 objects"):
        EgoGraphIndex.load(path, corpus=[*IDS, "E"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EgoGraphIndex.load(path, corpus=list(reversed(IDS)))  # same objects: no warning needed


def test_a_source_that_knows_no_member_is_said_not_silent(
    saved: tuple[EgoGraphIndex, Path],
) -> None:
    _, path = saved
    foreign = _corpus(list("WXYZ"))
    reranker = EgoGraphIndex.load(path).reranker(
        GraphReranker([MENTIONS]), InMemorySource(foreign, embeddings=_vectors()), n=2
    )
    candidate = Candidate("W", "W text", 0.5, {"title": "W"}, _vectors()[0])
    with pytest.warns(GraphERWarning, match="none of the .* ego-graph members"):
        reranker.join([candidate], _vectors()[0])


def _set(arrays: dict[str, np.ndarray], field: str, position: int, value: Any) -> np.ndarray:
    changed = arrays[field].copy()
    changed[position] = value
    return changed


DAMAGED: dict[str, tuple[str, Callable[[dict[str, np.ndarray]], Any], str]] = {
    # name: (field blamed, the tampered value from the saved arrays, message)
    "members-minus-one": (  # used to wrap to the last object
        "members",
        lambda a: _set(a, "members", -1, -1),
        r"lie in \[0, 4\).*found -1",
    ),
    "members-past-the-end": ("members", lambda a: _set(a, "members", -1, 4), "found 4"),
    "float-members": ("members", lambda a: a["members"].astype(np.float64), "dtype float64"),
    "wrong-row-count": ("vectors", lambda a: a["vectors"][:3], r"shape \(3, 3\), expected"),
    "nan-vectors": ("vectors", lambda a: _set(a, "vectors", 2, np.nan), "row 2 holds NaN"),
    "non-unit-vectors": ("vectors", lambda a: a["vectors"] * 2, "norm 2, expected 1"),
    "decreasing-indptr": ("indptr", lambda a: _set(a, "indptr", 2, 0), "increase at every step"),
    "short-indptr": ("indptr", lambda a: a["indptr"][:-1], r"shape \(4,\), expected \(5,\)"),
    "negative-hops": ("hops", lambda a: np.array([-3]), "must be >= 1, got -3"),
    "float-hops": ("hops", lambda a: np.array([1.0]), "dtype float64"),
    "ids-not-json": ("ids", lambda a: np.array(["not json"]), "not a JSON list"),
    "duplicate-ids": ("ids", lambda a: np.array([json.dumps(["A", "A", "C", "D"])]), "twice"),
    "ids-edited": (
        "fingerprint",
        lambda a: np.array([json.dumps(["A", "B", "C", "E"])]),
        "does not match the ids",
    ),
    "ids-nested-deep": ("ids", lambda a: np.array(["[" * 100_000 + "]" * 100_000]), "JSON list"),
    "ids-missing": ("ids", lambda a: None, "missing"),
    "extra-member": ("extra", lambda a: np.zeros(3), "unexpected member"),
    "pickled-object-array": (
        "vectors",
        lambda a: np.array([object()], dtype=object),
        "not a plain float array",
    ),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_damaged_fields_are_refused_naming_file_and_field(
    saved: tuple[EgoGraphIndex, Path], case: str
) -> None:
    _, path = saved
    blamed, make, match = DAMAGED[case]
    field = "ids" if blamed == "fingerprint" else blamed
    _refused(_tampered(path, **{field: make(_arrays(path))}), blamed, match)


def test_group_without_its_centre_first_is_refused(saved: tuple[EgoGraphIndex, Path]) -> None:
    _, path = saved
    members = _arrays(path)["members"].copy()
    members[[0, 1]] = members[[1, 0]]
    _refused(_tampered(path, members=members), "members", "start with its centre")


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: b"not a zip file at all" * 10,
        lambda raw: raw[: len(raw) // 2],
        lambda raw: raw.replace(b"members.npy", b"memberz.npy"),
        lambda raw: b"",
    ],
    ids=["garbage", "truncated", "renamed-member", "empty"],
)
def test_damaged_archives_name_the_file(
    saved: tuple[EgoGraphIndex, Path], damage: Callable[[bytes], bytes]
) -> None:
    _, path = saved
    path.write_bytes(damage(path.read_bytes()))
    _refused(path, None, r"not an \.npz archive|unexpected member|damaged|missing")


def test_flipped_data_bytes_fail_the_checksum(saved: tuple[EgoGraphIndex, Path]) -> None:
    _, path = saved
    members = _arrays(path)
    stored = path.with_name("stored.npz")
    with zipfile.ZipFile(stored, "w", zipfile.ZIP_STORED) as archive:
        for name, array in members.items():
            archive.writestr(f"{name}.npy", _npy(array))
    raw = bytearray(stored.read_bytes())
    at = raw.index(b"\x93NUMPY", raw.index(b"vectors.npy")) + 130  # past the 128-byte header
    raw[at] ^= 0xFF
    stored.write_bytes(bytes(raw))
    _refused(stored, "vectors", "damaged")


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputFileNotFoundError, match=r"nope\.npz does not exist"):
        EgoGraphIndex.load(tmp_path / "nope.npz")
    _refused(tmp_path, None, "is a directory")


def _peak_mib(call: Callable[[], object]) -> float:
    tracemalloc.start()
    with contextlib.suppress(SidecarError):
        call()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def test_header_declaring_seven_tebibytes_is_refused_before_allocating(
    saved: tuple[EgoGraphIndex, Path],
) -> None:
    _, path = saved
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)}
    )
    huge = _tampered(path, vectors=header.getvalue() + b"\x00" * 64)
    _refused(huge, "vectors", r"shape \(1000000, 1000000\).*8,000,000,000,000 bytes")
    assert _peak_mib(lambda: EgoGraphIndex.load(huge)) < 5


def test_a_member_that_inflates_past_the_cap_is_refused_before_inflating(
    saved: tuple[EgoGraphIndex, Path],
) -> None:
    _, path = saved
    bomb = _tampered(path, vectors=np.zeros((16_000, 1024), dtype=np.float32))  # 64 MiB inflated
    assert bomb.stat().st_size < 200_000
    _refused(
        bomb, None, r"declares 65,5\d\d,\d+ bytes once inflated.*cap of 8,388,608", max_bytes=2**23
    )
    assert _peak_mib(lambda: EgoGraphIndex.load(bomb, max_bytes=2**23)) < 2


def test_build_refuses_nan_vectors_bool_caps_and_negative_hops() -> None:
    corpus = _corpus()
    vectors = _vectors()
    vectors[2, 1] = np.nan
    with pytest.raises(InputError, match="node_vectors: row 2 holds NaN"):
        EgoGraphIndex.build(corpus, vectors, [MENTIONS])
    with pytest.raises(InputError, match="max_members must be an integer >= 1, got True"):
        EgoGraphIndex.build(corpus, _vectors(), [MENTIONS], max_members=True)
    with pytest.raises(InputError, match="hops must be an integer >= 1, got -3"):
        EgoGraphIndex.build(corpus, _vectors(), [MENTIONS], hops=-3)
    with pytest.raises(InputError, match="must be 2-D"):
        EgoGraphIndex.build(corpus, np.ones(4), [MENTIONS])
    with pytest.raises(InputError, match="appears twice"):
        EgoGraphIndex.build([*corpus[:3], corpus[0]], _vectors(), [MENTIONS])
