"""One cache folder: $GRAPHER_CACHE, the deprecated $GRAPHER_CACHE_DIR with a warning, XDG."""

from __future__ import annotations

from pathlib import Path

import pytest

import grapher_core.utils.paths as paths
from grapher_core.cli.enrich import default_cache_path


def test_grapher_cache_wins_and_is_shared_by_enrich(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHER_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("GRAPHER_CACHE_DIR", str(tmp_path / "old"))
    assert paths.cache_root() == tmp_path / "c" and (tmp_path / "c").is_dir()
    assert default_cache_path() == tmp_path / "c" / "entities.sqlite"


def test_deprecated_variable_still_works_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GRAPHER_CACHE", raising=False)
    monkeypatch.setenv("GRAPHER_CACHE_DIR", str(tmp_path / "old"))
    monkeypatch.setattr(paths, "_warned", type(paths._warned)())
    with pytest.warns(DeprecationWarning, match="GRAPHER_CACHE"):
        assert paths.cache_root(create=False) == tmp_path / "old"
    assert not (tmp_path / "old").exists()


def test_default_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GRAPHER_CACHE", "GRAPHER_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert paths.cache_root(create=False) == tmp_path / "grapher"
