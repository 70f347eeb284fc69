"""The graph-context cookbook notebook runs top to bottom (offline) on the venv's Python."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[2] / "cookbook" / "graph_context.ipynb"


@pytest.mark.slow
def test_graph_context_notebook_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tmp_path / "kernels" / "grapher-venv"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "GraphER venv", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="grapher-venv",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    text = "\n".join(output.get("text", "") for cell in notebook.cells
                     for output in cell.get("outputs", []))
    assert "fetched from the store:" in text
    assert "store calls: 1 (one per hop with links to follow)" in text
    assert "Christina Jensen" in text.split("with expansion:")[1].splitlines()[0]
    # the director hangs under the film, his mother under him: the two hops, as a tree
    assert re.search(r"\n  \[1\.(\d)\] Christopher Nolan  <- structural\n", text)
    assert re.search(r"\n    \[1\.\d\.1\] Christina Jensen  <- structural\n", text)
