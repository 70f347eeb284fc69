"""Item 5: a tampered or broken checkpoint is refused, naming the file, before any allocation."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grapher_core.errors import CheckpointError
from grapher_core.learned.gat import checkpoint as checkpoint_module
from grapher_core.learned.gat.checkpoint import GAT

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray


def copy_of(architecture: str, tmp_path: Path) -> Path:
    stem = GAT.default_path(architecture)
    for suffix in (".json", ".safetensors"):
        shutil.copy(stem.with_name(stem.name + suffix), tmp_path / f"ck{suffix}")
    return tmp_path / "ck"


def set_model(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def tamper(config: dict[str, Any]) -> None:
        config["model"][field] = value

    return tamper


SIZES = {
    "hidden 20000": (set_model("hidden", 20_000), "hidden"),
    "layers 10**5": (set_model("layers", 10**5), "layers = 100000"),
    "layers 4": (set_model("layers", 4), "layers = 4"),
    "heads 50": (set_model("heads", 50), "heads"),
    "embedding_dim 4096": (set_model("embedding_dim", 4096), "embedding_dim"),
    "edge_dim 9": (set_model("edge_dim", 9), "edge_dim"),
}


@pytest.mark.parametrize("architecture", ["gat", "mlp"])
@pytest.mark.parametrize(("tamper", "message"), list(SIZES.values()), ids=list(SIZES))
def test_config_sizes_checked_against_tensors_before_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, architecture: str,
    tamper: Callable[[dict[str, Any]], None], message: str,
) -> None:  # fmt: skip
    stem = copy_of(architecture, tmp_path)
    meta = stem.with_suffix(".json")
    config = json.loads(meta.read_text())
    tamper(config)
    meta.write_text(json.dumps(config))

    def never(*args: object) -> None:
        pytest.fail("the model was built before the sizes were checked")

    monkeypatch.setattr(checkpoint_module, "GraphERNet", never)
    if architecture == "mlp" and message in ("heads", "edge_dim"):
        monkeypatch.undo()  # the MLP has no attention heads nor edge features: nothing to check
        GAT.load(stem)
        return
    with pytest.raises(CheckpointError, match=message) as caught:
        GAT.load(stem)
    assert str(meta) in str(caught.value)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:1000])


def _random(path: Path) -> None:
    path.write_bytes(b"\x07" * 4096)


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _header_lies(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes((10**12).to_bytes(8, "little") + data[8:])


def _bad_json_bytes(path: Path) -> None:
    path.with_suffix(".json").write_bytes(b"\xff\xfe{not json")


def _json_not_object(path: Path) -> None:
    path.with_suffix(".json").write_text("[1, 2]")


def _negative_layers(path: Path) -> None:
    meta = path.with_suffix(".json")
    config = json.loads(meta.read_text())
    config["model"]["layers"] = -1
    meta.write_text(json.dumps(config))


BROKEN = {"truncated weights": (_truncate, ".safetensors"),
          "random bytes": (_random, ".safetensors"),
          "empty weights": (_empty, ".safetensors"),
          "header size lies": (_header_lies, ".safetensors"),
          "config not UTF-8": (_bad_json_bytes, ".json"),
          "config not an object": (_json_not_object, ".json"),
          "negative layers": (_negative_layers, ".json")}  # fmt: skip


@pytest.mark.parametrize(("damage", "named"), list(BROKEN.values()), ids=list(BROKEN))
def test_broken_files_wrapped_with_the_path(
    tmp_path: Path, damage: Callable[[Path], None], named: str
) -> None:
    stem = copy_of("gat", tmp_path)
    damage(stem.with_suffix(".safetensors"))
    with pytest.raises(CheckpointError) as caught:
        GAT.load(stem)
    assert str(stem.with_suffix(named)) in str(caught.value)
