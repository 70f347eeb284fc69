"""``timeout`` is a deadline for the whole request, on every HTTP path.

The fault server's "drip" sends its answer one byte every 0.5 s: every read succeeds, so a
per-read timeout never fires (before: 197 s for ``grapher enrich --timeout 3 --max-retries
0``, qa-eval still waiting after 120 s). Each request must now end by its deadline, and a
request past it counts as a failed (retried) request. The bounds are bounds, not speed
benchmarks: deadline plus a margin for starting the client on a busy machine.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from enrich_fault_server import FaultServer, qa_reply

from grapher_bench.cli import main as bench_main
from grapher_core.cli import main
from grapher_core.enrich.completion import OpenAITextCompleter
from grapher_core.enrich.llm import OpenAIEntityExtractor
from grapher_core.errors import ConfigError

openai = pytest.importorskip("openai")  # imported here, not inside the timed calls

MARGIN = 1.5  # seconds past the deadline: client start-up and cancellation on a loaded machine
DRIP = 0.5  # seconds between the bytes the server sends


def test_enrich_cli_ends_by_the_deadline(
    fault_server: Callable[..., FaultServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "corpus.jsonl"
    source.write_text('{"id": "a", "text": "Ada Lovelace met Charles Babbage in London."}\n')
    before = source.read_bytes()
    server = fault_server(drip=DRIP)
    argv = ["enrich", "--input", str(source), "--output", str(tmp_path / "out.jsonl"),
            "--extractor", "openai", "--model", "fake", "--base-url", server.base_url,
            "--api-key", "x", "--no-cache", "--no-progress", "--timeout", "2",
            "--max-retries", "0"]  # fmt: skip
    started = time.monotonic()
    code = main(argv)
    elapsed = time.monotonic() - started
    assert elapsed < 2 + MARGIN, f"{elapsed:.1f} s for a 2 s deadline"
    assert code == 1  # the object failed; the output is still complete
    assert "no answer within the 2 s deadline" in capsys.readouterr().err
    assert json.loads((tmp_path / "out.jsonl").read_text())["metadata"] == {}
    assert source.read_bytes() == before
    assert server.stats.requests == 1


def test_a_timed_out_request_is_retried_like_any_timeout(
    fault_server: Callable[..., FaultServer],
) -> None:
    server = fault_server(drip=DRIP)
    extractor = OpenAIEntityExtractor(
        "fake", base_url=server.base_url, timeout=0.6, max_retries=2, backoff_base=0.05,
        backoff_max=0.1, concurrency=3,
    )  # fmt: skip
    started = time.monotonic()
    results = extractor.extract_batch(["Ada Lovelace", "Charles Babbage", "Alan Turing"])
    elapsed = time.monotonic() - started
    assert all(r.entities is None for r in results)
    assert all("gave up after 3 attempts" in (r.error or "") for r in results)
    assert server.stats.requests == 9  # three attempts per text, each cut at its deadline
    assert elapsed < 3 * (0.6 + 0.1) + MARGIN, f"{elapsed:.1f} s"


def test_qa_eval_completer_ends_by_the_deadline(
    fault_server: Callable[..., FaultServer],
) -> None:
    server = fault_server(drip=DRIP, responder=qa_reply)
    completer = OpenAITextCompleter(
        "fake", version="t", base_url=server.base_url, timeout=1.0, max_retries=0
    )
    started = time.monotonic()
    (result,) = completer.extract_batch(["Question:\n\nWho?"])
    elapsed = time.monotonic() - started
    assert result.entities is None and "deadline" in (result.error or "")
    assert elapsed < 1.0 + MARGIN, f"{elapsed:.1f} s for a 1 s deadline"


def test_qa_eval_cli_ends_by_the_deadline(
    fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        '{"id": "A", "text": "A\\nAlpha is in Bravo.", "metadata": {"title": "A"}}\n'
        '{"id": "B", "text": "B\\nBravo is a city.", "metadata": {"title": "B"}}\n'
    )
    (folder / "queries.jsonl").write_text(
        '{"id": "q", "text": "Where is Alpha?", "gold": ["A"], "answer": "Bravo"}\n'
    )

    def run(server: FaultServer, name: str) -> float:
        argv = ["qa-eval", "--data", str(folder), "--retriever", "bm25", "--k", "2",
                "--systems", "baseline", "--judge-model", "none", "--base-url",
                server.base_url, "--model", "fake", "--api-key", "x", "--cache",
                str(tmp_path / f"{name}.sqlite"), "--out", str(tmp_path / name), "--timeout",
                "2", "--max-retries", "0", "--no-progress"]  # fmt: skip
        started = time.monotonic()
        assert bench_main(argv) == 0
        return time.monotonic() - started

    fast = run(fault_server(responder=qa_reply), "fast")  # the same run, answered at once
    dripping = fault_server(drip=DRIP, responder=qa_reply)
    with pytest.warns(UserWarning, match="1 of 1 answers failed"):
        slow = run(dripping, "drip")
    assert dripping.stats.requests == 1
    assert slow - fast < 2 + MARGIN, f"{slow:.1f} s vs {fast:.1f} s for a 2 s deadline"


@pytest.mark.parametrize("timeout", [math.nan, math.inf, 0, -1.0, True])
def test_a_timeout_that_could_never_fire_is_refused(timeout: float) -> None:
    with pytest.raises(ConfigError, match="timeout must be a finite number"):
        OpenAITextCompleter("fake", version="t", base_url="http://127.0.0.1:9/v1", timeout=timeout)
