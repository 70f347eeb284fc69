"""Shared fixtures. Benchmark data is read from $GRAPHER_BENCHMARKS (../shared/benchmarks)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class ExecutedNotebook:
    """What a notebook printed (all text outputs joined) and how many PNG images it showed."""

    text: str
    images: int


def benchmarks_root() -> Path:
    return Path(os.environ.get("GRAPHER_BENCHMARKS", REPO_ROOT.parent / "shared" / "benchmarks"))


@pytest.fixture(scope="session")
def benchmarks_dir() -> Path:
    """The shared benchmark root; tests that need it skip, saying why, when it is absent."""
    root = benchmarks_root()
    if not (root / "manifest.json").exists():
        pytest.skip(f"benchmark data not found at {root} (set GRAPHER_BENCHMARKS)")
    return root


@pytest.fixture
def run_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., ExecutedNotebook]:
    """Execute a cookbook notebook top to bottom on this venv's Python, offline.

    A throw-away kernelspec pointing at ``sys.executable`` is put on ``JUPYTER_PATH``, so the
    notebook runs in this venv on a fresh clone without ``ipykernel install``.
    """
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    spec = tmp_path / "kernels" / "grapher-venv"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "GraphER venv",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")

    def run(name: str, timeout: int = 600, **env: str) -> ExecutedNotebook:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        path = REPO_ROOT / "cookbook" / name
        notebook = nbformat.read(path, as_version=4)
        nbclient.NotebookClient(
            notebook,
            timeout=timeout,
            kernel_name="grapher-venv",
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
        outputs = [
            o
            for cell in notebook.cells
            if cell.cell_type == "code"
            for o in cell.get("outputs", [])
        ]
        return ExecutedNotebook(
            text="\n".join(o.get("text", "") for o in outputs),
            images=sum("image/png" in o.get("data", {}) for o in outputs),
        )

    return run


# -- unit vs integration ----------------------------------------------------------------------
# Integration tests touch real parts: benchmark data, notebooks, packaged models (MiniLM, spaCy,
# checkpoints), vector stores, Ray. A module says so with ``pytestmark = pytest.mark.integration``;
# tests that take the benchmark or notebook fixtures, everything under tests/cookbook/ and tests
# marked slow are integration too. `make test-fast` runs the rest (-m "not integration").
_INTEGRATION_FIXTURES = frozenset({"benchmarks_dir", "run_notebook"})
_INTEGRATION_FOLDERS = (REPO_ROOT / "tests" / "cookbook",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        path = Path(str(item.fspath))
        if (
            fixtures & _INTEGRATION_FIXTURES
            or item.get_closest_marker("slow")
            or any(folder in path.parents for folder in _INTEGRATION_FOLDERS)
        ):
            item.add_marker(pytest.mark.integration)
