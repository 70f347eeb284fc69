"""Checkpoint files any learned ranker can use: tensors in safetensors, meaning in JSON.

``<stem>.safetensors`` holds tensors only (no pickle, nothing executed on load); ``<stem>.json``
holds the config that says what they mean. A model family keeps its own config schema and calls
:func:`write_weights` to save. Loading goes in this order, so a tampered config allocates
nothing: :func:`open_checkpoint` reads the JSON and only the safetensors *header* (names and
shapes, each tensor's bytes checked against its span of the file, and the working memory of
loading counted against :data:`MAX_CHECKPOINT_BYTES`); the family checks every config field
against its table of kinds (:func:`check_config`: a float finite and in range, a boolean a
JSON boolean, a string a string, an integer an int, never a bool) and its sizes
(:func:`check_spec_sizes`), then compares them with the header's shapes (:func:`check_sizes`);
only then :func:`load_tensors` reads the tensors and :func:`load_state` puts them into the
freshly built model, every name and shape checked again. Every refusal is a
:class:`~grapher_core.errors.CheckpointError` naming the file and the field.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from grapher_core.errors import CheckpointError, InputFileNotFoundError

__all__ = [
    "MAX_CHECKPOINT_BYTES",
    "MAX_LAYERS",
    "MAX_SIZE",
    "Checkpoint",
    "Kind",
    "Rule",
    "check_config",
    "check_sizes",
    "check_spec_sizes",
    "check_value",
    "checkpoint_paths",
    "load_state",
    "load_tensors",
    "open_checkpoint",
    "read_shapes",
    "read_weights",
    "write_weights",
]

#: Largest size (width, dimension, heads) a checkpoint config may declare: far above any model
#: here (384-d MiniLM, hidden 256), far below one that would allocate gigabytes per layer.
MAX_SIZE = 1 << 16
#: Most layers a checkpoint config may declare (models here use 2 to 5).
MAX_LAYERS = 64
#: Largest safetensors header read (names, dtypes, shapes, offsets: kilobytes in practice).
MAX_HEADER_BYTES = 64 << 20
#: Most bytes loading one checkpoint may hold: the tensors as read, the model built from the
#: config in float32 and one float32 copy of each tensor (fp16 weights are converted). The
#: shipped checkpoints need under 20 MB.
MAX_CHECKPOINT_BYTES = 4 << 30
#: Bytes per element of each safetensors dtype (any other dtype is refused).
_ITEMSIZE = {
    **dict.fromkeys(("BOOL", "U8", "I8", "F8_E4M3", "F8_E5M2"), 1),
    **dict.fromkeys(("U16", "I16", "F16", "BF16"), 2),
    **dict.fromkeys(("U32", "I32", "F32"), 4),
    **dict.fromkeys(("U64", "I64", "F64"), 8),
}


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


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint opened without loading its tensors: the JSON config and the shapes."""

    weights: Path
    meta: Path
    config: dict[str, Any]
    shapes: dict[str, tuple[int, ...]]


def open_checkpoint(path: str | Path, *, max_bytes: int = MAX_CHECKPOINT_BYTES) -> Checkpoint:
    """Both files checked and read, the tensors' shapes from the safetensors header only, and
    what loading them will hold counted against ``max_bytes`` before anything is built."""
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
    shapes, dtypes = _read_header(weights)
    sizes = {name: math.prod(shape) for name, shape in shapes.items()}
    read = sum(n * _ITEMSIZE[dtypes[name]] for name, n in sizes.items())
    needed = read + 2 * 4 * sum(sizes.values())  # + the model's float32 copy + one conversion
    if needed > max_bytes:
        largest = max(sizes, key=lambda name: sizes[name])
        raise CheckpointError(
            f"{weights}: loading needs about {needed:,} bytes (the tensors read, built and "
            f"converted to float32; the largest, {largest!r}, of shape {shapes[largest]}), more "
            f"than the cap of {max_bytes:,} (MAX_CHECKPOINT_BYTES)"
        )
    return Checkpoint(weights, meta, config, shapes)


def read_shapes(weights: Path) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape from a safetensors header (8-byte length, JSON), no tensor read;
    refuses a header that is not one, or whose tensors would not fit in the file."""
    return _read_header(weights)[0]


def _read_header(weights: Path) -> tuple[dict[str, tuple[int, ...]], dict[str, str]]:
    """Shapes and dtypes of a safetensors header; each tensor's bytes (shape x dtype) must
    equal its span of the file, so a shape can never declare more than the file holds."""
    try:
        size = weights.stat().st_size
        with weights.open("rb") as handle:
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise CheckpointError(f"{weights}: not a safetensors file (shorter than 8 bytes)")
            (length,) = struct.unpack("<Q", prefix)
            if length > min(size - 8, MAX_HEADER_BYTES):
                raise CheckpointError(
                    f"{weights}: not a readable safetensors file (the header claims {length:,} "
                    f"bytes, the file has {size:,})"
                )
            header = json.loads(handle.read(length).decode("utf-8"))
    except CheckpointError:
        raise
    except (OSError, ValueError, RecursionError) as error:
        raise CheckpointError(
            f"{weights}: not a readable safetensors file ({type(error).__name__}: {error})"
        ) from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{weights}: not a readable safetensors file (header not an object)")
    shapes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, str] = {}
    data_size = size - 8 - length
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = entry.get("shape") if isinstance(entry, dict) else None
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        dtype = entry.get("dtype") if isinstance(entry, dict) else None
        if (
            not isinstance(shape, list)
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
            or not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) and 0 <= o <= data_size for o in offsets)
            or not isinstance(dtype, str)
            or dtype not in _ITEMSIZE
        ):
            raise CheckpointError(
                f"{weights}: not a readable safetensors file (tensor {name!r}: bad shape, "
                "dtype or offsets)"
            )
        span = offsets[1] - offsets[0]
        if math.prod(shape) * _ITEMSIZE[dtype] != span:
            raise CheckpointError(
                f"{weights}: tensor {name!r} declares shape {tuple(shape)} of {dtype} "
                f"({math.prod(shape) * _ITEMSIZE[dtype]:,} bytes) but spans {span:,} bytes"
            )
        shapes[name], dtypes[name] = tuple(shape), dtype
    return shapes, dtypes


def load_tensors(checkpoint: Checkpoint, device: str = "cpu") -> dict[str, Any]:
    """The tensors, read once every check on the config and the header has passed."""
    from safetensors.torch import load_file

    try:
        return load_file(str(checkpoint.weights), device=device)
    except Exception as error:  # safetensors raises its own, OS and value errors: name the file
        raise CheckpointError(
            f"{checkpoint.weights}: not a readable safetensors file "
            f"({type(error).__name__}: {error})"
        ) from error


def read_weights(path: str | Path, device: str = "cpu") -> tuple[dict[str, Any], dict[str, Any]]:
    """``(tensors, config)`` of a checkpoint; the config must be a JSON object. Loaders that
    build a model from the config use :func:`open_checkpoint` and check it first."""
    checkpoint = open_checkpoint(path)
    return load_tensors(checkpoint, device), checkpoint.config


Kind = Literal["bool", "int", "float", "str", "object", "[int]", "[float]", "[str]"]
"""A JSON kind a config field must be: ``"[int]"`` is a list of ints, and so on."""


@dataclass(frozen=True)
class Rule:
    """What one config field must be (:func:`check_config`): its kind, numbers' bounds, the
    values a string may take, and whether JSON ``null`` is accepted."""

    kind: Kind
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    optional: bool = False
    choices: tuple[str, ...] | None = None


def check_config(where: str, data: Mapping[str, Any], rules: Mapping[str, Rule]) -> None:
    """Every field of ``rules`` present in ``data`` checked by :func:`check_value`; a dotted
    name (``"model.prior_init"``) is a field of a nested object. Absent fields are left to
    the family's defaults and required-field checks."""
    for name, rule in rules.items():
        *parents, key = name.split(".")
        holder: Any = data
        for parent in parents:
            holder = holder.get(parent) if isinstance(holder, Mapping) else None
        if isinstance(holder, Mapping) and key in holder:
            check_value(
                where, name, holder[key], kind=rule.kind, low=rule.low, high=rule.high,
                open_low=rule.open_low, open_high=rule.open_high, optional=rule.optional,
                choices=rule.choices,
            )  # fmt: skip


_KIND_NAMES = {"bool": "a JSON boolean (true or false)", "str": "a string",
               "object": "a JSON object"}  # fmt: skip
_KIND_TYPES: dict[str, type] = {"bool": bool, "str": str, "object": dict}


def check_value(
    where: str,
    name: str,
    value: Any,
    *,
    kind: Kind = "float",
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
    optional: bool = False,
    choices: tuple[str, ...] | None = None,
) -> Any:
    """``value`` checked to be of ``kind`` -- an ``int`` (never a bool), a finite number
    (``float``) within the bounds, a real JSON boolean, string or object, or a list of one of
    these -- else a :class:`~grapher_core.errors.CheckpointError` naming ``where`` and the
    field ``name``. ``optional`` accepts ``None``; ``choices``: the values a string may take.
    Numbers come back as ``int`` / ``float``."""
    if value is None and optional:
        return None
    if choices is not None and value not in choices:
        raise CheckpointError(f"{where}: {name} must be one of {choices}, got {value!r:.80}")
    if kind.startswith("["):
        if not isinstance(value, list):
            raise CheckpointError(f"{where}: {name} must be a list, got {value!r:.80}")
        item = cast(Kind, kind[1:-1])
        return [
            check_value(where, f"{name}[{i}]", v, kind=item, low=low, high=high,
                        open_low=open_low, open_high=open_high)
            for i, v in enumerate(value)
        ]  # fmt: skip
    if kind in _KIND_TYPES:
        if not isinstance(value, _KIND_TYPES[kind]):
            raise CheckpointError(f"{where}: {name} must be {_KIND_NAMES[kind]}, got {value!r:.80}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CheckpointError(f"{where}: {name} must be a number, got {value!r:.80}")
    if kind == "int" and not isinstance(value, int):
        raise CheckpointError(f"{where}: {name} must be an integer, got {value!r}")
    if not math.isfinite(value):
        raise CheckpointError(f"{where}: {name} must be finite, got {value!r}")
    below = low is not None and (value <= low if open_low else value < low)
    above = high is not None and (value >= high if open_high else value > high)
    if below or above:
        left = "(" if open_low else "["
        right = ")" if open_high else "]"
        span = f"{left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
        raise CheckpointError(f"{where}: {name} = {value!r} is outside {span}")
    return int(value) if kind == "int" else float(value)


def check_spec_sizes(
    where: str,
    spec: Any,
    sizes: Iterable[str],
    *,
    layers: Iterable[str] = ("layers",),
    prefix: str = "model",
) -> None:
    """Every size field of a spec mapping (before the spec is built) a positive integer of at
    most :data:`MAX_SIZE`, layer counts at most :data:`MAX_LAYERS`; lists of sizes included."""
    if not isinstance(spec, Mapping):
        raise CheckpointError(f"{where}: {prefix} must be a JSON object, got {spec!r}")
    for name in (*sizes, *layers):
        if name not in spec:
            continue
        top = MAX_LAYERS if name in layers else MAX_SIZE
        value = spec[name]
        if isinstance(value, list):
            if not value or len(value) > MAX_LAYERS:
                raise CheckpointError(
                    f"{where}: {prefix}.{name} must list 1 to {MAX_LAYERS} sizes, got {value!r}"
                )
            for i, item in enumerate(value):
                check_value(where, f"{prefix}.{name}[{i}]", item, kind="int", low=1, high=top)
        else:
            check_value(where, f"{prefix}.{name}", value, kind="int", low=1, high=top)


def check_sizes(
    shapes: Mapping[str, tuple[int, ...]],
    expected: Mapping[str, tuple[tuple[int, ...] | None, str]],
    where: str,
    *,
    layers: Mapping[str, tuple[int, str]] | None = None,
) -> None:
    """Refuse a config whose sizes disagree with the weights' shapes, before building a model.

    ``expected``: tensor name -> (shape the config implies, or ``None`` for "must be absent";
    the config fields it comes from). ``layers``: name prefix -> (how many distinct indices
    follow it, the field): ``{"convs.": (5, "layers")}``. The network is built from the JSON,
    so without this a tampered ``hidden=40000`` allocates gigabytes and ``layers=100000``
    builds modules for minutes before any tensor is compared.
    """
    for name, (shape, fields) in expected.items():
        actual = shapes.get(name)
        if actual != shape:
            held = "no such tensor" if actual is None else f"{name} of shape {actual}"
            raise CheckpointError(
                f"{where}: model {fields} = {shape} in the config, but the weights hold {held}"
                if shape is not None
                else f"{where}: the config's {fields} has no {name}, but the weights hold one"
            )
    for prefix, (count, field) in (layers or {}).items():
        indices = {key[len(prefix) :].split(".", 1)[0] for key in shapes if key.startswith(prefix)}
        if len(indices) != count:
            raise CheckpointError(
                f"{where}: model {field} = {count} in the config, but the weights hold "
                f"{len(indices)} {field}"
            )


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
