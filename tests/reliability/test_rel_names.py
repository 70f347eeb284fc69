"""Names read from files resolve through the allow-list: a config or ``to_dict`` payload naming
a module, a function or a class that is not registered is refused by every loader, naming the
file (or payload) and the key, with the named module never imported and no ``SystemExit``.

Each case runs in a fresh interpreter, so "not imported" is read from a clean ``sys.modules``;
the child's ``sys.argv`` asks the ``grapher`` CLI for ``demo``, which would run (and exit) if
the named ``main`` were called."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers_extras import needs

NAMES = [
    ("grapher_core.cli.__main__:main", "grapher_core.cli.__main__"),
    ("grapher_core.learned.gat.train:train_gat", "grapher_core.learned.gat.train"),
    ("os:system", None),
    ("antigravity:fly", "antigravity"),
]

LOADERS = {
    "core from_config": (
        "from grapher_core import GraphReranker\nGraphReranker.from_config(PATH)",
        None,
    ),
    "langchain from_config": (
        "from langchain_grapher import GraphERReranker\nGraphERReranker.from_config(PATH)",
        "langchain",
    ),
    "llamaindex from_config": (
        "from llama_index_grapher import GraphERPostprocessor\n"
        "GraphERPostprocessor.from_config(PATH)",
        "llamaindex",
    ),
    "llamaindex from_dict": (
        "from llama_index_grapher import GraphERPostprocessor\n"
        "GraphERPostprocessor.from_dict({'proximities': [{'class': NAME}], 'top_n': 3})",
        "llamaindex",
    ),
    "llamaindex from_json": (
        "import json\nfrom llama_index_grapher import GraphERPostprocessor\n"
        "GraphERPostprocessor.from_json(json.dumps({'proximities': [{'class': NAME}]}))",
        "llamaindex",
    ),
    "llamaindex embed_model from_dict": (
        "from llama_index_grapher import GraphERPostprocessor\n"
        "GraphERPostprocessor.from_dict({'embed_model': {'class_name': NAME}})",
        "llamaindex",
    ),
}

CHILD = """
import json, sys
sys.argv = ["grapher", "demo"]
PATH, NAME, WATCH = sys.argv_in
out = {"error": None, "message": "", "imported": False}
try:
{body}
except BaseException as error:  # SystemExit included: it must not happen
    out["error"] = type(error).__name__
    from grapher_core.errors import GraphERError
    out["is_grapher_error"] = isinstance(error, GraphERError)
    out["message"] = str(error)
out["imported"] = bool(WATCH) and WATCH in sys.modules
print(json.dumps(out))
"""


def _run(body: str, path: Path, name: str, watch: str | None) -> dict:
    script = CHILD.replace("{body}", textwrap.indent(body, "    ")).replace(
        "sys.argv_in", repr([str(path), name, watch or ""])
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("loader", sorted(LOADERS))
@pytest.mark.parametrize(("name", "watch"), NAMES, ids=[n for n, _ in NAMES])
def test_a_file_naming_an_unregistered_class_imports_nothing(
    loader: str, name: str, watch: str | None, tmp_path: Path
) -> None:
    body, extra = LOADERS[loader]
    if extra:
        needs(extra)
    path = tmp_path / "untrusted.json"
    path.write_text(
        json.dumps({"grapher_config": 1, "proximities": [{"class": name}]}), encoding="utf-8"
    )
    out = _run(body, path, name, watch)
    assert out["error"] == "ConfigError", out
    assert out["is_grapher_error"], out
    assert not out["imported"], f"{watch} was imported: {out}"
    where = str(path) if "from_config" in loader else "payload"
    assert where in out["message"], out["message"]
    key = "embed_model.class_name" if "embed_model" in loader else "proximities[0].class"
    assert key in out["message"], out["message"]
