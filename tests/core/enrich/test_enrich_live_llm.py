"""Opt-in: the LLM extractor against a real model behind an OpenAI-compatible server.

Skipped unless ``GRAPHER_LLM_BASE_URL`` names a server (e.g. llama.cpp serving SmolLM2, see
docs/enrichment.md); ``GRAPHER_LLM_MODEL`` names the model (default "local"). It compares the
paper's prompt (a11) with the chat variant (a11-chat + a JSON-list constraint) on real passages
and reports how often each copies the prompt's example entities. ``GRAPHER_LLM_N`` (default 10)
passages; ``GRAPHER_LLM_RESPONSE_FORMAT`` = json_object (llama-cpp-python, default) or json_schema
(llama-server, vLLM).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from grapher_core.enrich import OpenAIEntityExtractor, run_extraction
from grapher_core.metadata import normalise_entity

BASE_URL = os.environ.get("GRAPHER_LLM_BASE_URL")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not BASE_URL, reason="set GRAPHER_LLM_BASE_URL to a chat-completions server"
    ),
]


def test_real_model_prompt_versions(hotpot_slice: Callable[[int], Path]) -> None:
    n = int(os.environ.get("GRAPHER_LLM_N", "10"))
    texts = [json.loads(line)["text"] for line in hotpot_slice(n).read_text().splitlines()]
    model = os.environ.get("GRAPHER_LLM_MODEL", "local")
    report: dict[str, dict[str, float]] = {}
    schema_format = os.environ.get("GRAPHER_LLM_RESPONSE_FORMAT", "json_object")
    for version, schema in (("a11", None), ("a11-chat", schema_format)):
        extractor = OpenAIEntityExtractor(
            model, base_url=BASE_URL, prompt_version=version, response_format=schema,
            concurrency=2, timeout=120, max_output_tokens=256, max_retries=1,
        )  # fmt: skip
        run = run_extraction(texts, extractor)
        ok = [r for r in run.results if r.entities is not None]
        grounded = sum(
            normalise_entity(e) in normalise_entity(t)
            for r, t in zip(run.results, texts, strict=True)
            for e in (r.entities or [])
        )
        total = sum(len(r.entities or []) for r in run.results)
        report[version] = {
            "parsed": len(ok) / len(texts),
            "copied_example": sum(bool(r.flags) for r in run.results) / len(texts),
            "grounded": grounded / max(total, 1),
        }
    print(json.dumps(report, indent=2))
    assert report["a11-chat"]["parsed"] >= 0.8
    assert report["a11-chat"]["copied_example"] <= report["a11"]["copied_example"]
