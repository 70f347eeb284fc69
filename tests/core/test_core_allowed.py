"""The allow-list of names a file may hold (grapher_core.allowed): registration, resolution,
refusal without import, and the scan that keeps dynamic imports out of the library."""

from __future__ import annotations

import ast
import dataclasses
import json
import sys
from pathlib import Path

import pytest
import scipy.sparse as sp

from grapher_core import ForeignKeys, GraphReranker, register_proximity, register_ranker
from grapher_core.allowed import Lazy, _unregister, allowed_names, is_allowed, resolve
from grapher_core.edges.serialise import proximity_from_dict, proximity_to_dict
from grapher_core.errors import ConfigError, GraphERError, InputTypeError
from grapher_core.ranking.config import check_config, load_config
from grapher_core.ranking.registry import make_ranker

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("grapher_core", "langchain_grapher", "llama_index_grapher", "grapher_bench")

DYNAMIC_IMPORTS = {"import_module", "__import__", "exec_module", "load_module", "run_module"}
"""Calls that import code named by a value (``run_path`` too, by file)."""

REVIEWED_SITES = {
    ("grapher_core/allowed.py", "load"),  # a Lazy: module and attribute written in code
    ("grapher_core/cli/main.py", "build_parser"),  # SUBCOMMANDS, a constant of that module
    ("grapher_core/picture.py", "_require"),  # matplotlib / networkx, literals at each call
    # a shipped store adapter of this package, its module a literal in STORES
    ("langchain_grapher/stores/registry.py", "factory"),
    ("llama_index_grapher/stores/registry.py", "factory"),
}
"""Every dynamic import of the library, each reviewed: none takes a string from a file."""


class _Calls(ast.NodeVisitor):
    """Dynamic-import calls, each with the innermost function around it."""

    def __init__(self) -> None:
        self.owners = ["<module>"]
        self.found: list[str] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.owners.append(node.name)
        self.generic_visit(node)
        self.owners.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in DYNAMIC_IMPORTS or name == "run_path":
            self.found.append(self.owners[-1])
        self.generic_visit(node)


def _dynamic_import_sites() -> set[tuple[str, str]]:
    sites = set()
    for package in LIBRARY:
        for path in sorted((ROOT / package).rglob("*.py")):
            calls = _Calls()
            calls.visit(ast.parse(path.read_text(encoding="utf-8")))
            sites |= {(str(path.relative_to(ROOT)), owner) for owner in calls.found}
    return sites


def test_no_dynamic_import_outside_the_reviewed_sites() -> None:
    sites = _dynamic_import_sites()
    assert sites <= REVIEWED_SITES, f"unreviewed dynamic imports: {sorted(sites - REVIEWED_SITES)}"
    assert sites, "the scan found nothing: it no longer sees the reviewed sites"


@pytest.mark.parametrize(
    "name",
    [
        "grapher_core.cli.__main__:main",
        "grapher_core.rerank:GraphReranker",
        "os:system",
        "subprocess:Popen",
        "Popen",
        "",
        None,
        7,
        ["ForeignKeys"],
    ],
)
def test_an_unregistered_proximity_name_is_refused_naming_file_and_key(name: object) -> None:
    data = {"grapher_config": 1, "proximities": [{"class": "ForeignKeys"}, {"class": name}]}
    with pytest.raises(ConfigError) as caught:
        check_config(data, "my_config.json")
    message = str(caught.value)
    assert message.startswith("my_config.json: key 'proximities[1].class'")
    assert "register_proximity" in message


def test_a_ranker_name_that_looks_like_a_module_is_refused() -> None:
    for name in ("grapher_core.cli.__main__:main", "os:system", "GCSRanker"):
        with pytest.raises(ConfigError, match="unknown ranker"):
            check_config({"grapher_config": 1, "ranker": name}, "c.json")
        with pytest.raises(ConfigError, match="unknown ranker"):
            make_ranker(name)


@dataclasses.dataclass(frozen=True)
class TitleLinks:
    """A user's own proximity: every candidate linked to the ones sharing its first word."""

    weight: float = 1.0
    kind: str = "conceptual"

    def adjacency(self, candidates: list) -> sp.csr_matrix:
        words = [c.text.split()[:1] for c in candidates]
        n = len(candidates)
        rows = [i for i in range(n) for j in range(n) if i != j and words[i] == words[j]]
        cols = [j for i in range(n) for j in range(n) if i != j and words[i] == words[j]]
        return sp.csr_matrix(([1.0] * len(rows), (rows, cols)), shape=(n, n))


def test_a_users_proximity_loads_once_registered(tmp_path: Path) -> None:
    written = proximity_to_dict(TitleLinks(weight=0.5))
    assert written["class"] == f"{__name__}:TitleLinks"  # not registered: no short name
    with pytest.raises(ConfigError, match="register_proximity"):
        proximity_from_dict(written)
    register_proximity(TitleLinks)
    try:
        assert proximity_to_dict(TitleLinks())["class"] == "TitleLinks"
        assert proximity_from_dict(written) == TitleLinks(weight=0.5)  # the older spelling too
        path = tmp_path / "c.json"
        path.write_text(
            json.dumps({"grapher_config": 1, "proximities": [{"class": "TitleLinks"}]}),
            encoding="utf-8",
        )
        config = load_config(path)
        assert config["proximities"] == [TitleLinks()]
        reranker = GraphReranker.from_config(path)
        assert reranker.proximities == (TitleLinks(),)
    finally:
        _unregister("proximity", "TitleLinks")
    assert not is_allowed("proximity", "TitleLinks")
    assert not is_allowed("proximity", f"{__name__}:TitleLinks")


def test_unknown_fields_and_refused_values_name_the_key() -> None:
    with pytest.raises(
        ConfigError, match=r"c\.json: key 'proximities\[0\]\.fild'.*did you mean 'field'"
    ):
        check_config(
            {"grapher_config": 1, "proximities": [{"class": "ForeignKeys", "fild": 1}]}, "c.json"
        )
    with pytest.raises(ConfigError, match=r"c\.json: key 'proximities\[0\]\.weight'.*'heavy'"):
        check_config(
            {"grapher_config": 1, "proximities": [{"class": "ForeignKeys", "weight": "heavy"}]},
            "c.json",
        )


def test_register_refuses_what_it_cannot_rebuild() -> None:
    class NotADataclass:
        kind = "structural"
        weight = 1.0

    with pytest.raises(InputTypeError, match="dataclass"):
        register_proximity(NotADataclass)
    with pytest.raises(InputTypeError, match="module:attribute"):
        register_ranker("mine", "no_colon_here")


def test_a_lazy_ranker_is_imported_only_when_its_name_is_asked() -> None:
    register_ranker("Lazy-Baseline", "grapher_core.ranking.base:BaselineRanker")
    try:
        assert "lazy-baseline" in allowed_names("ranker")
        target = resolve("ranker", "lazy-baseline", load=False)
        assert isinstance(target, Lazy)
        assert type(make_ranker("LAZY-BASELINE")).__name__ == "BaselineRanker"
    finally:
        _unregister("ranker", "lazy-baseline")


def test_the_built_in_names_resolve_without_the_learned_backends() -> None:
    assert {"gcs", "ppr", "baseline", "gat", "mlp", "g-rag", "qa-gnn"} <= set(
        allowed_names("ranker")
    )
    assert isinstance(resolve("ranker", "gat", load=False), Lazy)
    assert resolve("proximity", "ForeignKeys") is ForeignKeys
    with pytest.raises(GraphERError):
        resolve("proximity", "grapher_core.edges.keys:ForeignKeyz")


def test_errors_do_not_echo_an_unbounded_name() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve("proximity", "x" * 100_000, where="f.json", key="k")
    assert len(str(caught.value)) < 1_000


def test_the_scan_sees_a_planted_dynamic_import(tmp_path: Path) -> None:
    """The scan is able to fail: a module calling import_module on a value is found."""
    planted = ROOT / "grapher_core" / "_planted_for_scan_test.py"
    planted.write_text(
        "import importlib\n\ndef load(name):\n    return importlib.import_module(name)\n",
        encoding="utf-8",
    )
    try:
        found = set(_dynamic_import_sites())
    finally:
        planted.unlink()
        sys.modules.pop("grapher_core._planted_for_scan_test", None)
    assert ("grapher_core/_planted_for_scan_test.py", "load") in found


def test_a_taken_name_is_replaced_only_when_asked() -> None:
    lazy = Lazy("grapher_core.ranking.base", "BaselineRanker")
    register_ranker("mine-once", lazy)
    try:
        register_ranker("mine-once", Lazy("grapher_core.ranking.base", "BaselineRanker"))  # equal
        with pytest.raises(ConfigError, match=r"'mine-once' is already registered.*replace=True"):
            register_ranker("mine-once", "grapher_core.ranking.propagation:GCSRanker")
        assert resolve("ranker", "mine-once", load=False) == lazy
        register_ranker("mine-once", "grapher_core.ranking.propagation:GCSRanker", replace=True)
        assert resolve("ranker", "mine-once", load=False) != lazy
    finally:
        _unregister("ranker", "mine-once")
    for name in ("ForeignKeys", "SemanticKNN"):  # built-ins stay put
        with pytest.raises(ConfigError, match="already registered"):
            register_proximity(dataclasses.make_dataclass("Other", []), name=name)
        assert resolve("proximity", name).__name__ == name
