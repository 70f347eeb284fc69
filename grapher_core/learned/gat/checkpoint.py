"""GAT and MLP checkpoints (:data:`GAT`): what the weights mean and how their sizes are pinned.

``<stem>.json`` says what the weights mean: the architecture, the embedding model and dimension
they were trained on, the features, the GCS alpha, the proximities, the training data and the
validation metrics. Loading, saving and the embedding check are the shared
:class:`~grapher_core.learned.family.Family`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grapher_core.errors import CheckpointError
from grapher_core.learned.family import Expected, Family, JSONConfig
from grapher_core.learned.gat.features import EDGE_KINDS, FEATURE_BLOCKS, SEED_SCHEMES
from grapher_core.learned.gat.model import N_SCALARS, GraphERNet, ModelSpec
from grapher_core.learned.weights import MAX_SIZE, Rule, checkpoint_paths

__all__ = ["FORMAT_VERSION", "GAT", "CheckpointConfig", "checkpoint_paths", "expected_shapes"]

FORMAT_VERSION = 1
#: What every config field must be, sizes aside (:func:`check_spec_sizes`).
RULES: dict[str, Rule] = {
    **dict.fromkeys(("embedding_model", "graph", "retriever", "model.architecture"), Rule("str")),
    "seeds": Rule("str", choices=SEED_SCHEMES),  # absent in older checkpoints: scores
    **dict.fromkeys(("feature_blocks", "edge_kinds"), Rule("[str]")),
    **dict.fromkeys(("training", "metrics"), Rule("object")),
    "format_version": Rule("int"),
    "embedding_dim": Rule("int", 1, MAX_SIZE),
    "alpha": Rule("float", 0.0, 1.0, open_low=True, open_high=True),
    "model.dropout": Rule("float", 0.0, 1.0, open_high=True),
    "model.prior_init": Rule("float"),
}  # fmt: skip


@dataclass(frozen=True)
class CheckpointConfig(JSONConfig):
    """What a set of weights means; written as ``<stem>.json``."""

    model: ModelSpec
    embedding_model: str
    embedding_dim: int
    alpha: float
    graph: str = "fk"
    retriever: str = "dense"
    seeds: str = "score"
    feature_blocks: tuple[str, ...] = FEATURE_BLOCKS
    edge_kinds: tuple[str, ...] = EDGE_KINDS
    training: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION


def _parse(data: dict[str, Any], where: str) -> CheckpointConfig:
    config = CheckpointConfig(
        model=ModelSpec(**data["model"]),
        embedding_model=str(data["embedding_model"]),
        embedding_dim=int(data["embedding_dim"]),
        alpha=float(data["alpha"]),
        graph=str(data.get("graph", "fk")),
        retriever=str(data.get("retriever", "dense")),
        seeds=str(data.get("seeds", "score")),
        feature_blocks=tuple(data.get("feature_blocks", FEATURE_BLOCKS)),
        edge_kinds=tuple(data.get("edge_kinds", EDGE_KINDS)),
        training=dict(data.get("training", {})),
        metrics=dict(data.get("metrics", {})),
    )
    if config.embedding_dim != config.model.embedding_dim:
        raise CheckpointError(
            f"{where}: embedding_dim = {config.embedding_dim} but model.embedding_dim = "
            f"{config.model.embedding_dim}"
        )
    if config.feature_blocks != FEATURE_BLOCKS or config.edge_kinds != EDGE_KINDS:
        raise CheckpointError(
            f"{where}: features {list(config.feature_blocks)} / edge kinds "
            f"{list(config.edge_kinds)} differ from this version's "
            f"{list(FEATURE_BLOCKS)} / {list(EDGE_KINDS)}; retrain it"
        )
    return config


def expected_shapes(config: CheckpointConfig) -> Expected:
    """The tensors whose shapes pin every size field of the config's model spec."""
    spec = config.model
    h, d = spec.hidden, spec.embedding_dim
    expected: Expected = {
        "enc_object.weight": ((h, d), "hidden, embedding_dim"),
        "enc_scalars.weight": ((h, N_SCALARS), "hidden"),
        "fc2.weight": ((1, h), "hidden"),
    }
    if spec.architecture == "gat":
        expected["convs.0.att"] = ((1, spec.heads, h), "heads, hidden")
        expected["convs.0.lin_edge.weight"] = (
            (spec.heads * h, spec.edge_dim),
            "heads, hidden, edge_dim",
        )
    return expected


def _build(config: CheckpointConfig) -> GraphERNet:
    return GraphERNet(config.model)


def _layers(config: CheckpointConfig) -> dict[str, tuple[int, str]]:
    """The message-passing layers the weights must hold (a module function: rankers pickle)."""
    return {"convs.": (config.model.layers, "layers")}


#: GraphER-GAT and its MLP ablation: ``GAT.load(path)``, ``GAT.default_path("mlp")``, ...
GAT: Family[GraphERNet, CheckpointConfig] = Family(
    title="GAT/MLP",
    stamp={"format_version": FORMAT_VERSION},
    spec_key="model",
    sizes=("embedding_dim", "hidden", "heads", "edge_dim"),
    rules=RULES,
    parse=_parse,
    shapes=expected_shapes,
    build=_build,
    shipped={"gat": "gat_minilm", "mlp": "mlp_minilm"},
    train_command="grapher-bench train",
    weights_format="grapher-gat",
    required=("embedding_dim", "alpha"),
    layers=_layers,
)
