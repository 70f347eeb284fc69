"""Functions with one job: no function of the library packages reaches 80 lines (ruff's C901
bounds their complexity at 15, see pyproject.toml)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("grapher_core", "langchain_grapher", "llama_index_grapher")
MAX_LINES = 80


def long_functions(packages: tuple[str, ...] = LIBRARY) -> list[str]:
    found = []
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines >= MAX_LINES:
                        found.append(
                            f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines})"
                        )
    return found


def test_no_library_function_reaches_80_lines() -> None:
    assert long_functions() == []


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    planted = ROOT / "grapher_core" / "_planted_long_function.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    planted.write_text(f"def long():\n{body}\n", encoding="utf-8")
    try:
        assert any("_planted_long_function.py" in f for f in long_functions())
    finally:
        planted.unlink()
