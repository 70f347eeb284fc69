"""The README's two framework examples run as written, each in its framework's minimal install.

A wheel is built once from this source tree; per extra (``langchain``, ``llamaindex``) a venv
of its own gets ``pip install -c constraints.txt 'grapher_rerank-*.whl[extra]'`` and nothing
else (pip's cache is reused, so a rerun installs from it). The README block under each
"one line" heading is then run in that venv after a short prelude that stands for what the
example calls yours -- ``store`` (an ``InMemoryVectorStore`` with LangChain's deterministic fake
embedding), ``index`` (a ``VectorStoreIndex`` with LlamaIndex's ``MockEmbedding``) and ``llm``
(``MockLLM``) -- with every socket connection outside 127.0.0.1 refused and no ``openai``
package installed. Slow, so integration: the wheel and both venvs took 386 s here (2 cores at
load 11, pip's cache warm for most wheels), the snippets themselves a few seconds each.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

NO_NETWORK = """
import socket

_connect = socket.socket.connect

def _local_only(self, address):
    if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
        raise OSError(f"network refused in this test: {address}")
    return _connect(self, address)

socket.socket.connect = _local_only
import importlib.util
assert importlib.util.find_spec("openai") is None, "the minimal install has no openai package"
"""

PRELUDES = {
    "langchain": """
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
store.add_documents([
    Document(
        id=f"t{i}",
        page_content=f"Table: t{i}\\nColumns: id, t{i + 1}_id",
        metadata={"foreign_keys": [f"t{i + 1}", f"t{i - 1}"]},
    )
    for i in range(60)
])
""",
    "llamaindex": """
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TextNode

index = VectorStoreIndex(
    [
        TextNode(
            id_=f"t{i}",
            text=f"Table: t{i}\\nColumns: id, t{i + 1}_id",
            metadata={"foreign_keys": f'["t{i + 1}", "t{i - 1}"]'},
        )
        for i in range(60)
    ],
    embed_model=MockEmbedding(embed_dim=8),
)
llm = MockLLM()
""",
}

CHECKS = {
    "langchain": """
assert len(docs) == 5 and all("relevance_score" in d.metadata for d in docs), docs
print("langchain snippet:", [d.id for d in docs])
""",
    "llamaindex": """
assert len(reranked) == 5, reranked
answer = engine.query(question)
assert len(answer.source_nodes) == 5, answer.source_nodes
print("llamaindex snippet:", [n.node.node_id for n in reranked])
""",
}

HEADINGS = {"langchain": "## In LangChain: one line", "llamaindex": "## In LlamaIndex: one line"}


def readme_snippet(extra: str) -> str:
    """The first python block after the extra's heading in README.md."""
    text = README.read_text(encoding="utf-8")
    section = text.split(HEADINGS[extra], 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, f"no python block under {HEADINGS[extra]!r}"
    return match.group(1)


def _run(command: list[str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``command`` without this checkout on its path (the venv imports what it installed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False, env=env
    )
    assert done.returncode == 0, (
        f"{' '.join(command)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This source tree as a wheel (built once per session)."""
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)])
    (built,) = out.glob("grapher_rerank-*.whl")
    return built


def minimal_install(extra: str, wheel: Path, folder: Path) -> Path:
    """A venv holding the wheel with ``extra`` and what it depends on; its python."""
    _run([sys.executable, "-m", "venv", str(folder)])
    python = folder / "bin" / "python"
    constraints = ROOT / "constraints.txt"
    _run([str(python), "-m", "pip", "install", "-q", "-c", str(constraints), f"{wheel}[{extra}]"])
    return python


@pytest.mark.parametrize("extra", ["langchain", "llamaindex"])
def test_readme_framework_example_runs_in_its_minimal_install(
    extra: str, wheel: Path, tmp_path: Path
) -> None:
    python = minimal_install(extra, wheel, tmp_path / f"venv-{extra}")
    listed = _run([str(python), "-m", "pip", "list", "--format=freeze"]).stdout.splitlines()
    installed = [p for p in listed if p.split("==")[0].lower() not in ("pip", "setuptools")]
    print(f"[{extra}] {len(installed)} packages installed (README's count)")
    assert not any(p.lower().startswith("openai==") for p in installed)
    program = "\n".join(
        textwrap.dedent(part)
        for part in (NO_NETWORK, PRELUDES[extra], readme_snippet(extra), CHECKS[extra])
    )
    script = tmp_path / f"{extra}_snippet.py"
    script.write_text(program, encoding="utf-8")
    done = _run([str(python), str(script)], timeout=600)
    assert f"{extra} snippet:" in done.stdout


PACKAGE = ROOT / "PACKAGE.md"
_RELATIVE_LINK = re.compile(r"!?\[[^\]]*\]\((?!https?://)[^)]*\)")


def test_the_index_page_has_no_repository_notes_or_links_and_the_same_examples(
    wheel: Path,
) -> None:
    """The wheel's long description is PACKAGE.md: no link or picture an index page cannot
    resolve, no note about the source tree, and the README's two framework examples verbatim
    (so the test above runs what the index page shows too)."""
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        headers, _, description = archive.read(name).decode("utf-8").partition("\n\n")
    assert "Description-Content-Type: text/markdown" in headers
    assert description.strip() == PACKAGE.read_text(encoding="utf-8").strip()
    assert not _RELATIVE_LINK.findall(description)
    for note in ("relative to the source tree", "make demo", "make test", "repository"):
        assert note not in description
    for extra in HEADINGS:
        assert readme_snippet(extra) in description
