"""The three layers, one direction: core <- wrappers <- tooling (README, Layout).

Every module's AST is walked, imports inside functions included, so a lazy import cannot hide
a violation.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE, LANGCHAIN, LLAMA, TOOLING = (
    "grapher_core",
    "langchain_grapher",
    "llama_index_grapher",
    "grapher_bench",
)
# What each package may import among the project's packages and the frameworks.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    CORE: (
        LANGCHAIN,
        LLAMA,
        TOOLING,
        "langchain",
        "langchain_core",
        "langchain_classic",
        "langchain_chroma",
        "langchain_graph_retriever",
        "llama_index",
        "chromadb",
        "qdrant_client",
    ),
    LANGCHAIN: (LLAMA, TOOLING, "llama_index"),
    LLAMA: (LANGCHAIN, TOOLING, "langchain", "langchain_core"),
    TOOLING: (),
}


def imported_modules(source: str, filename: str = "<string>") -> list[tuple[int, str]]:
    """(line, module) for every import statement anywhere in the module, nested ones too."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif (
            isinstance(node, ast.Call)
            and _called_name(node.func) in _LOOKUPS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


# Calls whose first argument names a module: importing it, or locating its files (a package
# that reads another's files through find_spec depends on it as much as one that imports it).
_LOOKUPS = frozenset({"import_module", "find_spec", "__import__", "find_loader"})


def _called_name(func: ast.expr) -> str | None:
    """``f`` for ``f(...)`` and ``a.b.f(...)``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def violations(package: str, files: list[tuple[str, str]]) -> list[str]:
    """``path:line imports module`` for each forbidden import among (path, source) pairs."""
    banned = FORBIDDEN[package]
    out = []
    for path, source in files:
        for line, module in imported_modules(source, path):
            top = module.split(".")[0]
            if top in banned or any(module == b or module.startswith(b + ".") for b in banned):
                out.append(f"{path}:{line} imports {module}")
    return out


def package_files(package: str) -> list[tuple[str, str]]:
    paths = sorted((ROOT / package).rglob("*.py"))
    return [(str(p.relative_to(ROOT)), p.read_text()) for p in paths]


@pytest.mark.parametrize("package", [CORE, LANGCHAIN, LLAMA])
def test_layers_import_only_downwards(package: str) -> None:
    files = package_files(package)
    assert files, f"no modules found for {package}"
    assert violations(package, files) == []


def test_nothing_imports_the_tooling() -> None:
    for package in (CORE, LANGCHAIN, LLAMA):
        assert not [v for v in violations(package, package_files(package)) if TOOLING in v]


def test_checker_catches_lazy_and_dynamic_imports() -> None:
    """The rule would fail on a violation, however it is written."""
    bad = (
        "import numpy\n"
        "def f():\n"
        "    from langchain_grapher.reranker import GraphERReranker\n"
        "    import grapher_bench.runner\n"
        "    importlib.import_module('llama_index.core')\n"
        "    importlib.util.find_spec('llama_index.core')\n"
        "    find_spec('langchain_core')\n"
        "    import_module('chromadb')\n"
    )
    found = violations(CORE, [("grapher_core/bad.py", bad)])
    assert found == [
        "grapher_core/bad.py:3 imports langchain_grapher.reranker",
        "grapher_core/bad.py:4 imports grapher_bench.runner",
        "grapher_core/bad.py:5 imports llama_index.core",
        "grapher_core/bad.py:6 imports llama_index.core",
        "grapher_core/bad.py:7 imports langchain_core",
        "grapher_core/bad.py:8 imports chromadb",
    ]
    assert violations(LANGCHAIN, [("x.py", "from llama_index.core import schema")]) == [
        "x.py:1 imports llama_index.core"
    ]
