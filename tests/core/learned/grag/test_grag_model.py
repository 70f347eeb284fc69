"""G-RAG's network: eq. 5 with mean aggregation on a hand-computed 3-node graph; features;
training on the shared loop; checkpoints and the ranker's refusals."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers_extras import needs

torch = pytest.importorskip("torch")

from grapher_core.candidates import Candidate  # noqa: E402
from grapher_core.edges.concepts import SharedConcepts, shared_concepts  # noqa: E402
from grapher_core.edges.graph import build_graph  # noqa: E402
from grapher_core.enrich.concepts import ConceptGraph, encode_graph  # noqa: E402
from grapher_core.errors import EmbeddingMismatchError  # noqa: E402
from grapher_core.learned.grag.checkpoint import GRAG, GRAGConfig  # noqa: E402
from grapher_core.learned.grag.features import edge_arrays  # noqa: E402
from grapher_core.learned.grag.model import EdgeMeanConv, GRAGNet, GRAGSpec  # noqa: E402
from grapher_core.learned.grag.ranker import GRAGRanker  # noqa: E402
from grapher_core.learned.grag.train import GRAGExample, grag_metrics, train_grag  # noqa: E402
from grapher_core.learned.loop import LoopConfig  # noqa: E402
from grapher_core.ranking.base import RankContext  # noqa: E402


def test_eq5_edge_weighted_mean_on_three_nodes() -> None:
    # edges 1 -> 0 with features (0.5, 0.25), 2 -> 0 with (1.0, 1.0), 0 -> 1 with (0.5, 0.25)
    x = torch.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]])
    edge_index = torch.tensor([[1, 2, 0], [0, 0, 1]])
    weight = torch.tensor([[0.5, 0.25], [1.0, 1.0], [0.5, 0.25]])
    conv = EdgeMeanConv(2, 2)
    # node 0: mean(0.75 * [0, 2], 2.0 * [4, 4]) = [4, 4.75]; node 1: 0.75 * [1, 0]; node 2: none
    expected = torch.tensor([[4.0, 4.75], [0.75, 0.0], [0.0, 0.0]])
    assert torch.allclose(conv.aggregate(x, edge_index, weight), expected)
    with torch.no_grad():
        conv.self_linear.weight.copy_(torch.eye(2))
        conv.self_linear.bias.zero_()
        assert conv.neighbour_linear is not None
        conv.neighbour_linear.weight.copy_(2 * torch.eye(2))
    assert torch.allclose(conv(x, edge_index, weight), x + 2 * expected)


def test_untrained_residual_network_scores_the_cosine_and_mlp_ignores_edges() -> None:
    spec = GRAGSpec(embedding_dim=4, hidden=3)
    net = GRAGNet(spec).eval()
    x = torch.randn(5, 4)
    q = torch.randn(1, 4)
    edges = torch.tensor([[0, 1], [1, 0]])
    scores = net(x, edges, torch.ones(2, 2), q, torch.zeros(5, dtype=torch.long))
    assert torch.allclose(scores, x @ q[0], atol=1e-6)  # s_i = y . x_i with x_L = x_0 at init
    mlp = GRAGNet(GRAGSpec(variant="mlp", embedding_dim=4, hidden=3, residual=False)).eval()
    a = mlp(x, edges, torch.ones(2, 2), q, torch.zeros(5, dtype=torch.long))
    b = mlp(
        x,
        torch.zeros((2, 0), dtype=torch.long),
        torch.zeros(0, 2),
        q,
        torch.zeros(5, dtype=torch.long),
    )
    assert torch.allclose(a, b)


def test_edge_features_normalise_each_dimension_and_read_the_proximities() -> None:
    a = ConceptGraph(("x", "y", "z"), (("x", "r", "y"), ("y", "r", "z")))
    b = ConceptGraph(("x", "y", "z"), (("x", "r", "y"),))
    c = ConceptGraph(("z", "w"))
    arrays = edge_arrays(3, [a, b, c], graph="documents")
    pairs = {
        (int(s), int(t)): tuple(w)
        for s, t, w in zip(*arrays.edge_index, arrays.edge_weight, strict=True)
    }
    # common nodes: a-b 3, a-c 1, b-c 1 -> /3; common edges: a-b 1 -> /1
    assert pairs[(0, 1)] == pytest.approx((1.0, 1.0))
    assert pairs[(2, 0)] == pytest.approx((1 / 3, 0.0))
    assert len(pairs) == 6
    candidates = [
        Candidate(str(i), "t", 1.0, {"concepts": encode_graph(g)}) for i, g in enumerate((a, b, c))
    ]
    graph = build_graph(candidates, shared_concepts())
    assert set(graph.by_kind) == {"concept_nodes", "concept_edges"}
    from_kinds = edge_arrays(3, None, graph="documents", by_kind=graph.by_kind)
    assert np.array_equal(
        np.sort(from_kinds.edge_weight, axis=0), np.sort(arrays.edge_weight, axis=0)
    )
    with pytest.raises(ValueError, match="count"):
        SharedConcepts(count="words")


def _examples(n_queries: int, rng: np.random.Generator, d: int = 8) -> list[GRAGExample]:
    out = []
    for k in range(n_queries):
        q = rng.normal(size=d).astype(np.float32)
        x = rng.normal(size=(6, d)).astype(np.float32)
        labels = np.zeros(6, dtype=np.float32)
        labels[:2] = 1.0
        x[:2] += 0.6 * q  # positives lean towards the query
        edges = np.array([[0, 1, 2, 3], [1, 0, 3, 2]])
        out.append(
            GRAGExample(f"q{k}", f"q{k}", labels, 2, x, q, edges, np.ones((4, 2), dtype=np.float32))
        )
    return out


def test_training_on_the_shared_loop_learns_and_saves(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    examples = _examples(40, rng)
    spec = GRAGSpec(embedding_dim=8, hidden=8, residual=False)
    result = train_grag(
        examples, spec, LoopConfig(loss="listwise", epochs=30, lr=5e-3, batch_size=8, patience=30)
    )
    assert result.best_metrics["MRR"] > 0.6  # chance is ~0.41 for 2 of 6
    chance = grag_metrics(examples, [rng.normal(size=6) for _ in examples])["MRR"]
    assert result.best_metrics["MRR"] > chance
    config = GRAGConfig(
        spec=spec,
        embedding_model="toy",
        embedding_dim=8,
        text="plain",
        graph="documents",
        paths="document",
    )
    GRAG.save(result.model, config, tmp_path / "toy")
    model, loaded = GRAG.load(tmp_path / "toy")
    assert loaded.spec == spec and loaded.text == "plain" and loaded.paths == "document"
    with pytest.raises(ValueError, match="paths must be one of"):
        GRAGConfig(spec=spec, embedding_model="toy", embedding_dim=8, paths="question")
    for a, b in zip(model.state_dict().values(), result.model.state_dict().values(), strict=True):
        assert torch.equal(a, b.cpu())  # loaded on the CPU, trained on "auto"


class _Toy:
    """A deterministic 8-d embedder for ranker tests (named, so refusal can be checked)."""

    def __init__(self, name: str = "toy", dim: int = 8) -> None:
        self.name, self.dim = name, dim

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, hash(word) % self.dim] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def _toy_checkpoint(tmp_path: Path, text: str = "concepts") -> Path:
    spec = GRAGSpec(embedding_dim=8, hidden=4)
    torch.manual_seed(0)
    GRAG.save(
        GRAGNet(spec),
        GRAGConfig(spec=spec, embedding_model="toy", embedding_dim=8, text=text),
        tmp_path / "ck",
    )
    return tmp_path / "ck"


def test_checkpoint_refuses_another_embedding_model(tmp_path: Path) -> None:
    stem = _toy_checkpoint(tmp_path)
    with pytest.raises(EmbeddingMismatchError, match="toy"):
        GRAGRanker(stem, embedder=_Toy(name="other-model"))
    needs("ner")  # graph="documents" parses the candidates with spaCy before the check
    ranker = GRAGRanker(stem, embedder=_Toy(), text="plain", graph="documents")
    candidates = [Candidate("a", "paris france", 0.5, embedding=np.ones(5))]
    with pytest.raises(EmbeddingMismatchError, match="8-d"):
        ranker.rank(build_graph(candidates, []), np.ones(1), RankContext(candidates, "paris"))


def test_ranker_scores_every_candidate_with_stored_concepts(tmp_path: Path) -> None:
    ranker = GRAGRanker(_toy_checkpoint(tmp_path), embedder=_Toy(), strict=True)
    graphs = [
        ConceptGraph(("paris", "france"), (("paris", "in", "france"),), ("paris",)),
        ConceptGraph(("berlin", "germany"), (("berlin", "in", "germany"),)),
        ConceptGraph(("france", "wine"), (("france", "make", "wine"),)),
    ]
    candidates = [
        Candidate(str(i), f"text {i}", 1.0 - i / 10, {"concepts": encode_graph(g)})
        for i, g in enumerate(graphs)
    ]
    ranker._questions["where is paris"] = ConceptGraph(("paris",), (), ("paris",))
    scores = ranker.rank(
        build_graph(candidates, []), np.ones(3), RankContext(candidates, "where is paris")
    )
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    with pytest.raises(ValueError, match="question text"):
        ranker.rank(
            build_graph(candidates, []), np.ones(3), RankContext(candidates, None, np.ones(8))
        )
    bare = [Candidate("x", "no concepts here", 1.0)]
    with pytest.raises(ValueError, match="no concept graph"):
        ranker.rank(build_graph(bare, []), np.ones(1), RankContext(bare, "where is paris"))


def test_shipped_checkpoint_says_it_is_not_expected_to_help(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Measured below the retriever's order on every shared set, so picking it says so, once."""
    from grapher_core.learned.caveats import NOT_EXPECTED_TO_HELP
    from grapher_core.utils import callsite

    monkeypatch.setattr(callsite, "_said", set())
    with pytest.warns(UserWarning, match="not recommended on strong retrievers"):
        GRAGRanker()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GRAGRanker()  # said once per process
    assert "docs/grag.md" in NOT_EXPECTED_TO_HELP
