"""Query-aware GNN checkpoints: fp16 weights in safetensors, the rest in a JSON file beside them.

The JSON says what the weights mean and holds everything ``ranker="qa-gnn"`` needs besides
them: the network spec, the embedding model and dimension, the semantic-edge and ego-subgraph
settings, the score-adjustment alpha, and the score-fusion logistic regression (Alg. 6:
coefficients over the min-max scaled [retriever, adjusted, GNN] scores). Weights are stored in
float16 (half the size; loaded back as float32), nothing is pickled; loading and its checks
are the shared :class:`~grapher_core.learned.family.Family`'s (:data:`QA_GNN`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grapher_core.errors import CheckpointError
from grapher_core.learned.family import Expected, Family, JSONConfig
from grapher_core.learned.qa_gnn.model import QAGNNNet, QAGNNSpec
from grapher_core.learned.weights import MAX_SIZE, Rule
from grapher_core.ranking.seeds import minmax

__all__ = [
    "FUSION_FEATURES",
    "MAX_EGO_DEPTH",
    "QA_GNN",
    "QA_GNN_FORMAT",
    "FusionCoefficients",
    "QAGNNConfig",
    "fusion_features",
    "qa_gnn_shapes",
]

QA_GNN_FORMAT = "grapher-qa-gnn/1"
FUSION_FEATURES: tuple[str, ...] = ("retriever", "adjusted", "gnn")


def fusion_features(seeds: np.ndarray, adjusted: np.ndarray, gnn: np.ndarray) -> np.ndarray:
    """``(n, 3)``: min-max scaled retriever, adjusted and GNN scores of one query."""
    return np.stack(
        [minmax(np.asarray(v, dtype=np.float64)) for v in (seeds, adjusted, gnn)], axis=1
    )


@dataclass(frozen=True)
class FusionCoefficients:
    """``sigmoid(intercept + Σ coef_i * minmax(feature_i))`` over :data:`FUSION_FEATURES`."""

    coef: tuple[float, ...] = (1.0, 0.0, 0.0)
    intercept: float = 0.0
    features: tuple[str, ...] = FUSION_FEATURES

    def __post_init__(self) -> None:
        if tuple(self.features) != FUSION_FEATURES or len(self.coef) != len(FUSION_FEATURES):
            raise CheckpointError(
                f"fusion must have one coefficient for each of {FUSION_FEATURES}, "
                f"got features {list(self.features)} and {len(self.coef)} "
                "coefficients"
            )
        object.__setattr__(self, "coef", tuple(float(c) for c in self.coef))
        object.__setattr__(self, "features", tuple(self.features))
        if not all(math.isfinite(c) for c in (*self.coef, float(self.intercept))):
            raise CheckpointError(
                f"fusion coefficients must be finite, got {list(self.coef)} and intercept "
                f"{self.intercept!r}"
            )

    def logits(self, seeds: np.ndarray, adjusted: np.ndarray, gnn: np.ndarray) -> np.ndarray:
        """The fusion's logit per candidate of one query (its sigmoid is the fused score; the
        order is the same), so the ranker and training apply the regression one way."""
        features = fusion_features(seeds, adjusted, gnn)
        return self.intercept + features @ np.asarray(self.coef, dtype=np.float64)


@dataclass(frozen=True)
class QAGNNConfig(JSONConfig):
    """What a set of query-aware GNN weights means; written as ``<stem>.json``."""

    model: QAGNNSpec
    embedding_model: str
    embedding_dim: int
    fusion: FusionCoefficients = field(default_factory=FusionCoefficients)
    adjust_alpha: float = 0.7
    knn_k: int = 5
    knn_threshold: float = 0.6
    ego_depth: int = 1
    ego_query_threshold: float | None = None
    training: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    format: str = QA_GNN_FORMAT


#: The deepest ego-subgraph a checkpoint may ask for: each hop can multiply the subgraphs' size.
MAX_EGO_DEPTH = 8


#: What every config field must be and its range, sizes aside (:func:`check_spec_sizes`).
RULES: dict[str, Rule] = {
    **dict.fromkeys(("embedding_model", "model.pooling"), Rule("str")),
    **dict.fromkeys(("training", "metrics", "fusion"), Rule("object")),
    "embedding_dim": Rule("int", 1, MAX_SIZE),
    "adjust_alpha": Rule("float", 0.0, 1.0),
    "knn_k": Rule("int", 1, MAX_SIZE),
    "knn_threshold": Rule("float", -1.0, 1.0),
    "ego_depth": Rule("int", 0, MAX_EGO_DEPTH),
    "ego_query_threshold": Rule("float", -1.0, 1.0, optional=True),
    "fusion.coef": Rule("[float]"),
    "fusion.intercept": Rule("float"),
    "fusion.features": Rule("[str]"),
    "model.dropout": Rule("float", 0.0, 1.0, open_high=True),
    "model.centre": Rule("bool"),
}


def _parse(data: dict[str, Any], where: str) -> QAGNNConfig:
    model = dict(data["model"])
    model["fusion"] = tuple(model.get("fusion", (512, 256, 128)))
    fusion = dict(data.get("fusion", {}))
    threshold = data.get("ego_query_threshold")
    return QAGNNConfig(
        model=QAGNNSpec(**model),
        embedding_model=str(data["embedding_model"]),
        embedding_dim=int(data["embedding_dim"]),
        fusion=FusionCoefficients(
            tuple(fusion.get("coef", (1.0, 0.0, 0.0))),
            float(fusion.get("intercept", 0.0)),
            tuple(fusion.get("features", FUSION_FEATURES)),
        ),
        adjust_alpha=float(data.get("adjust_alpha", 0.7)),
        knn_k=int(data.get("knn_k", 5)),
        knn_threshold=float(data.get("knn_threshold", 0.6)),
        ego_depth=int(data.get("ego_depth", 1)),
        ego_query_threshold=None if threshold is None else float(threshold),
        training=dict(data.get("training", {})),
        metrics=dict(data.get("metrics", {})),
    )


def qa_gnn_shapes(config: QAGNNConfig) -> Expected:
    """The tensors whose shapes pin every size field of the config's model spec."""
    spec = config.model
    h, d, heads = spec.hidden, spec.embedding_dim, spec.heads
    width = h * (2 if spec.centre else 1) + d
    expected: Expected = {
        "encoder.edge_embed.weight": ((spec.edge_types, spec.edge_type_dim), "edge_types"),
        "encoder.convs.0.lin.weight": ((h, d), "hidden, embedding_dim"),
        "encoder.convs.0.att_src": ((1, heads, h // heads), "heads, hidden"),
        "encoder.convs.0.lin_edge.weight": ((h, spec.edge_type_dim + 1), "edge_type_dim"),
        "pool.project_query.weight": ((h, d), "hidden, embedding_dim"),
        "fusion.skip.weight": ((spec.fusion[-1], width), "fusion, centre"),
    }
    previous = width
    for i, out in enumerate(spec.fusion):
        expected[f"fusion.fusion.{4 * i}.weight"] = ((out, previous), f"fusion[{i}]")
        previous = out
    return expected


def _build(config: QAGNNConfig) -> QAGNNNet:
    return QAGNNNet(config.model)


def _layers(config: QAGNNConfig) -> dict[str, tuple[int, str]]:
    """The layers the weights must hold (a module function: rankers pickle)."""
    return {
        "encoder.convs.": (config.model.layers, "layers"),
        "fusion.fusion.": (2 * len(config.model.fusion), "fusion layers"),
    }


#: The query-aware GNN, weights in fp16: ``QA_GNN.load(path)``, ``QA_GNN.save(...)``, ...
QA_GNN: Family[QAGNNNet, QAGNNConfig] = Family(
    title="qa-gnn",
    stamp={"format": QA_GNN_FORMAT},
    spec_key="model",
    sizes=("embedding_dim", "hidden", "heads", "edge_types", "edge_type_dim", "fusion"),
    rules=RULES,
    parse=_parse,
    shapes=qa_gnn_shapes,
    build=_build,
    shipped={"qa-gnn": "qa_gnn_minilm"},
    train_command="grapher-bench qagnn-train",
    weights_format=QA_GNN_FORMAT,
    layers=_layers,
    half=True,
)
