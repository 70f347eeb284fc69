"""Checkpoints: weights in safetensors, everything else in a JSON file beside them.

``<stem>.safetensors`` holds tensors only (no pickle, nothing executed on load);
``<stem>.json`` says what the weights mean: the architecture, the embedding model and
dimension they were trained on, the features, the GCS alpha, the proximities, the training
data and the validation metrics. Loading checks both agree, and the ranker refuses embeddings
of another model or dimension (see :func:`check_embeddings`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from grapher_core.learned.features import EDGE_KINDS, FEATURE_BLOCKS
from grapher_core.learned.model import GraphERNet, ModelSpec

__all__ = [
    "FORMAT_VERSION",
    "CheckpointConfig",
    "EmbeddingMismatchError",
    "check_embeddings",
    "checkpoint_paths",
    "default_checkpoint",
    "load_checkpoint",
    "save_checkpoint",
]

FORMAT_VERSION = 1
DEFAULT_CHECKPOINTS: dict[str, str] = {"gat": "gat_minilm", "mlp": "mlp_minilm"}


class EmbeddingMismatchError(ValueError):
    """The embeddings at hand are not those the checkpoint was trained on."""


@dataclass
class CheckpointConfig:
    """What a set of weights means; written as ``<stem>.json``."""

    model: ModelSpec
    embedding_model: str
    embedding_dim: int
    alpha: float
    graph: str = "fk"
    retriever: str = "dense"
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
            raise ValueError(f"{where}: expected a JSON object")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise ValueError(f"{where}: checkpoint format {version!r} is not supported "
                             f"(this version reads format {FORMAT_VERSION})")
        try:
            config = cls(
                model=ModelSpec(**data["model"]),
                embedding_model=str(data["embedding_model"]),
                embedding_dim=int(data["embedding_dim"]),
                alpha=float(data["alpha"]),
                graph=str(data.get("graph", "fk")),
                retriever=str(data.get("retriever", "dense")),
                feature_blocks=tuple(data.get("feature_blocks", FEATURE_BLOCKS)),
                edge_kinds=tuple(data.get("edge_kinds", EDGE_KINDS)),
                training=dict(data.get("training", {})),
                metrics=dict(data.get("metrics", {})),
            )
        except (KeyError, TypeError) as error:
            raise ValueError(f"{where}: malformed checkpoint config ({error})") from None
        if config.feature_blocks != FEATURE_BLOCKS or config.edge_kinds != EDGE_KINDS:
            raise ValueError(f"{where}: features {list(config.feature_blocks)} / edge kinds "
                             f"{list(config.edge_kinds)} differ from this version's "
                             f"{list(FEATURE_BLOCKS)} / {list(EDGE_KINDS)}; retrain it")
        return config


def checkpoint_paths(path: str | Path) -> tuple[Path, Path]:
    """``(weights, config)`` for a stem or either of the two files."""
    stem = Path(path)
    if stem.suffix in (".safetensors", ".json"):
        stem = stem.with_suffix("")
    return stem.with_name(stem.name + ".safetensors"), stem.with_name(stem.name + ".json")


def default_checkpoint(architecture: str = "gat") -> Path:
    """Stem of the checkpoint shipped in the package for ``architecture`` ("gat" or "mlp")."""
    if architecture not in DEFAULT_CHECKPOINTS:
        raise ValueError(f"no shipped checkpoint for {architecture!r}; "
                         f"choose one of {sorted(DEFAULT_CHECKPOINTS)}")
    return Path(str(resources.files("grapher_core") / "data" / DEFAULT_CHECKPOINTS[architecture]))


def save_checkpoint(model: GraphERNet, config: CheckpointConfig, path: str | Path
                    ) -> tuple[Path, Path]:
    """Write ``<stem>.safetensors`` and ``<stem>.json``; returns both paths."""
    from safetensors.torch import save_file

    weights, meta = checkpoint_paths(path)
    if model.spec != config.model:
        raise ValueError("the model's spec differs from config.model")
    weights.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(weights), metadata={"format": "grapher-gat",
                                             "architecture": config.model.architecture})
    meta.write_text(json.dumps(config.to_json(), indent=2, sort_keys=True) + "\n")
    return weights, meta


def load_checkpoint(path: str | Path, device: str = "cpu") -> tuple[GraphERNet, CheckpointConfig]:
    """Read a checkpoint (safetensors only: no pickle) into an eval-mode model."""
    from safetensors.torch import load_file

    weights, meta = checkpoint_paths(path)
    for file in (weights, meta):
        if not file.is_file():
            raise FileNotFoundError(f"checkpoint file not found: {file}")
    try:
        data = json.loads(meta.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{meta}: not valid JSON ({error.msg})") from None
    config = CheckpointConfig.from_json(data, str(meta))
    model = GraphERNet(config.model)
    state = load_file(str(weights), device=device)
    try:
        missing, unexpected = model.load_state_dict(state, strict=False)
    except RuntimeError as error:  # tensor shapes differ from the config's
        raise ValueError(f"{weights} does not match {meta}: {error}") from None
    if missing or unexpected:
        raise ValueError(f"{weights} does not match {meta}: missing {sorted(missing)[:5]}, "
                         f"unexpected {sorted(unexpected)[:5]}")
    model.to(device)
    model.eval()
    return model, config


def check_embeddings(config: CheckpointConfig, dim: int, model_name: str | None = None) -> None:
    """Refuse embeddings of another dimension, or from a named model other than the
    checkpoint's: a learned ranker fed foreign vectors returns confident nonsense."""
    if model_name is not None and model_name != config.embedding_model:
        raise EmbeddingMismatchError(
            f"this checkpoint was trained on embeddings from {config.embedding_model!r}, "
            f"not {model_name!r}; use that model, or train one for yours with "
            "`grapher-bench train`")
    if dim != config.embedding_dim:
        raise EmbeddingMismatchError(
            f"this checkpoint expects {config.embedding_dim}-d embeddings (from "
            f"{config.embedding_model!r}) but got {dim}-d ones; use that model, or train one "
            "for yours with `grapher-bench train`")
