"""Every learned family keeps its tensors on one device: collate, forward, loss and training.

No GPU is needed to catch a tensor left on the CPU: on torch's ``"meta"`` device (shapes, no
data) an op that mixes a meta tensor with a CPU one fails like CUDA's "Expected all tensors to
be on the same device", and :class:`OneDevice` also records an op whose tensor arguments span two
devices where meta lets it through (a CPU table indexed by device indices, which CUDA refuses).
G-RAG's message passing is sparse, which meta cannot run: its meta step uses the ``mlp`` variant
(the same collate, features and loss); the ``gcn`` variant trains on every real device below.
The training tests run one tiny fit per family on the CPU and, where there is one, on CUDA.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch.overrides import TorchFunctionMode  # noqa: E402

from grapher_core.candidates import Candidate  # noqa: E402
from grapher_core.edges.graph import build_graph  # noqa: E402
from grapher_core.edges.keys import AdjacentChunks  # noqa: E402
from grapher_core.learned.gat.checkpoint import GAT, CheckpointConfig  # noqa: E402
from grapher_core.learned.gat.features import EDGE_DIM  # noqa: E402
from grapher_core.learned.gat.model import GraphERNet, ModelSpec  # noqa: E402
from grapher_core.learned.gat.train import (  # noqa: E402
    Example,
    GATAdapter,
    TrainConfig,
    TrainingSet,
    train_model,
)
from grapher_core.learned.grag.checkpoint import GRAG, GRAGConfig  # noqa: E402
from grapher_core.learned.grag.model import GRAGNet, GRAGSpec  # noqa: E402
from grapher_core.learned.grag.train import GRAGAdapter, GRAGExample, train_grag  # noqa: E402
from grapher_core.learned.loop import (  # noqa: E402
    LOSSES,
    LoopConfig,
    predict,
    ranking_loss,
    targets_for,
)
from grapher_core.learned.pruner import (  # noqa: E402
    LearnedPruner,
    PrunerAdapter,
    PruningExample,
    build_pruner,
    features,
    train_pruner,
)
from grapher_core.learned.qa_gnn import train as qa_train  # noqa: E402
from grapher_core.learned.qa_gnn.checkpoint import QA_GNN, QAGNNConfig  # noqa: E402
from grapher_core.learned.qa_gnn.model import QAGNNNet, QAGNNSpec  # noqa: E402
from grapher_core.learned.qa_gnn.ranker import prepare_inputs  # noqa: E402

DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
    ),
]
DIM = 8
QA_SPEC = QAGNNSpec(
    embedding_dim=DIM, hidden=8, heads=2, layers=1, edge_type_dim=4, fusion=(8,), dropout=0.0
)


def _tensors(value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


class OneDevice(TorchFunctionMode):
    """Records every torch op whose tensor arguments (scalars aside) span two devices."""

    def __init__(self) -> None:
        super().__init__()
        self.mixed: list[str] = []

    def __torch_function__(
        self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        devices = {str(t.device) for t in _tensors((args, kwargs)) if t.dim() > 0}
        if len(devices) > 1:
            self.mixed.append(f"{getattr(func, '__name__', func)}: {sorted(devices)}")
        return func(*args, **kwargs)


Loss = Callable[[Any, Sequence[Any]], Any]


def _meta_step(model: Any, adapter: Any, items: Sequence[Any], loss: Loss) -> None:
    """Collate, forward and loss of one batch on "meta": nothing may stay on the CPU."""
    model = model.to("meta")
    with OneDevice() as guard:
        logits = adapter.forward(model, adapter.collate(items, "meta"))
        value = loss(logits, items)
    assert guard.mixed == []
    assert logits.device.type == "meta" and logits.shape == (sum(len(e.labels) for e in items),)
    assert value.device.type == "meta" and value.dim() == 0


def _named(kind: str) -> Loss:
    return lambda logits, items: ranking_loss(kind, logits, targets_for(items, "meta"))


# -- tiny synthetic data per family -----------------------------------------------------------
def _gat_set(n_queries: int = 12, n: int = 5) -> TrainingSet:
    rng = np.random.default_rng(0)
    examples = []
    loops = np.arange(n)
    edge_index = np.concatenate([np.stack([loops, loops]), [[0, 1, 2], [1, 2, 3]]], axis=1)
    for q in range(n_queries):
        labels = np.zeros(n, np.float32)
        labels[:2] = 1.0
        examples.append(
            Example(
                f"q{q}",
                f"g{q % 4}",
                2,
                q,
                np.arange(q * n, (q + 1) * n),
                rng.random((n, 2)).astype(np.float32),
                edge_index.astype(np.int64),
                rng.random((edge_index.shape[1], EDGE_DIM)).astype(np.float32),
                labels,
            )
        )
    objects = rng.normal(size=(n_queries * n, DIM)).astype(np.float32)
    queries = rng.normal(size=(n_queries, DIM)).astype(np.float32)
    return TrainingSet(examples, objects, queries, "toy", "toy", "dense", "fk", 0.1, n)


def _grag_examples(n_queries: int = 12) -> list[GRAGExample]:
    rng = np.random.default_rng(1)
    out = []
    for k in range(n_queries):
        labels = np.zeros(6, np.float32)
        labels[:2] = 1.0
        out.append(
            GRAGExample(
                f"q{k}",
                f"q{k}",
                labels,
                2,
                rng.normal(size=(6, DIM)).astype(np.float32),
                rng.normal(size=DIM).astype(np.float32),
                np.array([[0, 1, 2, 3], [1, 0, 3, 2]]),
                np.ones((4, 2), np.float32),
            )
        )
    return out


def _qa_examples(n_queries: int = 10, n: int = 6) -> tuple[list[Any], np.ndarray]:
    rng = np.random.default_rng(2)
    config = QAGNNConfig(QA_SPEC, "toy", DIM, knn_k=2, knn_threshold=0.0)
    examples, objects = [], []
    for q in range(n_queries):
        vectors = rng.normal(size=(n, DIM)).astype(np.float32)
        cands = [
            Candidate(f"{q}-{i}", score=1.0 - i / 10, embedding=vectors[i],
                      metadata={"doc_id": f"d{q}", "chunk_index": i})
            for i in range(n)
        ]  # fmt: skip
        seeds = np.array([c.score for c in cands])
        inputs = prepare_inputs(build_graph(cands, [AdjacentChunks()]), seeds, cands, config)
        labels = np.zeros(n, np.float32)
        labels[:2] = 1.0
        query, rows = rng.normal(size=DIM).astype(np.float32), np.arange(n) + q * n
        scores = (inputs.seeds, inputs.adjusted, inputs.support)
        example = (f"q{q}", f"g{q % 3}", 2, labels, query, rows, inputs.edges, inputs.ego)
        examples.append(qa_train.QAExample(*example, *scores))
        objects.append(vectors)
    return examples, np.concatenate(objects)


def _pruning_examples(n_queries: int = 20) -> list[PruningExample]:
    rng = np.random.default_rng(3)
    out = []
    for k in range(n_queries):
        q = rng.normal(size=DIM)
        objects = np.vstack([q + rng.normal(scale=0.3, size=(2, DIM)), rng.normal(size=(3, DIM))])
        labels = np.array([1, 1, 0, 0, 0], np.float32)
        out.append(PruningExample(f"q{k}", f"g{k % 5}", features(q, objects), labels, 2))
    return out


# -- collate + forward + loss on "meta" -------------------------------------------------------
@pytest.mark.parametrize("architecture", ["gat", "mlp"])
@pytest.mark.parametrize("loss", LOSSES)
def test_gat_and_mlp_batches_stay_on_the_device(architecture: str, loss: str) -> None:
    data = _gat_set()
    model = GraphERNet(ModelSpec(architecture, DIM, 8, 2, 2, EDGE_DIM))
    adapter = GATAdapter(data.objects, data.queries)
    _meta_step(model, adapter, data.examples[:3], _named(loss))


@pytest.mark.parametrize("loss", LOSSES)
def test_grag_batches_stay_on_the_device(loss: str) -> None:
    model = GRAGNet(GRAGSpec(variant="mlp", embedding_dim=DIM, hidden=4))
    _meta_step(model, GRAGAdapter(), _grag_examples()[:3], _named(loss))


def test_qa_gnn_stages_stay_on_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch.fx.experimental import _config as fx_config

    # PyG's GATConv drops self-loops by a boolean mask, whose size meta cannot know: let it
    # assume every entry is kept (the shapes differ, the devices are what is checked)
    monkeypatch.setattr(fx_config, "meta_nonzero_assume_all_nonzero", True)
    examples, objects = _qa_examples()
    config = qa_train.QATrainConfig(spec=QA_SPEC, hard_negatives=1, random_negatives=1)
    triplet = qa_train._triplet_loss(config)
    adapter = qa_train.EgoAdapter(objects, frozen_encoder=False)
    _meta_step(QAGNNNet(QA_SPEC), adapter, examples[:3],
               lambda logits, items: triplet(logits, items, "meta"))  # fmt: skip
    links = qa_train._link_examples(examples, 0.5, 0)
    assert links
    _meta_step(QAGNNNet(QA_SPEC), qa_train._LinkAdapter(objects), links[:3],
               lambda logits, items: qa_train._bce_loss(logits, items, "meta"))  # fmt: skip


def test_pruner_batches_stay_on_the_device() -> None:
    _meta_step(build_pruner(DIM, 4), PrunerAdapter(), _pruning_examples()[:3], _named("bce"))


# -- one tiny fit per family on each device ---------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("architecture", ["gat", "mlp"])
def test_gat_and_mlp_train_on_the_device(device: str, architecture: str, tmp_path: Path) -> None:
    data = _gat_set()
    config = TrainConfig(architecture=architecture, epochs=2, hidden=8, heads=2, layers=2,
                         batch_size=4, device=device)  # fmt: skip
    result = train_model(data, config)
    assert result.device == device
    assert all(p.device.type == device for p in result.model.parameters())
    val = [data.examples[i] for i in result.val_indices]
    adapter = GATAdapter(data.objects, data.queries)
    scores = predict(result.model, adapter, val, device)
    assert [s.shape for s in scores] == [e.labels.shape for e in val]
    spec = result.model.spec
    GAT.save(result.model, CheckpointConfig(spec, "toy", DIM, 0.1), tmp_path / "ck")
    loaded, _ = GAT.load(tmp_path / "ck")  # saved from the device, read on the CPU
    again = predict(loaded, adapter, val, "cpu")
    assert all(np.allclose(a, b, atol=1e-4) for a, b in zip(scores, again, strict=True))


@pytest.mark.parametrize("device", DEVICES)
def test_grag_trains_on_the_device(device: str, tmp_path: Path) -> None:
    examples = _grag_examples()
    spec = GRAGSpec(embedding_dim=DIM, hidden=4)
    result = train_grag(examples, spec, LoopConfig(loss="listwise", epochs=2, batch_size=4,
                                                   device=device))  # fmt: skip
    assert result.device == device
    val = [examples[i] for i in result.val_indices]
    scores = predict(result.model, GRAGAdapter(), val, device)
    GRAG.save(result.model, GRAGConfig(spec, "toy", DIM), tmp_path / "ck")
    loaded, _ = GRAG.load(tmp_path / "ck")
    again = predict(loaded, GRAGAdapter(), val, "cpu")
    assert all(np.allclose(a, b, atol=1e-4) for a, b in zip(scores, again, strict=True))


@pytest.mark.parametrize("device", DEVICES)
def test_qa_gnn_trains_on_the_device(device: str, tmp_path: Path) -> None:
    examples, objects = _qa_examples()
    config = qa_train.QATrainConfig(spec=QA_SPEC, epochs=1, stage1_epochs=1, batch_size=4,
                                    device=device)  # fmt: skip
    result = qa_train.train_qa_gnn(examples, objects, config)
    assert result.device == device
    assert all(p.device.type == device for p in result.model.parameters())
    assert result.stage1["val_link_auc"] is not None and len(result.fusion.coef) == 3
    val = [examples[i] for i in result.val_indices]
    scores = predict(result.model, qa_train.EgoAdapter(objects, True), val, device)
    assert all(np.all(np.isfinite(s)) for s in scores)
    QA_GNN.save(result.model, QAGNNConfig(QA_SPEC, "toy", DIM, result.fusion), tmp_path / "ck")
    loaded, _ = QA_GNN.load(tmp_path / "ck")
    assert next(loaded.parameters()).device.type == "cpu"


@pytest.mark.parametrize("device", DEVICES)
def test_pruner_trains_and_prunes_on_the_device(device: str, tmp_path: Path) -> None:
    pruner, metrics = train_pruner(_pruning_examples(), epochs=3, hidden=8, device=device)
    assert pruner.device == device and 0.0 <= metrics["auc"] <= 1.0
    q, objects = np.ones(DIM), np.eye(DIM)[:3]
    alphas = pruner.alphas(q, objects)
    assert alphas.shape == (3,) and np.all((alphas >= 0) & (alphas <= 1))
    pruner.save(tmp_path / "p")
    assert np.allclose(LearnedPruner(tmp_path / "p").alphas(q, objects), alphas, atol=1e-5)
