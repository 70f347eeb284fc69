"""The shared checkpoint validator and the safetensors header bounds (no torch needed): one
typed check for every config field, each tensor's bytes against its span of the file, and the
working memory of loading counted before anything is built."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from grapher_core.errors import CheckpointError
from grapher_core.learned.weights import (
    Rule,
    check_config,
    check_value,
    open_checkpoint,
    read_shapes,
)

W = "ck.json"


@pytest.mark.parametrize(
    ("kind", "value", "message"),
    [
        ("float", float("inf"), "x must be finite, got inf"),
        ("float", float("nan"), "x must be finite, got nan"),
        ("float", "0.5", "x must be a number, got '0.5'"),
        ("float", True, "x must be a number, got True"),
        ("int", 4.0, "x must be an integer, got 4.0"),
        ("int", False, "x must be a number, got False"),
        ("bool", "yes", r"x must be a JSON boolean \(true or false\), got 'yes'"),
        ("bool", 1, "x must be a JSON boolean"),
        ("str", 12, "x must be a string, got 12"),
        ("object", [], "x must be a JSON object, got"),
        ("[str]", "ab", "x must be a list, got 'ab'"),
        ("[float]", [1.0, float("inf")], r"x\[1\] must be finite"),
        ("[int]", [1, True], r"x\[1\] must be a number, got True"),
    ],
)
def test_each_kind_refuses_its_impostors_naming_file_and_key(
    kind: Any, value: Any, message: str
) -> None:
    with pytest.raises(CheckpointError, match=f"^{W}: {message}"):
        check_value(W, "x", value, kind=kind)


def test_each_kind_accepts_its_own() -> None:
    assert check_value(W, "x", 4, kind="float") == 4.0
    assert check_value(W, "x", 4, kind="int", low=1, high=4) == 4
    assert check_value(W, "x", False, kind="bool") is False
    assert check_value(W, "x", "m", kind="str") == "m"
    assert check_value(W, "x", [1, 2], kind="[float]") == [1.0, 2.0]
    assert check_value(W, "x", None, kind="float", optional=True) is None
    with pytest.raises(CheckpointError, match=r"x = 1.5 is outside \(0.0, 1.0\)"):
        check_value(W, "x", 1.5, low=0.0, high=1.0, open_low=True, open_high=True)


def test_check_config_follows_dotted_keys_and_leaves_absent_ones() -> None:
    rules = {"alpha": Rule("float", 0.0, 1.0), "model.residual": Rule("bool")}
    check_config(W, {"model": {}}, rules)
    check_config(W, {"model": "not an object"}, rules)  # the family's own check names it
    with pytest.raises(CheckpointError, match=f"^{W}: model.residual must be a JSON boolean"):
        check_config(W, {"alpha": 0.5, "model": {"residual": "yes"}}, rules)
    with pytest.raises(CheckpointError, match=f"^{W}: alpha = 2.0 is outside"):
        check_config(W, {"alpha": 2.0}, rules)


def test_a_string_outside_its_choices_is_refused_naming_them() -> None:
    rules = {"text": Rule("str", choices=("plain", "fast"))}
    check_config(W, {"text": "fast"}, rules)
    with pytest.raises(CheckpointError, match=rf"^{W}: text must be one of \('plain', 'fast'\)"):
        check_config(W, {"text": "words"}, rules)
    with pytest.raises(CheckpointError, match="got None"):
        check_config(W, {"text": None}, rules)


def _safetensors(path: Path, tensors: dict[str, dict[str, Any]], data: int) -> Path:
    header = json.dumps(tensors).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\x00" * data)
    return path


def test_a_shape_must_match_its_bytes_in_the_file(tmp_path: Path) -> None:
    fine = {"w": {"dtype": "F16", "shape": [2, 3], "data_offsets": [0, 12]}}
    assert read_shapes(_safetensors(tmp_path / "a.safetensors", fine, 12)) == {"w": (2, 3)}
    huge = {"w": {"dtype": "F32", "shape": [65536, 65536], "data_offsets": [0, 16]}}
    path = _safetensors(tmp_path / "b.safetensors", huge, 16)
    with pytest.raises(CheckpointError, match=r"tensor 'w' declares shape \(65536, 65536\) of F32"):
        read_shapes(path)
    odd = {"w": {"dtype": "F7", "shape": [1], "data_offsets": [0, 1]}}
    with pytest.raises(CheckpointError, match="bad shape, dtype or offsets"):
        read_shapes(_safetensors(tmp_path / "c.safetensors", odd, 1))


def test_loading_memory_is_counted_before_anything_is_built(tmp_path: Path) -> None:
    tensors = {"big": {"dtype": "F16", "shape": [500, 1000], "data_offsets": [0, 1_000_000]}}
    weights = _safetensors(tmp_path / "ck.safetensors", tensors, 1_000_000)
    (tmp_path / "ck.json").write_text("{}")
    # read 1 MB, built in float32 (2 MB) and converted to float32 (2 MB): 5 MB
    assert open_checkpoint(tmp_path / "ck", max_bytes=5_000_000).shapes == {"big": (500, 1000)}
    with pytest.raises(CheckpointError, match=r"loading needs about 5,000,000 bytes .*'big'") as e:
        open_checkpoint(tmp_path / "ck", max_bytes=4_999_999)
    assert str(weights) in str(e.value)
