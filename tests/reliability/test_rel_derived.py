"""Bound what is derived, before deriving it.

* A 4.7 MB ego-graph sidecar whose vectors (shape matching its ids) inflate to 1 GiB is
  refused in milliseconds, before inflating, naming the file and the field, in a child capped
  at 2.5 GB of address space (it used to inflate, then copy to float64: a bare MemoryError).
* A sidecar whose float32 vectors fit the cap but whose float64 copy does not is refused: every
  working copy is counted.
* A checkpoint config with a non-finite float, a mistyped boolean or a mistyped string is
  refused by every learned family (GAT, G-RAG, qa-gnn, pruner) through the one shared
  validator, naming the file and the key, before the model is built or a tensor read.
* A JSONL file of one 4 GB line, and an entity cache row of 64 MB, cost their bounds.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import tracemalloc
import zipfile
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grapher_core.errors import CheckpointError, InputError, SidecarError
from grapher_core.expand.egograph import EgoGraphIndex

CAP_GB = 2.5
N_IDS, DIM = 4096, 65_536  # 4096 x 65536 float32 = 1 GiB, the widest row allowed


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array)
    return buffer.getvalue()


def _small_members(archive: zipfile.ZipFile, n: int) -> None:
    """ids, hops, indptr and members of ``n`` one-member ego-graphs: all consistent."""
    archive.writestr("ids.npy", _npy(np.array([json.dumps([f"o{i}" for i in range(n)])])))
    archive.writestr("hops.npy", _npy(np.array([1], dtype=np.int64)))
    archive.writestr("indptr.npy", _npy(np.arange(n + 1, dtype=np.int64)))
    archive.writestr("members.npy", _npy(np.arange(n, dtype=np.int64)))


@pytest.fixture(scope="module")
def gib_sidecar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sidecar declaring 1 GiB of zero vectors, really deflated (about 2 s to write)."""
    path = tmp_path_factory.mktemp("derived") / "ego.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        _small_members(archive, N_IDS)
        with archive.open("vectors.npy", "w", force_zip64=True) as handle:
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                header, {"descr": "<f4", "fortran_order": False, "shape": (N_IDS, DIM)}
            )
            handle.write(header.getvalue())
            chunk = bytes(16 << 20)
            for _ in range(N_IDS * DIM * 4 // len(chunk)):
                handle.write(chunk)
    return path


CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    cap = int(float(sys.argv[2]) * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    from grapher_core.errors import SidecarError
    from grapher_core.expand.egograph import EgoGraphIndex
    started = time.perf_counter()
    try:
        EgoGraphIndex.load(sys.argv[1])
        outcome = "loaded"
    except SidecarError as error:
        outcome = str(error)
    except MemoryError:
        outcome = "MemoryError"
    seconds = time.perf_counter() - started
    # this process's own peak (ru_maxrss would include the forking parent's, on Linux)
    try:
        with open("/proc/self/status") as status:
            peak = [line.split()[1] for line in status if line.startswith("VmHWM:")]
    except OSError:  # not Linux: the time and the message are the check
        peak = []
    rss = int(peak[0]) // 1024 if peak else 0
    print(json.dumps({"outcome": outcome, "seconds": seconds, "rss_mb": rss}))
    """
)


def test_a_small_sidecar_declaring_a_gib_of_vectors_is_refused_before_inflating(
    gib_sidecar: Path,
) -> None:
    assert gib_sidecar.stat().st_size < 8 << 20
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(gib_sidecar), str(CAP_GB)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.splitlines()[-1])
    message = report["outcome"]
    assert message.startswith(f"{gib_sidecar}: field 'vectors': declares 1,073,741,")
    assert "refused before inflating" in message
    assert report["seconds"] < 0.5, report
    assert report["rss_mb"] < 400, report  # the interpreter and numpy; nothing inflated


def test_float32_vectors_whose_float64_copy_passes_the_cap_are_refused(tmp_path: Path) -> None:
    n, d = 3000, 384
    rows = np.random.default_rng(0).standard_normal((n, d)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    path = tmp_path / "ego.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        _small_members(archive, n)
        archive.writestr("vectors.npy", _npy(rows))
    cap = rows.nbytes + (12 << 20)  # the stored rows and all else fit; a float64 copy does not
    with pytest.raises(SidecarError, match="working memory") as caught:
        EgoGraphIndex.load(path, max_bytes=cap)
    assert str(caught.value).startswith(f"{path}: field 'vectors'")
    assert EgoGraphIndex.load(path, max_bytes=cap + rows.nbytes).vectors.shape == (n, d)


# --- checkpoints: one typed guard for every learned family ---------------------------------


def _copy(stem: Path, tmp_path: Path) -> Path:
    for suffix in (".json", ".safetensors"):
        shutil.copy(stem.with_name(stem.name + suffix), tmp_path / f"ck{suffix}")
    return tmp_path / "ck"


def _family(name: str) -> tuple[Callable[[Path], Path], Callable[[Path], Any]]:
    """How to make a checkpoint of family ``name`` in a folder, and how to load one."""
    if name == "gat":
        from grapher_core.learned.gat.checkpoint import GAT

        return lambda tmp: _copy(GAT.default_path("gat"), tmp), GAT.load
    if name == "g-rag":
        from grapher_core.learned.grag.checkpoint import GRAG

        return lambda tmp: _copy(GRAG.default_path(), tmp), GRAG.load
    if name == "qa-gnn":
        from grapher_core.learned.qa_gnn.checkpoint import QA_GNN

        return lambda tmp: _copy(QA_GNN.default_path(), tmp), QA_GNN.load
    from grapher_core.learned.pruner import LearnedPruner, build_pruner

    def toy(tmp: Path) -> Path:
        LearnedPruner.from_model(build_pruner(8, 4), 4).save(tmp / "ck")
        return tmp / "ck"

    return toy, LearnedPruner


INF, NAN = float("inf"), float("nan")
#: family -> case -> (dotted key, the tampered value). The GAT and the pruner have no boolean
#: field: their "mistyped boolean" is a JSON boolean where an integer belongs (never a bool).
CASES: dict[str, dict[str, tuple[str, Any]]] = {
    "gat": {
        "infinite float": ("model.prior_init", INF),
        "NaN float": ("alpha", NAN),
        "mistyped boolean": ("model.layers", True),
        "mistyped string": ("embedding_model", 12),
    },
    "g-rag": {
        "infinite float": ("spec.dropout", INF),
        "NaN float": ("spec.dropout", NAN),
        "mistyped boolean": ("spec.residual", "yes"),
        "mistyped string": ("embedding_model", 12),
    },
    "qa-gnn": {
        "infinite float": ("fusion.coef", [1.0, INF, 0.0]),
        "NaN float": ("adjust_alpha", NAN),
        "mistyped boolean": ("model.centre", "no"),
        "mistyped string": ("embedding_model", 12),
    },
    "pruner": {
        "infinite float": ("hidden", INF),
        "NaN float": ("dim", NAN),
        "mistyped boolean": ("hidden", True),
        "mistyped string": ("embedding_model", 12),
    },
}


@pytest.mark.parametrize("case", list(CASES["gat"]))
@pytest.mark.parametrize("family", list(CASES))
def test_every_family_refuses_a_mistyped_or_non_finite_config_naming_file_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, family: str, case: str
) -> None:
    pytest.importorskip("torch", reason="needs the gat extra (torch)")
    import safetensors.torch

    make, load = _family(family)
    stem = make(tmp_path)
    meta = stem.with_suffix(".json")
    config = json.loads(meta.read_text())
    key, value = CASES[family][case]
    *parents, last = key.split(".")
    holder = config
    for parent in parents:
        holder = holder[parent]
    holder[last] = value
    meta.write_text(json.dumps(config))  # NaN and Infinity as Python's json writes them

    def never(*args: object, **kwargs: object) -> None:
        pytest.fail("tensors were read before the config was checked")

    monkeypatch.setattr(safetensors.torch, "load_file", never)
    with pytest.raises(CheckpointError) as caught:
        load(stem)
    message = str(caught.value)
    assert message.startswith(f"{meta}: ") and key in message, message
    assert "\n" not in message


# --- files whose declared size is a line or a cell -----------------------------------------


def test_a_jsonl_file_of_one_4_gb_line_costs_its_bound(tmp_path: Path) -> None:
    from grapher_core.utils.jsonl import read_jsonl

    path = tmp_path / "corpus.jsonl"
    with path.open("wb") as handle:
        handle.truncate(4 << 30)  # sparse: no disk used
    tracemalloc.start()
    with pytest.raises(InputError, match=r"corpus\.jsonl:1: line longer than 16,777,216 bytes"):
        list(read_jsonl(path, max_line_bytes=16 << 20))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 40 << 20


@pytest.mark.skipif(
    not hasattr(sqlite3.Connection, "setlimit"), reason="sqlite3 setlimit needs Python 3.11+"
)
def test_a_64_mb_entity_cache_row_is_invalid_and_never_read(tmp_path: Path) -> None:
    from grapher_core.enrich.base import ExtractionResult
    from grapher_core.enrich.cache import CacheKey, CacheStats, EntityCache

    key, path = CacheKey("x", "m", "1"), tmp_path / "cache.sqlite"
    with EntityCache(path) as cache:
        cache.put_many(key, [("a", ExtractionResult(["Paris"])), ("b", ExtractionResult([]))])
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE entity_results SET entities = ? WHERE content_hash = 'b'",
                   ('["' + "x" * (64 << 20) + '"]',))  # fmt: skip
    with EntityCache(path) as cache, pytest.warns(UserWarning, match="1 cached rows"):
        assert list(cache.get_many(key, ["a", "b"])) == ["a"]
    with EntityCache(path) as cache:
        assert cache.stats(key) == CacheStats(1, 0, 1)
