"""The contract checks of grapher_core.testing, run against every built-in implementation, and
shown failing on broken ones."""

from __future__ import annotations

import ast
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from grapher_core import AdjacentChunks, ForeignKeys, SemanticKNN, SharedEntities, edges
from grapher_core.edges import ChunkLinks
from grapher_core.expand.source import InMemorySource
from grapher_core.ranking.registry import make_ranker
from grapher_core.testing import (
    ContractError,
    check_neighbour_source,
    check_proximity,
    check_ranker,
    sample_candidates,
)

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray

PROXIMITIES = [
    ForeignKeys(),
    ForeignKeys("links"),
    ForeignKeys("mentions", target_field="title"),
    SharedEntities(),
    SharedEntities(max_share=0.5),
    AdjacentChunks(),
    SemanticKNN(k=2, threshold=-1.0),
    SemanticKNN.paper(k=2, threshold=-1.0),
    ChunkLinks(),
    ChunkLinks(embed=True),
]


@pytest.mark.parametrize("proximity", PROXIMITIES, ids=repr)
def test_builtin_proximities_keep_the_contract(proximity) -> None:
    check_proximity(proximity)
    assert proximity.adjacency(sample_candidates()).nnz > 0  # the sample exercises it


def test_shared_concepts_keeps_the_contract() -> None:
    from grapher_core.edges.concepts import SharedConcepts

    check_proximity(SharedConcepts())


GRAPH_RANKERS = ["baseline", "gcs", "ppr", "qa-adjust"]
LEARNED_RANKERS = ["gat", "mlp", "g-rag", "qa-gnn"]


def test_every_registered_ranker_is_checked() -> None:
    """A new built-in name must join one of the lists below (and so the contract run). Read in
    a fresh interpreter: other tests register tooling rankers (``db-first``) in this one."""
    code = "from grapher_core.ranking import available_rankers; print(available_rankers())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert sorted(ast.literal_eval(out.stdout)) == sorted(GRAPH_RANKERS + LEARNED_RANKERS)


def test_every_builtin_proximity_is_checked() -> None:
    """Every Proximity class the edges package exports is in PROXIMITIES (SharedConcepts has
    its own test below)."""
    exported = {
        obj
        for name in edges.__all__
        if isinstance(obj := getattr(edges, name), type)
        and name != "Proximity"
        and hasattr(obj, "adjacency")
    }
    assert exported == {type(p) for p in PROXIMITIES}


@pytest.mark.parametrize("name", GRAPH_RANKERS)
def test_builtin_rankers_keep_the_contract(name: str) -> None:
    check_ranker(make_ranker(name), [ForeignKeys(), SemanticKNN(k=2, threshold=-1.0)])


@pytest.mark.parametrize("name", LEARNED_RANKERS)
def test_learned_rankers_keep_the_contract(name: str) -> None:
    """The packaged checkpoints, on vectors of their dimension (MiniLM's 384); g-rag parses
    the concept graphs of the sample texts with the packaged spaCy model."""
    pytest.importorskip("torch")
    if name == "g-rag":
        pytest.importorskip("spacy")
    candidates = sample_candidates(dim=384)
    check_ranker(make_ranker(name), [ForeignKeys()], candidates)


def test_in_memory_source_keeps_the_contract() -> None:
    source = InMemorySource(sample_candidates())
    check_neighbour_source(source, [((None, "c1"),), (("title", "title 2"),)])


class _SelfLoops:
    kind = "broken"
    weight = 1.0

    def adjacency(self, candidates):
        return sp.identity(len(candidates), format="csr")


class _Mutating:
    kind = "mutating"
    weight = 1.0

    def adjacency(self, candidates):
        for c in candidates:
            c.metadata.setdefault("touched", True)  # type: ignore[attr-defined]
        return sp.csr_matrix((len(candidates), len(candidates)))


class _ShortRanker:
    name = "short"

    def rank(self, graph, seeds, context):
        return np.asarray(seeds)[:-1]


class _SeedEditor:
    name = "editor"

    def rank(self, graph, seeds, context):
        seeds *= 2
        return seeds


def test_broken_implementations_are_named() -> None:
    with pytest.raises(ContractError, match="self-loops"):
        check_proximity(_SelfLoops())
    with pytest.raises(ContractError, match="must not modify"):
        check_proximity(_Mutating())
    with pytest.raises(ContractError, match="scores, got shape"):
        check_ranker(_ShortRanker())
    with pytest.raises(ContractError, match="must not modify seeds"):
        check_ranker(_SeedEditor())
    with pytest.raises(ContractError, match="found nothing"):
        check_neighbour_source(InMemorySource(sample_candidates()), [((None, "zz"),)])
    with pytest.raises(AssertionError):  # what any test runner reports as a failure
        check_proximity(object())


def test_testing_does_not_import_pytest() -> None:
    import ast
    from pathlib import Path

    import grapher_core.testing as testing

    tree = ast.parse(Path(testing.__file__).read_text())
    names = {
        a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    names |= {
        (n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
    }
    assert "pytest" not in names and "unittest" not in names
