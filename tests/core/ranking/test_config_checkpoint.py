"""A config's relative checkpoint path is read from the config's own folder, by every door (the
one loader), so a folder holding a config and its checkpoint can be moved or shared whole."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="needs the gat extra (torch)")

from grapher_core.errors import ConfigError
from grapher_core.learned.gat.checkpoint import GAT
from grapher_core.ranking.config import CONFIG_VERSION, load_config, write_config
from grapher_core.request.settings import RerankSettings


def _folder_with_checkpoint(root: Path) -> Path:
    folder = root / "model"
    (folder / "weights").mkdir(parents=True)
    stem = GAT.default_path("mlp")
    for suffix in (".safetensors", ".json"):
        shutil.copy(stem.with_suffix(suffix), folder / "weights" / f"mine{suffix}")
    return folder


def _config(checkpoint: str) -> dict[str, object]:
    return {
        "grapher_config": CONFIG_VERSION,
        "ranker": "mlp",
        "ranker_options": {"checkpoint": checkpoint},
    }


def test_relative_checkpoints_are_read_from_the_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder_with_checkpoint(tmp_path)
    original = _config("weights/mine")
    path = write_config(folder / "grapher_config.json", original)["ranker_options"]
    assert original["ranker_options"] == {"checkpoint": "weights/mine"}  # not mutated
    assert path["checkpoint"] == str(folder / "weights" / "mine")
    assert '"weights/mine"' in (folder / "grapher_config.json").read_text()  # written as given
    elsewhere = tmp_path / "deployed"
    folder.rename(elsewhere)
    monkeypatch.chdir(tmp_path)  # not the config's folder
    loaded = load_config(elsewhere / "grapher_config.json")
    assert loaded["ranker_options"]["checkpoint"] == str(elsewhere / "weights" / "mine")
    settings = RerankSettings.from_config(elsewhere / "grapher_config.json")
    assert settings.ranker_options["checkpoint"] == str(elsewhere / "weights" / "mine")


def test_absolute_checkpoints_stay_and_a_missing_one_names_the_key(tmp_path: Path) -> None:
    folder = _folder_with_checkpoint(tmp_path)
    absolute = str(folder / "weights" / "mine")
    loaded = write_config(tmp_path / "absolute.json", _config(absolute))
    assert loaded["ranker_options"]["checkpoint"] == absolute
    with pytest.raises(ConfigError, match="ranker_options") as caught:
        write_config(tmp_path / "relative.json", _config("weights/mine"))  # not beside it
    assert str(tmp_path / "weights" / "mine") in str(caught.value)
    assert not (tmp_path / "relative.json").exists()
