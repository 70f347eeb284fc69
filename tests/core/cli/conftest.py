"""The CLI tests' embedding model: a bag-of-words hashing model patched in as the default
embedder, so a question's words decide the retriever's order exactly and nothing loads torch."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_hash_embedder import HashEmbedder

__all__ = ["HashEmbedder", "embedder"]


@pytest.fixture
def embedder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> HashEmbedder:
    """The hashing model as the CLI's default embedder; the cache in this test's folder."""
    fake = HashEmbedder()
    monkeypatch.setattr("grapher_core.embeddings.default_embedder", lambda: fake)
    monkeypatch.setenv("GRAPHER_CACHE", str(tmp_path / "cache"))
    return fake
