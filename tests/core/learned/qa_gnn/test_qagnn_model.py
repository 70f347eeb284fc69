"""The query-aware GNN: ego-subgraphs, query-guided pooling, checkpoints, tiny training."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grapher_core.candidates import Candidate  # noqa: E402
from grapher_core.edges.graph import build_graph  # noqa: E402
from grapher_core.edges.keys import AdjacentChunks  # noqa: E402
from grapher_core.edges.semantic import SemanticKNN  # noqa: E402
from grapher_core.errors import EmbeddingMismatchError  # noqa: E402
from grapher_core.learned.qa_gnn.checkpoint import (  # noqa: E402
    QA_GNN,
    FusionCoefficients,
    QAGNNConfig,
)
from grapher_core.learned.qa_gnn.features import (  # noqa: E402
    ego_batch,
    typed_edges,
    with_semantic,
)
from grapher_core.learned.qa_gnn.model import QAGNNNet, QAGNNSpec  # noqa: E402
from grapher_core.learned.qa_gnn.ranker import QAGNNRanker  # noqa: E402
from grapher_core.ranking.base import RankContext  # noqa: E402

SMALL = QAGNNSpec(
    embedding_dim=8, hidden=16, heads=2, edge_type_dim=4, fusion=(32, 16), dropout=0.0
)
VECTORS = [(1.0, 0.0), (0.8, 0.6), (0.6, 0.8), (0.0, 1.0), (0.7, -0.7)]


def five_chunks() -> list[Candidate]:
    return [
        Candidate(
            f"c{i}",
            score=1.0 - 0.1 * i,
            metadata={"doc_id": "a" if i < 4 else "b", "chunk_index": i},
            embedding=np.array(v),
        )
        for i, v in enumerate(VECTORS)
    ]


def test_ego_subgraphs_hold_the_neighbours_and_the_induced_typed_edges() -> None:
    cands = five_chunks()
    graph = with_semantic(
        build_graph(cands, [AdjacentChunks()]), cands, SemanticKNN.paper(k=1, threshold=0.7)
    )
    ego = ego_batch(typed_edges(graph))
    members = {c: sorted(ego.node[ego.batch == c].tolist()) for c in range(5)}
    # c0: adjacent c1, and c4 -> c0 is c4's semantic top-1 (cosine .71)
    assert members == {0: [0, 1, 4], 1: [0, 1, 2], 2: [1, 2, 3], 3: [2, 3], 4: [0, 4]}
    in_ego0 = {
        (int(ego.node[s]), int(ego.node[d]), int(t))
        for s, d, t in zip(*ego.edge_index, ego.edge_type, strict=True)
        if ego.batch[s] == 0
    }
    assert in_ego0 == {(0, 1, 0), (1, 0, 0), (0, 1, 1), (4, 0, 1)}
    assert all(ego.batch[s] == ego.batch[d] for s, d in ego.edge_index.T)
    # the query-aware BFS (Alg. 8) enters only allowed neighbours; the centre stays
    allowed = np.array([True, False, True, True, True])
    bfs = ego_batch(typed_edges(graph), depth=2, allowed=allowed)
    assert sorted(bfs.node[bfs.batch == 0].tolist()) == [0, 4]
    assert sorted(bfs.node[bfs.batch == 1].tolist()) == [0, 1, 2, 3, 4]


def test_query_guided_pooling_changes_with_the_query_and_mean_pooling_does_not() -> None:
    torch.manual_seed(0)
    model = QAGNNNet(SMALL).eval()
    h = torch.randn(6, 16)
    batch = torch.tensor([0, 0, 0, 1, 1, 1])
    q1, q2 = torch.randn(2, 8), torch.randn(2, 8)
    w1 = model.pool.weights(h, batch, q1, 2)
    w2 = model.pool.weights(h, batch, q2, 2)
    assert torch.allclose(w1[:3].sum(), torch.tensor(1.0)) and not torch.allclose(w1, w2)
    mean = QAGNNNet(QAGNNSpec(**{**SMALL.to_dict(), "pooling": "mean"})).eval()
    assert torch.allclose(mean.pool.weights(h, batch, q1, 2), mean.pool.weights(h, batch, q2, 2))
    assert torch.allclose(mean.pool.weights(h, batch, q1, 2), torch.full((6,), 1 / 3))


def _checkpoint(tmp_path: Path, coef: tuple[float, ...] = (0.7, -1.25, 2.5)) -> Path:
    torch.manual_seed(1)
    config = QAGNNConfig(
        SMALL, "toy-model", 8, FusionCoefficients(coef, -0.5), 0.6, knn_k=2, knn_threshold=0.0
    )
    weights, _ = QA_GNN.save(QAGNNNet(SMALL), config, tmp_path / "toy")
    return weights


def test_fusion_coefficients_round_trip_through_the_checkpoint(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path)
    model, config = QA_GNN.load(path)
    assert config.fusion == FusionCoefficients((0.7, -1.25, 2.5), -0.5)
    assert config.adjust_alpha == 0.6 and config.knn_k == 2 and config.model == SMALL
    saved = json.loads(path.with_suffix(".json").read_text())
    assert saved["fusion"]["coef"] == [0.7, -1.25, 2.5]
    assert not model.training


def test_ranker_scores_every_candidate_and_refuses_other_embeddings(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path)
    rng = np.random.default_rng(0)
    cands = [
        Candidate(
            f"c{i}",
            score=float(1 - i / 10),
            metadata={"doc_id": "d", "chunk_index": i},
            embedding=rng.normal(size=8),
        )
        for i in range(6)
    ]
    graph = build_graph(cands, [AdjacentChunks()])
    seeds = np.array([c.score for c in cands])
    context = RankContext(cands, query_embedding=rng.normal(size=8))
    fused = QAGNNRanker(path).rank(graph, seeds, context)
    assert fused.shape == (6,) and np.all((fused > 0) & (fused < 1))
    gnn = QAGNNRanker(path, output="gnn").rank(graph, seeds, context)
    assert not np.allclose(gnn, gnn[0])
    with pytest.raises(EmbeddingMismatchError, match="8-d"):
        QAGNNRanker(path).rank(graph, seeds, RankContext(cands, query_embedding=np.ones(5)))

    class Other:
        name = "another-model"

    with pytest.raises(EmbeddingMismatchError, match="another-model"):
        QAGNNRanker(path, embedder=Other())  # type: ignore[arg-type]


def test_two_stage_training_learns_a_query_dependent_signal() -> None:
    from grapher_core.learned.qa_gnn.ranker import prepare_inputs
    from grapher_core.learned.qa_gnn.train import QAExample, QATrainConfig, train_qa_gnn

    rng = np.random.default_rng(0)
    dim, n, n_queries = 8, 12, 100
    objects, examples = [], []
    config = QAGNNConfig(SMALL, "toy", dim, knn_k=3, knn_threshold=0.999)
    # (no semantic edges: the retriever and adjusted scores then carry nothing, so the fused
    # output can only gain through what the GNN reads from the query)
    for q in range(n_queries):
        query = rng.normal(size=dim).astype(np.float32)
        vectors = rng.normal(size=(n, dim)).astype(np.float32)
        gold = rng.choice(n, size=2, replace=False)
        vectors[gold] += 2.5 * query  # gold chunks lean towards the query
        cands = [
            Candidate(
                f"{q}-{i}",
                score=float(rng.random()),
                metadata={"doc_id": f"d{q}", "chunk_index": i},
                embedding=vectors[i],
            )
            for i in range(n)
        ]
        inputs = prepare_inputs(
            build_graph(cands, [AdjacentChunks()]),
            np.array([c.score for c in cands]),
            cands,
            config,
        )
        labels = np.zeros(n, dtype=np.float32)
        labels[gold] = 1.0
        examples.append(
            QAExample(
                f"q{q}",
                "toy",
                2,
                labels,
                query,
                np.arange(n) + q * n,
                inputs.edges,
                inputs.ego,
                inputs.seeds,
                inputs.adjusted,
                inputs.support,
            )
        )
        objects.append(vectors)
    result = train_qa_gnn(
        examples,
        np.concatenate(objects),
        QATrainConfig(spec=SMALL, epochs=12, stage1_epochs=2, patience=12, lr=3e-3, batch_size=8),
    )
    assert result.stage1["val_link_auc"] is not None
    # random seeds give R@5 about 5/12; the query-aware model must beat that clearly
    assert result.stage2["val"]["R@5"] > 0.6
    assert len(result.fusion.coef) == 3
    # epochs are chosen on the deployed output: the fused ranking of the validation queries
    from grapher_core.learned.loop import predict
    from grapher_core.learned.qa_gnn.train import EgoAdapter, fused_recall_metrics, recall_metrics

    val = [examples[int(i)] for i in result.val_indices]
    adapter = EgoAdapter(np.concatenate(objects), frozen_encoder=True)
    gnn = predict(result.model, adapter, val, result.device)
    fused = fused_recall_metrics(val, gnn)
    assert fused == pytest.approx(result.stage2["val"])
    assert fused != recall_metrics(val, gnn)  # the raw logit would have been another metric
    # and the GNN is what the fused ranking gains from: without its score the fusion is at chance
    without_gnn = fused_recall_metrics(val, [np.zeros_like(g) for g in gnn])
    assert fused["R@5"] > without_gnn["R@5"] + 0.2


def test_shipped_checkpoint_says_its_gains_are_explained_by_position(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Measured no better than a position prior and below the retriever on unseen data: picking
    it says so, once per process."""
    import warnings

    from grapher_core.learned.caveats import EXPLAINED_BY_POSITION
    from grapher_core.utils import callsite

    monkeypatch.setattr(callsite, "_said", set())
    with pytest.warns(UserWarning, match="sentence-position prior"):
        QAGNNRanker()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        QAGNNRanker()
    assert "docs/qa_gnn.md" in EXPLAINED_BY_POSITION
