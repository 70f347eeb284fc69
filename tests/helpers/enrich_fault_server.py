"""A real HTTP server speaking the OpenAI chat-completions protocol, with injectable faults.

The "model" answers with the capitalised words of the passage (the text after the last
``Text:`` of the last user message), so answers are deterministic and checkable. Switches:
429 with ``Retry-After``, 500, slow answers, hangs (to trigger client timeouts), malformed
(non-list) answers, prose- or fence-wrapped answers, a failure rate, and a "drip" that sends the
response one byte every ``drip`` seconds (each read succeeds, so only a deadline on the whole
request ends it). Fault draws come from a
seeded RNG; ``fail_texts`` makes chosen passages fail on every attempt (deterministic
failures under any concurrency). ``responder`` replaces the entity "model" by any function of
the messages (the qa-eval tests answer and judge with :func:`qa_reply`). The server stops by
itself after ``lifetime`` seconds.

Run standalone for throughput measurements::

    .venv/bin/python tests/helpers/enrich_fault_server.py --port 8765 --delay 0.2 --lifetime 600
"""

from __future__ import annotations

import argparse
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

_WORDS = re.compile(r"\b[A-Z][A-Za-z0-9]+(?:\s+[A-Z][A-Za-z0-9]+)*")


def fake_entities(passage: str) -> list[str]:
    """The deterministic "model": distinct capitalised word runs of the passage."""
    return list(dict.fromkeys(m.group(0) for m in _WORDS.finditer(passage)))


def passage_of(messages: list[dict[str, Any]]) -> str:
    """The object's text inside the prompt: after the last 'Text:' of the last user turn."""
    users = [m for m in messages if m.get("role") == "user"]
    content = str(users[-1].get("content", "")) if users else ""
    passage = content.rsplit("Text:", 1)[-1]
    passage = passage.strip()
    if passage.endswith("Output:"):
        passage = passage[: -len("Output:")].strip()
    return passage


@dataclass
class FaultConfig:
    """What the server does wrong, and how often (rates are probabilities per request)."""

    delay: float = 0.0
    rate_429: float = 0.0
    retry_after: float = 0.05
    rate_500: float = 0.0
    rate_hang: float = 0.0
    hang_seconds: float = 2.0
    rate_malformed: float = 0.0
    rate_prose: float = 0.0
    rate_fence: float = 0.0
    fail_texts: frozenset[str] = frozenset()
    answers: dict[str, str] = field(default_factory=dict)  # passage -> fixed raw answer
    echo_example: bool = False
    fixed_status: int | None = None
    responder: Callable[[list[dict[str, Any]]], str] | None = None
    drip: float = 0.0  # > 0: send the whole response one byte every `drip` seconds
    seed: int = 0


@dataclass
class ServerStats:
    """What the server saw: request count (chat completions only; ``gets`` counts GETs such as
    ``/v1/models``), answers by status, passages answered with 200."""

    requests: int = 0
    gets: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    answered: Counter[str] = field(default_factory=Counter)
    max_in_flight: int = 0


class FaultServer:
    """A threaded chat-completions server on 127.0.0.1 (``base_url`` ends in ``/v1``)."""

    def __init__(self, config: FaultConfig | None = None, port: int = 0, lifetime: float = 300):
        self.config = config or FaultConfig()
        self.stats = ServerStats()
        self._rng = random.Random(self.config.seed)
        self._lock = threading.Lock()
        self._in_flight = 0
        self._stopped = threading.Event()  # ends drips still writing when the server stops
        self.lifetime = lifetime
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._serve, name="fault-server", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def _serve(self) -> None:
        timer = threading.Timer(self.lifetime, self._httpd.shutdown)  # stops by itself
        timer.daemon = True
        timer.start()
        try:
            self._httpd.serve_forever(poll_interval=0.05)
        finally:
            timer.cancel()

    def stop(self) -> None:
        self._stopped.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset_stats(self) -> None:
        with self._lock:
            self.stats = ServerStats()

    def _draw(self) -> float:
        with self._lock:
            return self._rng.random()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "fake-llm/1.0"  # the Server header qa-eval records
            sys_version = ""

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
                payload = json.dumps(body).encode()
                if server.config.drip > 0:
                    self._drip(status, payload, headers)
                    return
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
                with server._lock:
                    server.stats.statuses[status] += 1

            def _drip(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
                """Status line, headers and body one byte at a time: every read the client
                makes gets something, so a per-read timeout never fires."""
                lines = [f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}"]
                lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
                lines += [f"{name}: {value}" for name, value in headers.items()]
                raw = ("\r\n".join(lines) + "\r\n\r\n").encode() + payload
                self.close_connection = True
                with server._lock:
                    server.stats.statuses[status] += 1
                for index in range(len(raw)):
                    if server._stopped.wait(server.config.drip):
                        return
                    try:
                        self.wfile.write(raw[index : index + 1])
                        self.wfile.flush()
                    except OSError:  # the client gave up: what a deadline should make it do
                        return

            def do_GET(self) -> None:
                """``/v1/models`` lists the one fake model, at once (never dripped)."""
                with server._lock:
                    server.stats.gets += 1
                if self.path.rstrip("/").endswith("/models"):
                    body = {
                        "object": "list",
                        "data": [{"id": "fake", "object": "model", "owned_by": "tests"}],
                    }
                    payload = json.dumps(body).encode()
                    self.send_response(200)
                else:
                    payload = json.dumps({"error": {"message": f"no route {self.path}"}}).encode()
                    self.send_response(404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                with server._lock:
                    server.stats.requests += 1
                    server._in_flight += 1
                    server.stats.max_in_flight = max(server.stats.max_in_flight, server._in_flight)
                try:
                    self._answer(raw)
                finally:
                    with server._lock:
                        server._in_flight -= 1

            def _answer(self, raw: bytes) -> None:
                config = server.config
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}}, {})
                    return
                try:
                    request = json.loads(raw)
                    messages = request["messages"]
                except (ValueError, KeyError, TypeError):
                    self._send(400, {"error": {"message": "bad request body"}}, {})
                    return
                passage = passage_of(messages)
                if config.delay:
                    time.sleep(config.delay)
                if config.fixed_status is not None:
                    self._send(config.fixed_status, {"error": {"message": "forced status"}}, {})
                    return
                if passage in config.fail_texts:
                    self._send(500, {"error": {"message": "injected permanent failure"}}, {})
                    return
                draw = server._draw()
                edge = config.rate_429
                if draw < edge:
                    self._send(
                        429,
                        {"error": {"message": "rate limited", "type": "rate_limit"}},
                        {"Retry-After": str(config.retry_after)},
                    )
                    return
                edge += config.rate_500
                if draw < edge:
                    self._send(500, {"error": {"message": "injected server error"}}, {})
                    return
                edge += config.rate_hang
                if draw < edge:
                    time.sleep(config.hang_seconds)
                entities = fake_entities(passage)
                if config.echo_example:
                    entities = [*entities, "Barack Obama", "Honolulu"]
                answer = config.answers.get(passage, json.dumps(entities))
                if config.responder is not None:
                    answer = config.responder(messages)
                draw = server._draw()
                if draw < config.rate_malformed:
                    answer = "I am sorry, I cannot identify entities in this text."
                elif draw < config.rate_malformed + config.rate_prose:
                    answer = f"Sure! The entities are {answer}. Let me know if you need more."
                elif draw < config.rate_malformed + config.rate_prose + config.rate_fence:
                    answer = f"```python\n{answer}\n```"
                with server._lock:
                    server.stats.answered[passage] += 1
                body = {
                    "id": "chatcmpl-fault",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": request.get("model", "fake"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": answer},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
                self._send(200, body, {})

        return Handler


@pytest.fixture
def fault_server() -> Iterator[Callable[..., FaultServer]]:
    """Factory: ``fault_server(delay=0.2, rate_500=0.2, ...)`` starts a server, stopped after."""
    started: list[FaultServer] = []

    def start(**switches: Any) -> FaultServer:
        server = FaultServer(FaultConfig(**switches), lifetime=120).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


_DOCUMENT = re.compile(r"^Document (\d+):\n(.*?)(?=\n\nDocument \d+:\n|\nQuestion: )", re.M | re.S)
_STOPWORDS = frozenset({"which", "where", "what", "does", "from", "with", "that", "near", "there"})


def rerank_reply(messages: list[dict[str, Any]]) -> str:
    """A deterministic choice-select "model" for ``llm-rerank``: every document sharing a word
    of more than three letters with the question, by the number shared (ties: listing order),
    relevance ``min(10, 3 + 2 * shared)``, in LlamaIndex's ``Doc: N, Relevance: R`` lines."""
    prompt = str(messages[-1].get("content", ""))
    task = prompt.split("Let's try this now:", 1)[-1]
    question = task.rsplit("\nQuestion: ", 1)[-1].split("\nAnswer:", 1)[0]
    words = {w for w in re.findall(r"[a-z]{4,}", question.lower()) if w not in _STOPWORDS}
    scored = []
    for match in _DOCUMENT.finditer(task):
        shared = len(words & set(re.findall(r"[a-z]{4,}", match.group(2).lower())))
        if shared:
            scored.append((-shared, int(match.group(1))))
    return "\n".join(f"Doc: {n}, Relevance: {min(10, 3 - 2 * s)}" for s, n in sorted(scored))


_JUDGE_INPUT = re.compile(r"- Generated Answer: (.*)\n- Ground Truth Answer: (.*)\n", re.DOTALL)


def qa_reply(messages: list[dict[str, Any]]) -> str:
    """A deterministic answerer and judge for the A.1.2 / A.1.3 prompts of qa-eval.

    Choice-select prompts (``llm-rerank``) go to :func:`rerank_reply`.
    Answer prompt: the title (first line) of the first context object, or A.1.2's refusal when
    the context is empty. Judge prompt: "yes" when the ground truth occurs in the generated
    answer (case-insensitive); the verdict's wording rotates with the answer's length through
    the strict format, a small model's ``the decision is "no"`` and a reply with no decision.
    """
    prompt = str(messages[-1].get("content", ""))
    if prompt.startswith("A list of documents is shown below."):
        return rerank_reply(messages)
    judged = _JUDGE_INPUT.search(prompt)
    if judged is not None:
        generated, truth = judged.group(1).strip(), judged.group(2).strip()
        verdict = "yes" if truth.lower() in generated.lower() else "no"
        style = len(generated) % 3
        if style == 0:
            return f"Explanation: compared the answers.\n\nDecision: {verdict}"
        if style == 1:
            return f'After comparing, the decision is "{verdict}".'
        return "I cannot tell whether these match."
    context = prompt.split("<context>", 1)[-1].split("</context>", 1)[0]
    for line in context.splitlines():
        line = line.strip()
        if line.startswith("[1]"):
            return line[3:].strip()
    return "I don't have enough information in the provided context to answer this."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--rate-429", type=float, default=0.0)
    parser.add_argument("--rate-500", type=float, default=0.0)
    parser.add_argument("--rate-malformed", type=float, default=0.0)
    parser.add_argument("--drip", type=float, default=0.0, help="seconds between bytes")
    parser.add_argument("--lifetime", type=float, default=600.0)
    args = parser.parse_args()
    config = FaultConfig(
        delay=args.delay,
        rate_429=args.rate_429,
        rate_500=args.rate_500,
        rate_malformed=args.rate_malformed,
        drip=args.drip,
    )
    server = FaultServer(config, port=args.port, lifetime=args.lifetime).start()
    print(f"serving {server.base_url} for {args.lifetime:.0f} s", flush=True)
    server._thread.join()


if __name__ == "__main__":
    main()
