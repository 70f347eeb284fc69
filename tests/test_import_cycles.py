"""No import circle anywhere in the four packages, module-level and lazy imports alike.

A circle works until someone imports the modules in another order; this test reads every
module's AST (imports inside functions included) and fails on any strongly connected group.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("grapher_core", "langchain_grapher", "llama_index_grapher", "grapher_bench")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {
        module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
    }


def imports_of(source: str, known: Iterable[str]) -> set[str]:
    """The project modules a module names in its imports (``from a import b`` names ``a.b`` when
    that is a module, else ``a``)."""
    modules = set(known)
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
    return found


def with_packages(name: str, targets: set[str]) -> set[str]:
    """Add the packages an import runs first (``a.b.c`` runs ``a`` and ``a.b``), except the
    importing module's own enclosing packages, which are already running."""
    own = {name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)}
    out = set(targets)
    for target in targets:
        parts = target.split(".")
        out |= {".".join(parts[:k]) for k in range(1, len(parts))} - own
    return out - {name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one member, or a self-loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in graph.get(v, ()):
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle() -> None:
    modules = project_modules()
    assert len(modules) > 100
    graph = {
        name: with_packages(name, imports_of(path.read_text(), modules))
        for name, path in modules.items()
    }
    assert cycles(graph) == []


def test_the_checker_finds_a_lazy_cycle() -> None:
    graph = {
        "a": imports_of("def f():\n    from b import x\n", ["a", "b", "b.x"]),
        "b": imports_of("import a\n", ["a", "b"]),
        "c": {"a"},
    }
    assert graph["a"] == {"b.x"}
    graph["b.x"] = {"a"}
    assert cycles(graph) == [["a", "b.x"]]
