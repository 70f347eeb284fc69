"""Checkpoint files any learned ranker can use: tensors in safetensors, meaning in JSON.

``<stem>.safetensors`` holds tensors only (no pickle, nothing executed on load); ``<stem>.json``
holds the config that says what they mean. A model family keeps its own config schema and calls
:func:`write_weights` / :func:`read_weights`, then :func:`load_state` to put the tensors into a
freshly built model with every name and shape checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grapher_core.errors import CheckpointError, InputFileNotFoundError

__all__ = ["checkpoint_paths", "load_state", "read_weights", "write_weights"]


def checkpoint_paths(path: str | Path) -> tuple[Path, Path]:
    """``(weights, config)`` for a stem or either of the two files."""
    stem = Path(path)
    if stem.suffix in (".safetensors", ".json"):
        stem = stem.with_suffix("")
    return stem.with_name(stem.name + ".safetensors"), stem.with_name(stem.name + ".json")


def write_weights(
    state: dict[str, Any],
    config: dict[str, Any],
    path: str | Path,
    *,
    metadata: dict[str, str] | None = None,
) -> tuple[Path, Path]:
    """Write a state dict and its JSON config; returns both paths. Tensors are copied to CPU."""
    from safetensors.torch import save_file

    weights, meta = checkpoint_paths(path)
    weights.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().contiguous() for k, v in state.items()}
    save_file(tensors, str(weights), metadata=metadata)
    meta.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return weights, meta


def read_weights(path: str | Path, device: str = "cpu") -> tuple[dict[str, Any], dict[str, Any]]:
    """``(tensors, config)`` of a checkpoint; the config must be a JSON object."""
    from safetensors.torch import load_file

    weights, meta = checkpoint_paths(path)
    for file in (weights, meta):
        if not file.is_file():
            raise InputFileNotFoundError(f"checkpoint file not found: {file}")
    try:
        config = json.loads(meta.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{meta}: not valid JSON ({error.msg})") from None
    except (UnicodeDecodeError, RecursionError) as error:
        raise CheckpointError(f"{meta}: not a JSON config ({type(error).__name__})") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{meta}: expected a JSON object")
    try:
        tensors = load_file(str(weights), device=device)
    except Exception as error:  # safetensors raises its own, OS and value errors: name the file
        raise CheckpointError(
            f"{weights}: not a readable safetensors file ({type(error).__name__}: {error})"
        ) from error
    return tensors, config


def load_state(model: Any, state: dict[str, Any], where: str) -> None:
    """Load ``state`` into ``model``, refusing missing, unexpected or reshaped tensors."""
    try:
        missing, unexpected = model.load_state_dict(state, strict=False)
    except RuntimeError as error:  # tensor shapes differ from the config's
        raise CheckpointError(f"{where}: {error}") from None
    if missing or unexpected:
        raise CheckpointError(
            f"{where}: missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}"
        )
