"""torch-geometric's ``torch.jit.script`` notice is ignored in both categories torch raises it
in (``DeprecationWarning`` up to 2.13, ``FutureWarning`` from 2.14), with warnings as errors;
any other warning still gets through.

torch 2.13 is installed here, so the notice is simulated: ``torch_geometric.nn`` is replaced by
a module that raises it, in the category under test, when the model builder imports from it.
"""

from __future__ import annotations

import sys
import types
import warnings
from typing import Any

import pytest

pytest.importorskip(
    "torch_geometric", reason="needs the 'gat' extra: pip install 'grapher-rerank[gat]'"
)

NOTICE = "`torch.jit.script` is deprecated. Please switch to `torch.compile` or `torch.export`."


def _noisy(real: Any, message: str, category: type[Warning]) -> types.ModuleType:
    """``real`` whose first import of a layer raises the warning (as the import of
    torch-geometric does, once per process)."""
    said: list[str] = []

    class Noisy(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.endswith("Conv") and not said:
                said.append(name)
                warnings.warn(message, category, stacklevel=2)
            return getattr(real, name)

    return Noisy(real.__name__)


def _build(family: str) -> None:
    if family == "gat":
        from grapher_core.learned.gat.model import ModelSpec, _gatv2

        _gatv2(ModelSpec())
    else:
        from grapher_core.learned.qa_gnn.model import QAGNNSpec, _gat

        _gat(384, QAGNNSpec())


@pytest.mark.parametrize("family", ["gat", "qa-gnn"])
@pytest.mark.parametrize("category", [DeprecationWarning, FutureWarning])
def test_the_jit_notice_is_ignored_in_either_category(
    monkeypatch: pytest.MonkeyPatch, category: type[Warning], family: str
) -> None:
    import torch_geometric.nn

    noisy = _noisy(torch_geometric.nn, NOTICE, category)
    monkeypatch.setitem(sys.modules, "torch_geometric.nn", noisy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _build(family)


@pytest.mark.parametrize("family", ["gat", "qa-gnn"])
def test_other_warnings_still_get_through(monkeypatch: pytest.MonkeyPatch, family: str) -> None:
    import torch_geometric.nn

    noisy = _noisy(torch_geometric.nn, "something else changed", FutureWarning)
    monkeypatch.setitem(sys.modules, "torch_geometric.nn", noisy)
    with warnings.catch_warnings(), pytest.raises(FutureWarning, match="something else"):
        warnings.simplefilter("error")
        _build(family)
