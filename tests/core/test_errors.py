"""One error tree: the library packages raise only :class:`GraphERError` subclasses.

The AST of every module is read, so a new bare ``raise ValueError(...)`` fails here before it
reaches a user who wrote ``except GraphERError``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grapher_core import errors
from grapher_core.errors import GraphERError

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("grapher_core", "langchain_grapher", "llama_index_grapher")
# Built-ins a library is tempted to raise; AttributeError (``__getattr__``) and
# NotImplementedError (abstract methods) keep their protocol meaning.
BUILTINS = frozenset(
    {
        "ValueError",
        "TypeError",
        "KeyError",
        "IndexError",
        "RuntimeError",
        "ImportError",
        "ModuleNotFoundError",
        "FileNotFoundError",
        "OSError",
        "LookupError",
        "Exception",
    }
)


def bare_raises(source: str, path: str) -> list[str]:
    """``path:line raises Name`` for each ``raise Name(...)`` / ``raise Name`` of a built-in."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(target, ast.Name) and target.id in BUILTINS:
            found.append(f"{path}:{node.lineno} raises {target.id}")
    return found


@pytest.mark.parametrize("package", LIBRARY)
def test_no_bare_builtin_raise(package: str) -> None:
    paths = sorted((ROOT / package).rglob("*.py"))
    assert paths
    found = [hit for p in paths for hit in bare_raises(p.read_text(), str(p.relative_to(ROOT)))]
    assert found == []


def test_the_scan_catches_every_form() -> None:
    source = (
        "def f():\n    raise ValueError('x')\n"
        "def g():\n    raise TypeError\n"
        "def h():\n    raise errors.InputError('fine')\n"
        "def __getattr__(name):\n    raise AttributeError(name)\n"
    )
    assert bare_raises(source, "m.py") == ["m.py:2 raises ValueError", "m.py:4 raises TypeError"]


def test_every_error_is_a_graphererror_and_keeps_its_builtin() -> None:
    """``except GraphERError`` catches all; ``except ValueError`` (etc.) still works."""
    classes = [getattr(errors, name) for name in errors.__all__]
    assert all(issubclass(cls, GraphERError) for cls in classes)
    assert issubclass(errors.InputError, ValueError)
    assert issubclass(errors.InputTypeError, TypeError)
    assert issubclass(errors.MissingDependencyError, ModuleNotFoundError)
    assert issubclass(errors.MissingDependencyError, ImportError)
    assert issubclass(errors.InputFileNotFoundError, FileNotFoundError)
    assert issubclass(errors.NotFoundError, KeyError)
    assert issubclass(errors.StateError, RuntimeError)
