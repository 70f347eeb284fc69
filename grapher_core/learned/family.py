"""One checkpoint shape for every learned ranker family (GAT/MLP, G-RAG, qa-gnn).

A :class:`Family` says only what differs between families: the JSON fields that stamp its
format, its config's rules and how the typed config is made from checked JSON, which tensors
pin the sizes, how the network is built, and which checkpoints ship. Loading, saving, the
shipped default and the embedding-compatibility check are written once, here, so every family
refuses a tampered file the same way: the config checked by kind and range
(:func:`~grapher_core.learned.weights.check_config`: sizes, finite floats, typed booleans and
strings), its sizes compared with the safetensors header, and only then the network built and
the tensors read (:mod:`grapher_core.learned.weights`). Every refusal is a
:class:`~grapher_core.errors.CheckpointError` naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

from grapher_core.errors import CheckpointError, ConfigError, EmbeddingMismatchError
from grapher_core.learned.weights import (
    Rule,
    check_config,
    check_sizes,
    check_spec_sizes,
    load_state,
    load_tensors,
    open_checkpoint,
    write_weights,
)

__all__ = ["Expected", "Family", "FamilyConfig", "JSONConfig"]

Expected = dict[str, tuple[tuple[int, ...] | None, str]]
"""Tensor name -> (the shape the config implies, or ``None`` for "absent"; its fields)."""


class FamilyConfig(Protocol):
    """What the shared code reads of a family's config."""

    @property
    def embedding_model(self) -> str: ...

    @property
    def embedding_dim(self) -> int: ...

    def to_json(self) -> dict[str, Any]: ...


ModelT = TypeVar("ModelT")
ConfigT = TypeVar("ConfigT", bound=FamilyConfig)


def _plain(value: Any) -> Any:
    """JSON-ready: tuples as lists, nested mappings and lists converted too."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class JSONConfig:
    """``to_json`` for a dataclass config: every field, nested specs as objects, tuples as
    lists -- the JSON written beside the weights and what ``describe()`` returns."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = _plain(asdict(cast(Any, self)))
        return data


def _no_layers(config: Any) -> dict[str, tuple[int, str]]:
    return {}


@dataclass(frozen=True)
class Family(Generic[ModelT, ConfigT]):
    """How one model family's checkpoints are read and written.

    ``title`` names the family in messages. ``stamp``: the JSON fields and values that mark
    the format this version reads. ``spec_key``: the config's object holding the network's
    sizes (``sizes``; ``layer_fields`` are layer counts), also the config attribute a saved
    model's ``spec`` must equal. ``rules``: every other field's kind and range; ``required``:
    fields without a default. ``parse(data, where)``: the typed config from checked JSON.
    ``shapes`` / ``layers``: what :func:`~grapher_core.learned.weights.check_sizes` compares
    with the header. ``shipped``: variant -> stem under ``grapher_core/data`` (the first is
    the default). ``half``: weights stored in float16 (loaded back as float32).
    """

    title: str
    stamp: Mapping[str, Any]
    spec_key: str
    sizes: tuple[str, ...]
    rules: Mapping[str, Rule]
    parse: Callable[[dict[str, Any], str], ConfigT]
    shapes: Callable[[ConfigT], Expected]
    build: Callable[[ConfigT], ModelT]
    shipped: Mapping[str, str]
    train_command: str
    weights_format: str
    required: tuple[str, ...] = ()
    layer_fields: tuple[str, ...] = ("layers",)
    layers: Callable[[ConfigT], Mapping[str, tuple[int, str]]] = field(default=_no_layers)
    half: bool = False

    def default_path(self, variant: str | None = None) -> Path:
        """Stem of the checkpoint shipped in the package (``variant``: e.g. "gat" or "mlp")."""
        name = next(iter(self.shipped)) if variant is None else variant
        if name not in self.shipped:
            raise ConfigError(
                f"no shipped {self.title} checkpoint for {name!r}; "
                f"choose one of {sorted(self.shipped)}"
            )
        return Path(str(resources.files("grapher_core") / "data" / self.shipped[name]))

    def read_config(self, data: Any, where: str) -> ConfigT:
        """The typed config of a checkpoint's JSON, every field checked before any is used."""
        if not isinstance(data, dict):
            raise CheckpointError(f"{where}: expected a JSON object")
        for key, expected in self.stamp.items():
            if data.get(key) != expected:
                raise CheckpointError(
                    f"{where}: {self.title} checkpoint format {data.get(key)!r} is not "
                    f"supported (this version reads {key} {expected!r})"
                )
        check_spec_sizes(
            where,
            data.get(self.spec_key),
            self.sizes,
            layers=self.layer_fields,
            prefix=self.spec_key,
        )
        for name in self.required:
            if name not in data:
                raise CheckpointError(f"{where}: malformed checkpoint config (no {name!r})")
        check_config(where, data, self.rules)
        try:
            return self.parse(data, where)
        except (KeyError, TypeError, ValueError, OverflowError) as error:
            if isinstance(error, CheckpointError) and str(error).startswith(where):
                raise  # already names the file and the field
            raise CheckpointError(
                f"{where}: malformed {self.title} checkpoint config ({error})"
            ) from None

    def load(self, path: str | Path, device: str = "cpu") -> tuple[ModelT, ConfigT]:
        """A checkpoint (safetensors and JSON, no pickle) as an eval-mode float32 model on
        ``device``; the config is checked and its sizes compared with the weights' header
        before the model is built or a tensor read."""
        checkpoint = open_checkpoint(path)
        weights, meta = checkpoint.weights, checkpoint.meta
        config = self.read_config(checkpoint.config, str(meta))
        check_sizes(
            checkpoint.shapes,
            self.shapes(config),
            f"{meta} does not match {weights}",
            layers=dict(self.layers(config)),
        )
        model: Any = self.build(config)
        tensors = load_tensors(checkpoint, device)
        state = {k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}
        load_state(model, state, f"{weights} does not match {meta}")
        model.to(device)
        model.eval()
        return cast(ModelT, model), config

    def save(self, model: ModelT, config: ConfigT, path: str | Path) -> tuple[Path, Path]:
        """Write ``<stem>.safetensors`` and ``<stem>.json``; returns both paths."""
        network: Any = model
        if getattr(network, "spec", None) != getattr(config, self.spec_key):
            raise CheckpointError(f"the model's spec differs from config.{self.spec_key}")
        state = network.state_dict()
        if self.half:
            state = {k: v.half() if v.is_floating_point() else v for k, v in state.items()}
        metadata = {"format": self.weights_format}
        architecture = getattr(getattr(config, self.spec_key), "architecture", None)
        if isinstance(architecture, str):
            metadata["architecture"] = architecture
        return write_weights(state, config.to_json(), path, metadata=metadata)

    def check_embeddings(self, config: ConfigT, dim: int, model_name: str | None = None) -> None:
        """Refuse vectors of another dimension, or from a named model other than the
        checkpoint's: a learned ranker fed foreign vectors returns confident nonsense."""
        hint = f"use that model, or train one for yours with `{self.train_command}`"
        if model_name is not None and model_name != config.embedding_model:
            raise EmbeddingMismatchError(
                f"this {self.title} checkpoint was trained on embeddings from "
                f"{config.embedding_model!r}, not {model_name!r}; {hint}"
            )
        if dim != config.embedding_dim:
            raise EmbeddingMismatchError(
                f"this {self.title} checkpoint expects {config.embedding_dim}-d embeddings "
                f"(from {config.embedding_model!r}) but got {dim}-d ones; {hint}"
            )
