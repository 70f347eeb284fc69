"""The cookbook notebook runs top to bottom (offline) on the venv's own Python."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[2] / "cookbook" / "langchain_text_to_sql_tables.ipynb"


@pytest.mark.slow
def test_cookbook_notebook_runs(benchmarks_dir: Path, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    # A kernelspec pointing at this interpreter, so the notebook runs in this venv on a fresh
    # clone without `ipykernel install` (JUPYTER_PATH is searched before the system paths).
    spec = tmp_path / "kernels" / "grapher-venv"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "GraphER venv", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("GRAPHER_BENCHMARKS", str(benchmarks_dir))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="grapher-venv",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    text = "\n".join(output.get("text", "") for cell in notebook.cells
                     for output in cell.get("outputs", []))
    assert "with GraphER:  ['shop.orders', 'shop.customers'" in text
    assert "200 questions" in text and "GraphER" in text
    images = [output for cell in notebook.cells for output in cell.get("outputs", [])
              if "image/png" in output.get("data", {})]
    assert len(images) == 1
