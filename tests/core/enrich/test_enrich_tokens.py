"""Token counting works offline with tiktoken, and degrades to an approximation without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grapher_core.enrich import tokens
from grapher_core.enrich.tokens import (
    ApproximateCounter,
    estimate_cost,
    get_token_counter,
    offline_tiktoken_dir,
)


def test_offline_tiktoken_loads_exact_encoding() -> None:
    if offline_tiktoken_dir() is None:
        pytest.skip("llama-index-core's bundled tiktoken cache is not installed")
    get_token_counter.cache_clear()
    counter = get_token_counter("gpt-4o-mini")
    assert counter.exact and counter.name == "o200k_base"
    assert counter.count("hello world") == 2
    assert counter.truncate("one two three four five", 2) == "one two"
    assert get_token_counter(encoding="cl100k_base").name == "cl100k_base"


def test_unknown_model_falls_back_to_a_local_encoding() -> None:
    counter = get_token_counter("some-local-gguf-model")
    assert counter.count("hello world") >= 2


def test_degrades_when_no_encoding_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    def refuse(name: str) -> None:
        raise ConnectionError(f"cannot download {name}")

    get_token_counter.cache_clear()
    monkeypatch.setattr(tiktoken, "get_encoding", refuse)
    try:
        counter = get_token_counter("gpt-4o")
        assert isinstance(counter, ApproximateCounter) and not counter.exact
        assert counter.count("abcdefgh") == 2
        assert counter.truncate("x" * 100, 5) == "x" * 20
        estimate = estimate_cost(["abcd" * 10], counter)
        assert not estimate.exact and "approximate" in estimate.describe()
    finally:
        get_token_counter.cache_clear()


def test_the_users_environment_is_left_as_it_was() -> None:
    """The shipped cache is used while an encoding loads; TIKTOKEN_CACHE_DIR is not left set."""
    if offline_tiktoken_dir() is None:
        pytest.skip("llama-index-core's bundled tiktoken cache is not installed")
    code = (
        "import os; from grapher_core.enrich.tokens import get_token_counter as g;"
        "c = g(encoding='cl100k_base'); print(c.name, c.exact, "
        "os.environ.get('TIKTOKEN_CACHE_DIR', 'unset'))"
    )
    env = {"PATH": "", "HOME": "/nonexistent",
           "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["cl100k_base", "True", "unset"]


def test_degrades_in_a_fresh_process_with_an_empty_cache(tmp_path: Path) -> None:
    """A real interpreter, tiktoken pointed at an empty cache and no network: no crash."""
    code = (
        "from grapher_core.enrich.tokens import get_token_counter as g;"
        "c = g('gpt-4o'); print(c.name, c.exact, c.count('hello world'))"
    )
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path), "PATH": "", "HOME": str(tmp_path),
           "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["approx-4-chars", "False", "3"]


def test_without_tiktoken_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    get_token_counter.cache_clear()
    try:
        assert isinstance(tokens.get_token_counter("gpt-4o"), ApproximateCounter)
    finally:
        get_token_counter.cache_clear()


def test_estimate_validates() -> None:
    with pytest.raises(ValueError, match="output_tokens_per_object"):
        estimate_cost(["x"], ApproximateCounter(), output_tokens_per_object=-1)
    assert estimate_cost(["x"], ApproximateCounter()).cost is None
