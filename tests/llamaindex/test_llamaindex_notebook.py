"""The cookbook notebook runs top to bottom (offline) and prints its PR@K table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "cookbook" / "llamaindex_multihop_qa.ipynb"


def ensure_kernel(name: str = "python3") -> str:
    """A kernelspec for this interpreter, installed into the venv when none is found."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--sys-prefix",
                        "--name", name], check=True, capture_output=True)
    return name


@pytest.mark.slow
def test_cookbook_notebook_runs(benchmarks_dir, pytestconfig, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("GRAPHER_BENCHMARKS", str(benchmarks_dir))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # Entities and the ingestion cache persist between runs in .pytest_cache (git-ignored), so
    # only the first run on a machine pays for spaCy and the embeddings.
    monkeypatch.setenv("GRAPHER_CACHE_DIR", os.environ.get(
        "GRAPHER_CACHE_DIR", str(pytestconfig.cache.mkdir("grapher-cookbook"))))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name=ensure_kernel(),
        resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    text = "\n".join(
        output.get("text", "")
        for cell in notebook.cells if cell.cell_type == "code"
        for output in cell.get("outputs", []))
    assert "| vector retriever |" in text and "| GraphER GCS (entities) |" in text
    assert "contextual edges among them" in text
    images = [o for c in notebook.cells for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert images, "the PR@K plot is missing"
