"""A key that cannot be sent (empty, blank, with a line break or a non-ASCII character) is
refused when the client is made, naming the option, instead of failing every request as a
connection error that is retried for half a minute; 401 and 403 are never retried."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from enrich_fault_server import FaultServer

from grapher_core.cli import main
from grapher_core.enrich.llm import (
    ExtractorConfigError,
    OpenAIEntityExtractor,
    check_api_key,
)
from grapher_core.errors import ConfigError

Server = Callable[..., FaultServer]
BAD_KEYS = ["", " ", "\t\n", "sk-abc\n", " sk-abc", "sk abc", "sk-\u00e9t\u00e9", "sk-\x00"]
SECRET = "sk-secret-part"


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
def test_the_extractor_refuses_a_key_it_could_not_send(key: str) -> None:
    started = time.perf_counter()
    with pytest.raises(ConfigError, match="api_key"):
        OpenAIEntityExtractor("m", base_url="http://127.0.0.1:9/v1", api_key=key)
    assert time.perf_counter() - started < 1.0


def test_the_message_never_shows_the_key() -> None:
    with pytest.raises(ConfigError) as error:
        check_api_key(SECRET + "\n", "--api-key")
    assert SECRET not in str(error.value) and "--api-key" in str(error.value)


@pytest.mark.parametrize("value", [" ", "sk-1 2"], ids=repr)
def test_a_blank_or_garbled_environment_key_is_named(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", value)
    with pytest.raises(ConfigError, match=r"\$OPENAI_API_KEY"):
        OpenAIEntityExtractor("m", base_url="http://127.0.0.1:9/v1")


def test_an_empty_environment_key_means_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "")
    assert OpenAIEntityExtractor("m", base_url="http://127.0.0.1:9/v1").model == "m"


@pytest.mark.parametrize("key", ["", "   ", "k\ney"], ids=repr)
def test_grapher_enrich_refuses_the_key_before_reading_the_corpus(
    key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.perf_counter()
    argv = [
        "enrich",
        "--input",
        str(tmp_path / "missing.jsonl"),  # never opened: the key is checked first
        "--output",
        str(tmp_path / "out.jsonl"),
        "--extractor",
        "openai",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--api-key",
        key,
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--api-key" in err and "missing.jsonl" not in err and err.count("\n") == 1
    assert time.perf_counter() - started < 5.0


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_stop_at_the_first_answer(fault_server: Server, status: int) -> None:
    pytest.importorskip("openai", reason="needs the llm extra (openai)")
    server = fault_server(fixed_status=status)
    extractor = OpenAIEntityExtractor(
        "m", base_url=server.base_url, api_key="sk-wrong", max_retries=5, backoff_base=0.5
    )
    started = time.perf_counter()
    with pytest.raises(ExtractorConfigError, match=f"HTTP {status}"):
        extractor.extract_batch(["Paris is in France."])
    assert server.stats.requests == 1  # not retried
    assert time.perf_counter() - started < 5.0
