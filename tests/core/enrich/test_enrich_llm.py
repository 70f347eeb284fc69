"""The LLM extractor against a real chat-completions server on 127.0.0.1 (the real openai client).

Delays, backoffs and retry counts are kept small so the whole file runs in seconds.
"""

from __future__ import annotations

import asyncio
import pickle
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from enrich_fault_server import FaultServer, fake_entities
from helpers_extras import needs

from grapher_core import CorpusObject
from grapher_core.enrich import (
    EntityCache,
    OpenAIEntityExtractor,
    aenrich_objects,
    aextract_entities,
    cache_key,
    enrich_objects,
    extract_entities,
    run_extraction,
)
from grapher_core.enrich.llm import (
    A11_TEMPLATE,
    PROMPTS,
    ExtractorConfigError,
    copied_example_entities,
)

Server = Callable[..., FaultServer]
TEXTS = [f"Passage {i}: Alice Smith met Bob Jones {i} times in Paris" for i in range(40)]


def make(server: FaultServer, **options: object) -> OpenAIEntityExtractor:
    defaults: dict[str, object] = {
        "base_url": server.base_url,
        "concurrency": 8,
        "max_retries": 4,
        "backoff_base": 0.01,
        "backoff_max": 0.2,
        "timeout": 5.0,
    }
    defaults.update(options)
    return OpenAIEntityExtractor("fake-model", **defaults)  # type: ignore[arg-type]


def test_clean_server_gives_every_answer(fault_server: Server) -> None:
    server = fault_server()
    out = extract_entities(TEXTS, make(server))
    assert out == [fake_entities(text) for text in TEXTS]
    assert server.stats.requests == len(TEXTS)


def test_prompt_a11_is_the_papers(fault_server: Server) -> None:
    extractor = make(fault_server())
    (message,) = extractor.prepare("Some text")
    assert message["role"] == "user"
    assert message["content"] == A11_TEMPLATE.replace("{content}", "Some text")
    assert message["content"].startswith("Identify the key entities (people, organizations")
    chat = make(fault_server(), prompt_version="a11-chat")
    roles = [m["role"] for m in chat.prepare("Some text")]
    assert roles == ["system", "user", "assistant", "user"]
    assert chat.version != extractor.version
    assert set(PROMPTS) >= {"a11", "a11-chat"}


def test_prose_and_fences_are_read(fault_server: Server) -> None:
    server = fault_server(rate_prose=0.5, rate_fence=0.5)
    assert extract_entities(TEXTS[:10], make(server)) == [fake_entities(t) for t in TEXTS[:10]]


def test_malformed_answers_fail_alone(fault_server: Server, tmp_path: Path) -> None:
    server = fault_server(rate_malformed=0.3, seed=3)
    with EntityCache(tmp_path / "c.sqlite") as cache:
        run = run_extraction(TEXTS, make(server), cache=cache)
        failed = run.failed_positions
        assert 0 < len(failed) < len(TEXTS)
        for position, result in enumerate(run.results):
            if position in failed:
                assert result.error is not None and "unparseable answer" in result.error
            else:
                assert result.entities == fake_entities(TEXTS[position])
        assert len(cache.failed(cache_key(make(server)))) == len(failed)


def test_429_with_retry_after_and_500_are_retried(fault_server: Server) -> None:
    server = fault_server(rate_429=0.25, rate_500=0.25, retry_after=0.05, seed=1)
    started = time.perf_counter()
    # Which text gets which fault depends on request order (threads), so a text can draw many
    # faults in a row: with 10 retries, 40 texts give up together about 2% of runs (0.5^11 each);
    # 40 retries make that 1e-11. A long client timeout keeps a request slowed by a loaded
    # machine from being retried, which would add a request the status counts do not explain.
    out = extract_entities(TEXTS, make(server, max_retries=40, timeout=120.0))
    assert out == [fake_entities(text) for text in TEXTS]
    assert server.stats.statuses[429] > 0 and server.stats.statuses[500] > 0
    assert (
        server.stats.requests
        == len(TEXTS) + server.stats.statuses[429] + server.stats.statuses[500]
    )
    assert time.perf_counter() - started >= 0.05  # Retry-After was waited for


def test_retry_after_is_honoured() -> None:
    """The wait the openai client asks for before a retry is ours: its Retry-After (header
    parsing is the client's), bounded by backoff_max, else backoff with jitter."""
    needs("llm", "openai")
    extractor = OpenAIEntityExtractor(
        "m", base_url="http://127.0.0.1:9/v1", backoff_max=10, max_retries=6
    )
    client = extractor._async_client()

    def wait(headers: dict[str, str], attempt: int = 0) -> float:
        return float(client._calculate_retry_timeout(6 - attempt, None, headers))

    try:
        assert 2.0 <= wait({"retry-after": "2"}) <= 2.2
        assert 0.3 <= wait({"retry-after-ms": "300"}) <= 0.5
        assert 10.0 <= wait({"retry-after": "600"}) <= 10.2  # bounded by backoff_max
        delays = [wait({}, attempt=3) for _ in range(50)]
        assert all(2.0 <= d <= 4.0 for d in delays) and len(set(delays)) > 1  # jitter
    finally:
        asyncio.run(client.close())


def test_the_clients_retries_wait_our_backoff(fault_server: Server) -> None:
    """max_retries is the client's retry budget, and its waits are backoff_base/backoff_max
    (the client's own steps, 0.5 s then 1 s then 2 s, would take 2.6 s or more here)."""
    server = fault_server(fixed_status=500)
    started = time.perf_counter()
    (result,) = run_extraction(TEXTS[:1], make(server, max_retries=3, backoff_max=0.02)).results
    assert time.perf_counter() - started < 2.0
    assert server.stats.requests == 4
    assert result.error == "gave up after 4 attempts (last: HTTP 500)"


def test_a_servers_retry_after_is_waited_for(fault_server: Server) -> None:
    server = fault_server(rate_429=1.0, retry_after=0.3)
    started = time.perf_counter()
    (result,) = run_extraction(TEXTS[:1], make(server, max_retries=2, backoff_max=10)).results
    assert time.perf_counter() - started >= 0.6  # two waits of the server's 0.3 s
    assert server.stats.requests == 3
    assert result.error == "gave up after 3 attempts (last: HTTP 429)"
    server.reset_stats()
    (result,) = run_extraction(TEXTS[:1], make(server, max_retries=0)).results
    assert server.stats.requests == 1
    assert result.error == "gave up after 1 attempt (last: HTTP 429)"


def test_timeouts_are_retried(fault_server: Server) -> None:
    server = fault_server(rate_hang=0.3, hang_seconds=1.5, seed=2)
    out = extract_entities(TEXTS[:12], make(server, timeout=0.5, max_retries=6))
    assert out == [fake_entities(t) for t in TEXTS[:12]]
    assert server.stats.requests > 12


def test_permanent_failures_are_listed_then_retried_alone(
    fault_server: Server, tmp_path: Path
) -> None:
    bad = {TEXTS[3], TEXTS[17]}
    server = fault_server(fail_texts=frozenset(bad))
    with EntityCache(tmp_path / "c.sqlite") as cache:
        objects = [CorpusObject(f"o{i}", text) for i, text in enumerate(TEXTS)]
        report = asyncio.run(aenrich_objects(objects, make(server, max_retries=2), cache=cache))
        assert sorted(report.failed) == ["o17", "o3"]
        assert "gave up after 3 attempts (last: HTTP 500)" in report.errors["o3"]
        assert "entities" not in report.objects[3].metadata
        assert len(report.objects) == len(objects)  # nothing lost
        server.config.fail_texts = frozenset()
        server.reset_stats()
        again = asyncio.run(aenrich_objects(objects, make(server), cache=cache))
        assert again.failed == [] and server.stats.requests == 2  # only the failed ones
        assert set(server.stats.answered) == bad
        assert again.objects[3].metadata["entities"] == fake_entities(TEXTS[3])


def test_twenty_percent_failures_nothing_lost(fault_server: Server, tmp_path: Path) -> None:
    """Done-when: 20 % of requests fail -> every object is enriched or listed, none lost."""
    server = fault_server(rate_500=0.1, rate_429=0.05, rate_malformed=0.05, retry_after=0.01)
    texts = [f"Object {i} about Rome and Anna Berg, item {i}" for i in range(120)]
    objects = [CorpusObject(f"id{i}", t, {"n": i}) for i, t in enumerate(texts)]
    with EntityCache(tmp_path / "c") as cache:
        report = enrich_objects(objects, make(server, max_retries=1), cache=cache)
    assert [o.id for o in report.objects] == [o.id for o in objects]
    enriched = {o.id for o in report.objects if "entities" in o.metadata}
    assert enriched.isdisjoint(report.failed)
    assert enriched | set(report.failed) == {o.id for o in objects}
    assert 0 < len(report.failed) < 40
    for obj in report.objects:
        if obj.id in enriched:
            assert obj.metadata["entities"] == fake_entities(obj.text)


def test_config_errors_stop_the_run(fault_server: Server, tmp_path: Path) -> None:
    server = fault_server(fixed_status=401)
    with (
        EntityCache(tmp_path / "c") as cache,
        pytest.raises(ExtractorConfigError, match="HTTP 401"),
    ):
        extract_entities(TEXTS, make(server), cache=cache)
    assert server.stats.requests <= 8  # stopped, did not walk the corpus
    server.config.fixed_status = 400
    out = extract_entities(TEXTS[:3], make(server))
    assert out == [None, None, None]  # a 400 fails its object only


def test_example_copies_detected_and_dropped(fault_server: Server) -> None:
    server = fault_server(echo_example=True)
    texts = ["Marie Curie worked in Paris", "Barack Obama visited Berlin"]
    run = run_extraction(texts, make(server))
    first, second = run.results
    assert first.entities == ["Marie Curie", "Paris"]
    assert set(first.flags) == {"example_copy:Barack Obama", "example_copy:Honolulu"}
    assert second.entities == ["Barack Obama", "Berlin"]  # really in the text: kept
    assert second.flags == ("example_copy:Honolulu",)
    assert copied_example_entities(["44th president", "X"], "nothing") == ["44th president"]


def test_concurrency_is_bounded_and_helps(fault_server: Server) -> None:
    server = fault_server(delay=0.15)
    texts = TEXTS[:16]
    started = time.perf_counter()
    extract_entities(texts, make(server, concurrency=1))
    serial = time.perf_counter() - started
    assert server.stats.max_in_flight == 1
    server.reset_stats()
    started = time.perf_counter()
    extract_entities(texts, make(server, concurrency=8))
    parallel = time.perf_counter() - started
    assert 4 <= server.stats.max_in_flight <= 8  # bounded; how many overlap depends on load
    assert parallel < serial * 0.6  # in-process server, loaded CI box: no tighter bound


async def test_async_and_sync_inside_a_running_loop(fault_server: Server) -> None:
    server = fault_server()
    extractor = make(server)
    assert await aextract_entities(TEXTS[:5], extractor) == [fake_entities(t) for t in TEXTS[:5]]
    # the sync API still works from inside an event loop (it runs its own in a thread)
    assert extract_entities(TEXTS[:2], extractor) == [fake_entities(t) for t in TEXTS[:2]]
    assert extractor.extract_batch(TEXTS[:1]) == (await extractor.aextract_batch(TEXTS[:1]))


def test_truncation_and_estimate(fault_server: Server) -> None:
    extractor = make(fault_server(), max_tokens_per_object=5)
    long_text = "word " * 1000
    sent = extractor.prepare(long_text)[0]["content"]
    assert "word word word word word" in sent and "word " * 10 not in sent
    estimate = extractor.estimate(
        [long_text, "short"], price_input_per_million=1.0, price_output_per_million=2.0
    )
    assert estimate.n_objects == 2 and estimate.exact
    assert 2 * 100 < estimate.input_tokens < 2 * 400  # the template plus 5 tokens each
    assert estimate.cost == pytest.approx((estimate.input_tokens + 2 * 120) / 1e6)
    assert "t5" in extractor.version  # truncation limit is part of the cache key


def test_configuration_errors() -> None:
    with pytest.raises(ValueError, match="prompt_version"):
        OpenAIEntityExtractor("m", base_url="http://x/v1", prompt_version="nope")
    with pytest.raises(ValueError, match="concurrency"):
        OpenAIEntityExtractor("m", base_url="http://x/v1", concurrency=0)
    with pytest.raises(ValueError, match="model"):
        OpenAIEntityExtractor(" ", base_url="http://x/v1")
    with pytest.raises(ValueError, match="response_format"):
        OpenAIEntityExtractor("m", base_url="http://x/v1", response_format="yaml")
    constrained = OpenAIEntityExtractor("m", base_url="http://x/v1", response_format="json_object")
    assert constrained.response_format == {
        "type": "json_object",
        "schema": {"type": "array", "items": {"type": "string"}},
    }
    assert constrained._request("t")["response_format"] == constrained.response_format


def test_no_key_without_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIEntityExtractor("gpt-4o-mini")


def test_pickles_for_workers(fault_server: Server) -> None:
    server = fault_server()
    extractor = make(server)
    extractor.prepare("warm the tokenizer")
    clone = pickle.loads(pickle.dumps(extractor))
    assert clone.extract_batch(TEXTS[:2]) == extractor.extract_batch(TEXTS[:2])


def test_progress_bar_names_the_job(
    fault_server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """Answers and rerank prompts run through the same runner; their bar must not say
    'entities'."""
    pytest.importorskip("tqdm", reason="progress bars need tqdm (the bench extra)")
    server = fault_server()
    run_extraction(TEXTS[:3], make(server), progress=True, label="answers [fake-model]")
    err = capsys.readouterr().err
    assert "answers [fake-model]" in err
    assert "entities [" not in err
    run_extraction(TEXTS[3:6], make(server), progress=True)
    assert "entities [" in capsys.readouterr().err
