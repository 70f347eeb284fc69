"""Checkpoints: safetensors round trip, config checks, refusal of foreign embeddings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from helpers_gat import graph_of, table_candidates  # noqa: E402

from grapher_core.errors import EmbeddingMismatchError  # noqa: E402
from grapher_core.learned.gat.checkpoint import GAT, CheckpointConfig, checkpoint_paths  # noqa: E402
from grapher_core.learned.gat.model import GraphERNet, ModelSpec  # noqa: E402
from grapher_core.learned.gat.ranker import GATRanker, MLPRanker  # noqa: E402
from grapher_core.ranking.base import RankContext  # noqa: E402
from grapher_core.ranking.seeds import make_seeds  # noqa: E402

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray

DIM = 16


def _save(tmp_path: Path, architecture: str = "gat", model_name: str = "test/model") -> Path:
    torch.manual_seed(0)
    spec = ModelSpec(architecture, embedding_dim=DIM, hidden=8)
    model = GraphERNet(spec)
    config = CheckpointConfig(
        model=spec,
        embedding_model=model_name,
        embedding_dim=DIM,
        alpha=0.3,
        training={"data": "unit-test"},
    )
    GAT.save(model, config, tmp_path / architecture)
    return tmp_path / architecture


class _NamedEmbedder:
    """A deterministic embedder with a name, for the model-mismatch check."""

    def __init__(self, name: str, dim: int = DIM) -> None:
        self.name, self.dim = name, dim

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        rng = np.random.default_rng(len(texts))
        return rng.normal(size=(len(texts), self.dim)).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def test_round_trip_gives_the_same_scores(tmp_path: Path) -> None:
    stem = _save(tmp_path)
    weights, config_file = checkpoint_paths(stem)
    assert weights.read_bytes()[8:9] == b"{"  # safetensors: u64 header length, JSON header
    config = json.loads(config_file.read_text())
    assert config["embedding_model"] == "test/model" and config["embedding_dim"] == DIM
    assert config["model"]["architecture"] == "gat"
    candidates = table_candidates(10, DIM)
    query = np.asarray(candidates[3].embedding)
    context = RankContext(candidates, None, query)
    graph, seeds = graph_of(candidates), make_seeds(candidates)
    first = GATRanker(stem).rank(graph, seeds, context)
    second = GATRanker(weights).rank(graph, seeds, context)  # either file names the pair
    assert first.shape == (10,) and np.all(np.isfinite(first))
    np.testing.assert_array_equal(first, second)
    model, loaded = GAT.load(stem)
    assert loaded.alpha == 0.3 and not model.training
    assert GATRanker(stem).alpha == 0.3 and GATRanker(stem, alpha=0.5).alpha == 0.5


def test_wrong_dimension_is_refused(tmp_path: Path) -> None:
    ranker = GATRanker(_save(tmp_path))
    candidates = table_candidates(6, DIM + 4)
    context = RankContext(candidates, None, np.asarray(candidates[0].embedding)[:DIM])
    with pytest.raises(EmbeddingMismatchError, match=f"expects {DIM}-d embeddings"):
        ranker.rank(graph_of(candidates), make_seeds(candidates), context)
    good = table_candidates(6, DIM)
    wide_query = RankContext(good, None, np.zeros(DIM + 1, dtype=np.float32))
    with pytest.raises(EmbeddingMismatchError, match=f"got {DIM + 1}-d"):
        ranker.rank(graph_of(good), make_seeds(good), wide_query)


def test_other_embedding_model_is_refused(tmp_path: Path) -> None:
    stem = _save(tmp_path, model_name="test/model")
    with pytest.raises(EmbeddingMismatchError, match="trained on embeddings from 'test/model'"):
        GATRanker(stem, embedder=_NamedEmbedder("other/model"))
    ranker = GATRanker(stem, embedder=_NamedEmbedder("test/model"))
    candidates = table_candidates(5, DIM, with_embeddings=False)
    scores = ranker.rank(
        graph_of(candidates), make_seeds(candidates), RankContext(candidates, "which table?", None)
    )
    assert scores.shape == (5,) and np.all(np.isfinite(scores))


def test_architecture_and_files_are_checked(tmp_path: Path) -> None:
    stem = _save(tmp_path, "mlp")
    assert MLPRanker(stem).name == "mlp"
    with pytest.raises(ValueError, match="ranker='mlp'"):
        GATRanker(stem)
    with pytest.raises(FileNotFoundError, match="checkpoint file not found"):
        GATRanker(tmp_path / "missing")
    _weights, config_file = checkpoint_paths(stem)
    data = json.loads(config_file.read_text())
    data["model"]["hidden"] = 16  # config no longer matches the weights
    config_file.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="does not match"):
        GAT.load(stem)
    data["format_version"] = 99
    config_file.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="format 99"):
        GAT.load(stem)


def test_weights_load_with_torch_weights_only(tmp_path: Path) -> None:
    """The state dict is plain tensors: torch.save/torch.load(weights_only=True) also works."""
    model, _ = GAT.load(_save(tmp_path))
    path = tmp_path / "state.pt"
    torch.save(model.state_dict(), path)
    state = torch.load(path, weights_only=True)
    clone = GraphERNet(model.spec)
    clone.load_state_dict(state)
    for key, value in model.state_dict().items():
        assert torch.equal(value, clone.state_dict()[key])
