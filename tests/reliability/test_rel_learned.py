"""Learned rankers: bounded G-RAG aggregation, one checkpoint guard, inputs refused by name.

* G-RAG's neighbour mean as sparse products equals a literal per-pair reference; 2,000
  candidates run under a 1.5 GB address-space cap (a child process); pairwise work past its
  bound is refused before anything pairwise is allocated.
* Every checkpoint loader (GAT, G-RAG, qa-gnn, pruner) validates the config's ranges and
  compares its sizes with the safetensors header before building or reading tensors.
* Wrong-shaped embeddings and bad pruner settings are refused with the dimension / field named.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from helpers_grag import FakeEmbedder, FakeParser, random_graph  # noqa: E402

from grapher_core.candidates import Candidate  # noqa: E402
from grapher_core.edges.graph import build_graph  # noqa: E402
from grapher_core.enrich.concepts import ConceptGraph, concept_overlaps  # noqa: E402
from grapher_core.errors import (  # noqa: E402
    CheckpointError,
    ConfigError,
    EmbeddingMismatchError,
    GraphERError,
    InputError,
    InputTypeError,
)
from grapher_core.expand.pruning import CosinePruner  # noqa: E402
from grapher_core.learned import pruner as pruner_module  # noqa: E402
from grapher_core.learned.gat.checkpoint import GAT  # noqa: E402
from grapher_core.learned.grag import checkpoint as grag_checkpoint  # noqa: E402
from grapher_core.learned.grag.features import edge_arrays, neighbour_weights  # noqa: E402
from grapher_core.learned.grag.model import GRAGNet, GRAGSpec, NeighbourMean  # noqa: E402
from grapher_core.learned.grag.ranker import GRAGRanker  # noqa: E402
from grapher_core.learned.pruner import LearnedPruner, build_pruner  # noqa: E402
from grapher_core.learned.qa_gnn import checkpoint as qa_checkpoint  # noqa: E402
from grapher_core.learned.qa_gnn.ranker import QAGNNRanker  # noqa: E402
from grapher_core.ranking.base import RankContext  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


# --- 1. G-RAG: sparse aggregation equals the literal one, bounded memory and work ----------


def literal_edges(
    documents: list[ConceptGraph], question: ConceptGraph | None
) -> tuple[list[tuple[int, int]], list[tuple[float, float]]]:
    """Eq. 3 pair by pair with Python sets, each feature over its maximum (the reference)."""
    nodes = [set(d.nodes) | (set(question.nodes) if question else set()) for d in documents]
    edges = [d.edge_set() | (question.edge_set() if question else frozenset()) for d in documents]
    counts = {
        (i, j): (len(nodes[i] & nodes[j]), len(edges[i] & edges[j]))
        for i in range(len(documents))
        for j in range(len(documents))
        if i != j
    }
    top = [max((c[k] for c in counts.values()), default=0) for k in range(2)]
    pairs, weights = [], []
    for (i, j), (a, b) in counts.items():
        if a or b:
            pairs.append((j, i))  # message j -> i
            weights.append((a / top[0] if top[0] else 0.0, b / top[1] if top[1] else 0.0))
    return pairs, weights


def literal_mean(n: int, pairs: list[tuple[int, int]], weights: list[Any], x: Any) -> Any:
    """The former aggregation, literally: one weighted row per edge, summed, averaged."""
    index = torch.tensor(pairs, dtype=torch.long).reshape(-1, 2).t()
    weight = torch.tensor(weights, dtype=torch.float32).reshape(-1, 2).sum(-1)
    messages = x[index[0]] * weight.unsqueeze(-1)
    total = torch.zeros_like(x).index_add_(0, index[1], messages)
    count = torch.zeros(n).index_add_(0, index[1], torch.ones_like(weight))
    return total / count.clamp(min=1.0).unsqueeze(-1)


@pytest.mark.parametrize(
    ("seed", "graph"),
    [(0, "question"), (1, "question"), (2, "documents"), (3, "documents"), (4, "empty question")],
)
def test_grag_sparse_aggregation_equals_the_literal_reference(seed: int, graph: str) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 25))
    documents = [random_graph(rng, vocabulary=60, draws=int(rng.integers(0, 12))) for _ in range(n)]
    question = {"question": random_graph(rng, 60, 4), "empty question": ConceptGraph()}.get(graph)
    mode = "documents" if graph == "documents" else "question"
    pairs, weights = literal_edges(documents, question)
    x = torch.from_numpy(rng.normal(size=(n, 6)).astype(np.float32))
    expected = literal_mean(n, pairs, weights, x)

    found = neighbour_weights(n, documents, question, mode)
    assert found.n_edges == len(pairs)
    assert torch.allclose(NeighbourMean.from_weights(found)(x), expected, atol=1e-5)
    assert np.allclose(found.mean(x.numpy()), expected.numpy(), atol=1e-5)
    listed = edge_arrays(n, documents, question, mode)
    assert sorted(zip(*listed.edge_index.tolist(), strict=True)) == sorted(pairs)
    net = GRAGNet(GRAGSpec(embedding_dim=6, hidden=5, residual=False)).eval()
    q, index = torch.randn(1, 6), torch.zeros(n, dtype=torch.long)
    reference = torch.tensor(pairs, dtype=torch.long).reshape(-1, 2).t()
    by_list = net(x, reference, torch.tensor(weights).reshape(-1, 2), q, index)
    by_weights = net(x, NeighbourMean.from_weights(found), None, q, index)
    assert torch.allclose(by_list, by_weights, atol=1e-5)


def test_grag_2000_candidates_peak_below_1_5_gb_in_a_capped_child() -> None:
    """The complete question graph on 2,000 candidates (formerly ~6 GB of edge messages) runs
    in a child process whose whole address space is capped at 1.5 GB, imports included."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2",
        "HF_HUB_OFFLINE": "1",
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests/helpers/helpers_grag.py"), "2000", "--cap-gb", "1.5"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "n=2000" in done.stdout and "finite=True" in done.stdout


def test_grag_pairwise_work_past_its_bound_is_refused_by_name() -> None:
    rng = np.random.default_rng(7)
    documents = [random_graph(rng, vocabulary=40, draws=20) for _ in range(60)]
    candidates = [Candidate(str(i), "t", 1.0) for i in range(60)]
    with pytest.raises(InputError, match="max_pairs=100"):  # full scan: refused before it starts
        neighbour_weights(60, documents, None, "documents", max_pairs=100)
    with pytest.raises(InputError, match="max_pairs=100"):  # complete graph: bounded as it goes
        neighbour_weights(60, documents, random_graph(rng, 40, 3), "question", max_pairs=100)
    with pytest.raises(InputError, match="max_edges=1,000"):
        edge_arrays(60, documents, random_graph(rng, 40, 3), "question", max_edges=1000)
    with pytest.raises(InputError, match="max_pairs=50"):
        concept_overlaps(documents, max_pairs=50)
    with pytest.raises(ConfigError, match="max_pairs"):
        GRAGRanker(embedder=FakeEmbedder(), max_pairs=0)
    ranker = GRAGRanker(embedder=FakeEmbedder(), parser=FakeParser(), max_pairs=10)  # type: ignore[arg-type]
    from grapher_core.enrich.concepts import encode_graph

    stored = [
        Candidate(c.id, c.text, 1.0, {"concepts": encode_graph(d)})
        for c, d in zip(candidates, documents, strict=True)
    ]
    with pytest.raises(InputError, match="max_pairs=10"):
        ranker.rank(build_graph(stored, []), np.ones(60), RankContext(stored, "c1 or c7?"))


def test_qagnn_ego_subgraphs_past_their_bound_are_refused_before_allocating() -> None:
    from grapher_core.learned.qa_gnn.features import TypedEdges, ego_batch

    n = 200  # a star: every candidate is two hops from every other through the hub
    src = np.zeros(n - 1, dtype=np.int64)
    dst = np.arange(1, n, dtype=np.int64)
    star = TypedEdges(n, src, dst, np.ones(n - 1, np.float32), np.zeros(n - 1, np.int64))
    with pytest.raises(InputError, match=r"members.*max_entries=10,000"):
        ego_batch(star, depth=2, max_entries=10_000)
    with pytest.raises(InputError, match=r"edges.*max_entries=10,000"):
        ego_batch(star, depth=1, max_entries=10_000)
    assert ego_batch(star, depth=2, max_entries=None).n_nodes == n * n
    with pytest.raises(ConfigError, match="max_entries"):
        QAGNNRanker(max_entries=0)


# --- 2. one checkpoint guard: ranges, sizes against the header, before anything is built -----


def copy_stem(stem: Path, tmp_path: Path) -> Path:
    for suffix in (".json", ".safetensors"):
        shutil.copy(stem.with_name(stem.name + suffix), tmp_path / f"ck{suffix}")
    return tmp_path / "ck"


def toy_pruner(tmp_path: Path) -> Path:
    torch.manual_seed(0)
    LearnedPruner.from_model(build_pruner(8, 4), 4).save(tmp_path / "ck")
    return tmp_path / "ck"


def set_in(*path: Any) -> Callable[[dict[str, Any]], None]:
    *keys, value = path

    def tamper(config: dict[str, Any]) -> None:
        target = config
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return tamper


def _grag(tmp: Path) -> Path:
    return copy_stem(grag_checkpoint.GRAG.default_path(), tmp)


def _qa(tmp: Path) -> Path:
    return copy_stem(qa_checkpoint.QA_GNN.default_path(), tmp)


def _gat(tmp: Path) -> Path:
    return copy_stem(GAT.default_path("gat"), tmp)


def _load_pruner(stem: Path) -> Any:
    return LearnedPruner(stem)


FAMILIES = {
    "grag": (_grag, grag_checkpoint.GRAG.load, grag_checkpoint, "GRAGNet"),
    "qa-gnn": (_qa, qa_checkpoint.QA_GNN.load, qa_checkpoint, "QAGNNNet"),
    "pruner": (toy_pruner, _load_pruner, pruner_module, "build_pruner"),
    "gat": (_gat, GAT.load, None, None),
}

TAMPERED = {
    "qa-gnn hidden 40000": ("qa-gnn", set_in("model", "hidden", 40_000), "hidden"),
    "qa-gnn layers 10**5": ("qa-gnn", set_in("model", "layers", 10**5), "layers = 100000"),
    "qa-gnn layers 3": ("qa-gnn", set_in("model", "layers", 3), "layers = 3"),
    "qa-gnn fusion 10**6": ("qa-gnn", set_in("model", "fusion", [10**6, 256, 128]), "fusion"),
    "qa-gnn adjust_alpha 5": ("qa-gnn", set_in("adjust_alpha", 5.0), "adjust_alpha = 5.0"),
    "qa-gnn knn_k -1": ("qa-gnn", set_in("knn_k", -1), "knn_k = -1"),
    "qa-gnn ego_depth 10**6": ("qa-gnn", set_in("ego_depth", 10**6), "ego_depth"),
    "qa-gnn intercept NaN": ("qa-gnn", set_in("fusion", "intercept", float("nan")), "intercept"),
    "grag hidden 40000": ("grag", set_in("spec", "hidden", 40_000), "hidden"),
    "grag variant mlp": ("grag", set_in("spec", "variant", "mlp"), "variant"),
    "grag dropout 2": ("grag", set_in("spec", "dropout", 2.0), "dropout"),
    "grag edge_dim 3": ("grag", set_in("spec", "edge_dim", 3), "edge_dim"),
    "grag embedding_dim 512": ("grag", set_in("embedding_dim", 512), "embedding_dim"),
    "pruner hidden 40000": ("pruner", set_in("hidden", 40_000), "hidden"),
    "pruner dim text": ("pruner", set_in("dim", "wide"), "dim"),
    "gat alpha 5": ("gat", set_in("alpha", 5.0), "alpha = 5.0"),
}


@pytest.mark.parametrize(("family", "tamper", "named"), list(TAMPERED.values()), ids=list(TAMPERED))
def test_every_checkpoint_loader_checks_the_config_before_building(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    family: str,
    tamper: Callable[[dict[str, Any]], None],
    named: str,
) -> None:
    make, load, module, builder = FAMILIES[family]
    stem = make(tmp_path)
    meta = stem.with_suffix(".json")
    config = json.loads(meta.read_text())
    tamper(config)
    meta.write_text(json.dumps(config))

    def never(*args: object, **kwargs: object) -> None:
        pytest.fail("built or read before the config was checked")

    if module is not None:
        monkeypatch.setattr(module, builder, never)
    import safetensors.torch

    monkeypatch.setattr(safetensors.torch, "load_file", never)  # only the header may be read
    with pytest.raises(CheckpointError, match=named) as caught:
        load(stem)
    assert str(meta) in str(caught.value)


# --- 5. wrong-shaped inputs and bad pruner settings, refused by name ---------------------------


def test_wrong_shaped_embeddings_name_both_dimensions() -> None:
    ranker = QAGNNRanker(embedder=FakeEmbedder())
    good = [Candidate(str(i), "t", 1.0, embedding=np.ones(384)) for i in range(3)]
    wrong = [*good[:2], Candidate("x", "t", 1.0, embedding=np.ones(100))]
    with pytest.raises(EmbeddingMismatchError, match=r"384-d.*100-d"):
        ranker.rank(build_graph(wrong, []), np.ones(3), RankContext(wrong, "q"))
    text = [*good[:2], Candidate("y", "t", 1.0, embedding="not a vector")]  # type: ignore[arg-type]
    with pytest.raises(InputError, match="'y'"):
        ranker.rank(build_graph(text, []), np.ones(3), RankContext(text, "q"))
    with pytest.raises(InputError, match=r"shape \(2, 384\)"):
        ranker.rank(build_graph(good, []), np.ones(3), RankContext(good, "q", np.ones((2, 384))))

    class Ragged(FakeEmbedder):
        def embed_documents(self, texts: Any) -> Any:
            return [[0.0] * 384, [0.0] * 3][: len(texts)]

    bare = [Candidate(str(i), "t", 1.0) for i in range(2)]
    with pytest.raises(GraphERError, match="not numeric"):
        QAGNNRanker(embedder=Ragged()).rank(
            build_graph(bare, []), np.ones(2), RankContext(bare, "q", np.ones(384))
        )


def test_soft_pruners_validate_at_construction() -> None:
    for bad in ("0.5", float("nan"), True, 2.0, None):
        with pytest.raises(ConfigError, match="threshold"):
            CosinePruner(bad)  # type: ignore[arg-type]
    assert CosinePruner(np.float32(0.25)).threshold == 0.25
    with pytest.raises(InputTypeError, match="checkpoint"):
        LearnedPruner(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="hidden"):
        LearnedPruner.from_model(build_pruner(8, 4), 0)
    pruner = LearnedPruner.from_model(build_pruner(8, 4), 4)
    with pytest.raises(EmbeddingMismatchError, match=r"8-d.*5-d"):
        pruner.alphas(np.ones(8), np.ones((3, 5)))
    with pytest.raises(InputError, match="shape"):
        CosinePruner().alphas(np.ones(8), np.ones(8))
