"""Token counting works offline with tiktoken, and degrades to an approximation without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers_tiktoken import bundled_tiktoken_cache

from grapher_core.enrich import tokens
from grapher_core.enrich.tokens import (
    ApproximateCounter,
    estimate_cost,
    get_token_counter,
    tiktoken_cache_dir,
)

# No network for the subprocesses: a download attempt fails at once instead of hanging.
NO_NETWORK = {"PATH": "", "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}


@pytest.fixture
def bundled() -> Path:
    """A folder holding tiktoken's files (llama-index-core's copy; tests may use frameworks)."""
    pytest.importorskip("tiktoken")
    found = bundled_tiktoken_cache()
    if found is None:
        pytest.skip("no tiktoken files at hand (llama-index-core not installed)")
    return found


def test_offline_tiktoken_loads_exact_encoding(
    bundled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(bundled))
    get_token_counter.cache_clear()
    try:
        counter = get_token_counter("gpt-4o-mini")
        assert counter.exact and counter.name == "o200k_base"
        assert counter.count("hello world") == 2
        assert counter.truncate("one two three four five", 2) == "one two"
        assert get_token_counter(encoding="cl100k_base").name == "cl100k_base"
    finally:
        get_token_counter.cache_clear()


def test_cache_dir_is_tiktoken_s_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The order tiktoken's loader uses: TIKTOKEN_CACHE_DIR, DATA_GYM_CACHE_DIR, temp dir."""
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # re-read TMPDIR
    assert tiktoken_cache_dir() == tmp_path / "data-gym-cache"
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path / "gym"))
    assert tiktoken_cache_dir() == tmp_path / "gym"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tik"))
    assert tiktoken_cache_dir() == tmp_path / "tik"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert tiktoken_cache_dir() is None  # tiktoken's cache turned off


def test_unknown_model_falls_back_to_a_local_encoding() -> None:
    counter = get_token_counter("some-local-gguf-model")
    assert counter.count("hello world") >= 2


def test_degrades_when_no_encoding_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    tiktoken = pytest.importorskip("tiktoken")

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


def test_the_cache_dir_is_read_and_the_environment_left_as_it_was(
    bundled: Path, tmp_path: Path
) -> None:
    """A fresh process: exact with TIKTOKEN_CACHE_DIR set, the variable untouched either way,
    and with it unset (an empty temp dir, no network) the approximation, not a failure."""
    code = (
        "import os; from grapher_core.enrich.tokens import get_token_counter as g;"
        "c = g(encoding='cl100k_base'); print(c.name, c.exact, "
        "os.environ.get('TIKTOKEN_CACHE_DIR', 'unset'))"
    )

    def run(**env: str) -> list[str]:
        result = subprocess.run(
            [sys.executable, "-c", code],
            env={**NO_NETWORK, "HOME": str(tmp_path), "TMPDIR": str(tmp_path), **env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.split()

    assert run(TIKTOKEN_CACHE_DIR=str(bundled)) == ["cl100k_base", "True", str(bundled)]
    assert run() == ["approx-4-chars", "False", "unset"]


def test_degrades_in_a_fresh_process_with_an_empty_cache(tmp_path: Path) -> None:
    """A real interpreter, tiktoken pointed at an empty cache and no network: no crash."""
    code = (
        "from grapher_core.enrich.tokens import get_token_counter as g;"
        "c = g('gpt-4o'); print(c.name, c.exact, c.count('hello world'))"
    )
    env = {**NO_NETWORK, "TIKTOKEN_CACHE_DIR": str(tmp_path), "HOME": str(tmp_path)}
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
