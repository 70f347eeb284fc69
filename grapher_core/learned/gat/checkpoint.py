"""Checkpoints: weights in safetensors, everything else in a JSON file beside them.

``<stem>.safetensors`` holds tensors only (no pickle, nothing executed on load);
``<stem>.json`` says what the weights mean: the architecture, the embedding model and
dimension they were trained on, the features, the GCS alpha, the proximities, the training
data and the validation metrics. Loading checks both agree, and the ranker refuses embeddings
of another model or dimension (see :func:`check_embeddings`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from grapher_core.errors import CheckpointError, ConfigError, EmbeddingMismatchError
from grapher_core.learned.gat.features import EDGE_KINDS, FEATURE_BLOCKS, SEED_SCHEMES
from grapher_core.learned.gat.model import N_SCALARS, GraphERNet, ModelSpec
from grapher_core.learned.weights import (
    MAX_SIZE,
    Rule,
    check_config,
    check_sizes,
    check_spec_sizes,
    checkpoint_paths,
    load_state,
    load_tensors,
    open_checkpoint,
    write_weights,
)

__all__ = [
    "FORMAT_VERSION",
    "CheckpointConfig",
    "check_embeddings",
    "checkpoint_paths",
    "default_checkpoint",
    "expected_shapes",
    "load_checkpoint",
    "save_checkpoint",
]

FORMAT_VERSION = 1
DEFAULT_CHECKPOINTS: dict[str, str] = {"gat": "gat_minilm", "mlp": "mlp_minilm"}
#: What every config field must be, sizes aside (:func:`check_spec_sizes`).
RULES: dict[str, Rule] = {
    **dict.fromkeys(("embedding_model", "graph", "retriever", "seeds", "model.architecture"),
                    Rule("str")),
    **dict.fromkeys(("feature_blocks", "edge_kinds"), Rule("[str]")),
    **dict.fromkeys(("training", "metrics"), Rule("object")),
    "format_version": Rule("int"),
    "embedding_dim": Rule("int", 1, MAX_SIZE),
    "alpha": Rule("float", 0.0, 1.0, open_low=True, open_high=True),
    "model.dropout": Rule("float", 0.0, 1.0, open_high=True),
    "model.prior_init": Rule("float"),
}  # fmt: skip


@dataclass
class CheckpointConfig:
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

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["model"] = self.model.to_dict()
        data["feature_blocks"] = list(self.feature_blocks)
        data["edge_kinds"] = list(self.edge_kinds)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = "config") -> CheckpointConfig:
        if not isinstance(data, dict):
            raise CheckpointError(f"{where}: expected a JSON object")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise CheckpointError(
                f"{where}: checkpoint format {version!r} is not supported "
                f"(this version reads format {FORMAT_VERSION})"
            )
        check_spec_sizes(where, data.get("model"), ("embedding_dim", "hidden", "heads", "edge_dim"))
        for name in ("embedding_dim", "alpha"):
            if name not in data:
                raise CheckpointError(f"{where}: malformed checkpoint config (no {name!r})")
        check_config(where, data, RULES)
        seeds = data.get("seeds", "score")  # checkpoints older than the field: scores
        if seeds not in SEED_SCHEMES:
            raise CheckpointError(f"{where}: seeds must be one of {SEED_SCHEMES}, got {seeds!r}")
        try:
            config = cls(
                model=ModelSpec(**data["model"]),
                embedding_model=str(data["embedding_model"]),
                embedding_dim=int(data["embedding_dim"]),
                alpha=float(data["alpha"]),
                graph=str(data.get("graph", "fk")),
                retriever=str(data.get("retriever", "dense")),
                seeds=str(seeds),
                feature_blocks=tuple(data.get("feature_blocks", FEATURE_BLOCKS)),
                edge_kinds=tuple(data.get("edge_kinds", EDGE_KINDS)),
                training=dict(data.get("training", {})),
                metrics=dict(data.get("metrics", {})),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as error:
            raise CheckpointError(f"{where}: malformed checkpoint config ({error})") from None
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


def default_checkpoint(architecture: str = "gat") -> Path:
    """Stem of the checkpoint shipped in the package for ``architecture`` ("gat" or "mlp")."""
    if architecture not in DEFAULT_CHECKPOINTS:
        raise ConfigError(
            f"no shipped checkpoint for {architecture!r}; "
            f"choose one of {sorted(DEFAULT_CHECKPOINTS)}"
        )
    return Path(str(resources.files("grapher_core") / "data" / DEFAULT_CHECKPOINTS[architecture]))


def save_checkpoint(
    model: GraphERNet, config: CheckpointConfig, path: str | Path
) -> tuple[Path, Path]:
    """Write ``<stem>.safetensors`` and ``<stem>.json``; returns both paths."""
    if model.spec != config.model:
        raise ConfigError("the model's spec differs from config.model")
    return write_weights(
        model.state_dict(),
        config.to_json(),
        path,
        metadata={"format": "grapher-gat", "architecture": config.model.architecture},
    )


def load_checkpoint(path: str | Path, device: str = "cpu") -> tuple[GraphERNet, CheckpointConfig]:
    """Read a checkpoint (safetensors only: no pickle) into an eval-mode model; the config is
    validated and its sizes compared with the weights' header before anything is built."""
    checkpoint = open_checkpoint(path)
    weights, meta = checkpoint.weights, checkpoint.meta
    config = CheckpointConfig.from_json(checkpoint.config, str(meta))
    check_sizes(
        checkpoint.shapes,
        expected_shapes(config.model),
        f"{meta} does not match {weights}",
        layers={"convs.": (config.model.layers, "layers")},
    )
    model = GraphERNet(config.model)
    load_state(model, load_tensors(checkpoint, device), f"{weights} does not match {meta}")
    model.to(device)
    model.eval()
    return model, config


def expected_shapes(spec: ModelSpec) -> dict[str, tuple[tuple[int, ...] | None, str]]:
    """The tensors whose shapes pin every size field of ``spec`` (:func:`check_sizes`)."""
    h, d = spec.hidden, spec.embedding_dim
    expected: dict[str, tuple[tuple[int, ...] | None, str]] = {
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


def check_embeddings(config: CheckpointConfig, dim: int, model_name: str | None = None) -> None:
    """Refuse embeddings of another dimension, or from a named model other than the
    checkpoint's: a learned ranker fed foreign vectors returns confident nonsense."""
    if model_name is not None and model_name != config.embedding_model:
        raise EmbeddingMismatchError(
            f"this checkpoint was trained on embeddings from {config.embedding_model!r}, "
            f"not {model_name!r}; use that model, or train one for yours with "
            "`grapher-bench train`"
        )
    if dim != config.embedding_dim:
        raise EmbeddingMismatchError(
            f"this checkpoint expects {config.embedding_dim}-d embeddings (from "
            f"{config.embedding_model!r}) but got {dim}-d ones; use that model, or train one "
            "for yours with `grapher-bench train`"
        )
