"""Entity extraction with any OpenAI-compatible chat model (OpenAI, vLLM, Ollama, llama.cpp).

Requests run with bounded concurrency. Retries are the openai client's own (``max_retries``:
408, 409, 429, 5xx, timeouts and connection errors, ``Retry-After`` read by the client); only
the wait between attempts is ours, exponential backoff with jitter bounded by ``backoff_base``
and ``backoff_max``. ``timeout`` is a deadline for each whole attempt (connect, send and every
read), not a limit per read: a server that drips one byte at a time cannot hold an attempt past
it, and an attempt past it is a timeout that the client retries like any other. Every other
per-object problem -- an unparseable answer, a 400 -- becomes a failed
``ExtractionResult`` for that object only. Configuration errors that would fail every object
(401, 403, 404 model not found) stop the run with ``ExtractorConfigError`` instead of burning
through the corpus.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import numbers
import os
import random
import sys
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from grapher_core.enrich.base import ExtractionResult, check_texts, dedupe_entities
from grapher_core.enrich.parsing import EntityParseError, parse_entity_list
from grapher_core.enrich.tokens import CostEstimate, TokenCounter, estimate_cost, get_token_counter
from grapher_core.errors import ConfigError, MissingDependencyError
from grapher_core.metadata import normalise_entity

# --------------------------------------------------------------------------- prompts

#: The paper's prompt, Appendix A.1.1, verbatim (``{content}`` is the object's text).
A11_TEMPLATE = """Identify the key entities (people, organizations, locations, dates, etc.) from the following paragraph.
Return the result as a valid Python list of strings, with no explanations, only the list.

Example:

Text:

"Barack Obama was born in Honolulu, Hawaii, and served as the 44th President of the United States."

Output:

```
["Barack Obama", "Honolulu", "Hawaii", "United States", "44th President"]
```

Text:

{content}

Output:"""  # noqa: E501

EXAMPLE_TEXT = (
    "Barack Obama was born in Honolulu, Hawaii, and served as the 44th President of the "
    "United States."
)
EXAMPLE_ENTITIES: tuple[str, ...] = (
    "Barack Obama",
    "Honolulu",
    "Hawaii",
    "United States",
    "44th President",
)

_CHAT_SYSTEM = (
    "You identify the key entities (people, organizations, locations, dates, etc.) in a "
    "paragraph. Answer with a JSON list of strings and nothing else."
)
_CHAT_INSTRUCTION = (
    "Identify the key entities of this paragraph. Return only a JSON list of strings."
)

#: JSON schema for servers that constrain output (llama.cpp, vLLM): a list of strings.
ENTITY_LIST_SCHEMA: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "entities",
        "schema": {"type": "array", "items": {"type": "string"}},
    },
}


#: The same constraint in the shape llama-cpp-python's server accepts (``json_object`` + schema).
ENTITY_LIST_JSON_OBJECT: dict[str, Any] = {
    "type": "json_object",
    "schema": {"type": "array", "items": {"type": "string"}},
}

RESPONSE_FORMATS: dict[str, dict[str, Any]] = {
    "json_schema": ENTITY_LIST_SCHEMA,
    "json_object": ENTITY_LIST_JSON_OBJECT,
}


@dataclass(frozen=True)
class PromptTemplate:
    """A versioned prompt: the version goes into the cache key."""

    version: str
    description: str
    build: Callable[[str], list[dict[str, str]]]

    def messages(self, content: str) -> list[dict[str, str]]:
        """The chat messages for one object's text."""
        return self.build(content)


def _a11(content: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": A11_TEMPLATE.replace("{content}", content)}]


def _a11_chat(content: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": _CHAT_SYSTEM},
        {"role": "user", "content": f"{_CHAT_INSTRUCTION}\n\nText:\n{EXAMPLE_TEXT}"},
        {"role": "assistant", "content": '["' + '", "'.join(EXAMPLE_ENTITIES) + '"]'},
        {"role": "user", "content": f"{_CHAT_INSTRUCTION}\n\nText:\n{content}"},
    ]


PROMPTS: dict[str, PromptTemplate] = {
    "a11": PromptTemplate("a11", "the paper's A.1.1 prompt, verbatim, as one user turn", _a11),
    "a11-chat": PromptTemplate(
        "a11-chat",
        "A.1.1 split into turns: the example is its own earlier exchange and the answer is a "
        "JSON list (small models stop copying the example's entities)",
        _a11_chat,
    ),
}


def copied_example_entities(entities: Sequence[str], text: str) -> list[str]:
    """Entities of the prompt's example that the answer has but the text does not contain.

    Small models often echo "Barack Obama" or "Honolulu" from A.1.1 into every answer; an
    example entity counts as copied only when it does not occur in the object's own text.
    """
    haystack = normalise_entity(text)
    examples = {normalise_entity(e) for e in EXAMPLE_ENTITIES}
    return [e for e in entities if (key := normalise_entity(e)) in examples and key not in haystack]


# --------------------------------------------------------------------------- extractor


class ExtractorConfigError(ConfigError):
    """A problem that would fail every object (bad key, unknown model): the run stops."""


API_KEY_ENV = "OPENAI_API_KEY"


def check_api_key(value: object, option: str = "api_key") -> str:
    """``value`` when an HTTP header can carry it as a key; else an error naming ``option``.

    An empty or blank key, or one holding a space, newline or non-ASCII character (a key
    pasted with its line break), fails every request before it leaves -- the client reads that
    as a connection error and retries it with backoff for half a minute. The key itself is
    never shown in the message.
    """
    if not isinstance(value, str):
        raise ConfigError(f"{option} must be a string, got {type(value).__name__}")
    if not value.strip():
        what = "empty" if not value else "blank (only spaces)"
        instead = (
            "unset it"
            if option.lstrip("$") == API_KEY_ENV
            else f"leave {option} out to read ${API_KEY_ENV}"
        )
        raise ConfigError(
            f"{option} is {what}: give the key, or {instead} (a local server given by its base "
            "URL needs none)"
        )
    for position, char in enumerate(value):
        if not "!" <= char <= "~":  # printable ASCII without the space
            shown = "a space" if char == " " else f"character U+{ord(char):04X}"
            raise ConfigError(
                f"{option} holds {shown} at position {position} of {len(value)}: an HTTP header "
                "cannot carry it (was a space or line break copied with the key?)"
            )
    return value


def _not_int(value: Any) -> bool:
    return isinstance(value, bool) or not isinstance(value, numbers.Integral)


def _finite_number(value: Any) -> bool:
    """A real number that is not NaN or infinite (NaN compares False with everything, so a
    plain ``timeout <= 0`` check lets it through and the request never ends)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


#: Statuses the openai client retries by itself: a failure with one of them means it gave up.
_RETRIED_STATUSES = frozenset({408, 409, 429})


def _retried_status(status: int) -> bool:
    return status in _RETRIED_STATUSES or status >= 500


@functools.cache
def _client_classes() -> tuple[type[Any], type[Any]]:
    """The openai client and its HTTP client, each with the one thing this module changes.

    Built on first use because openai is an optional dependency. The HTTP client puts the
    deadline on each attempt: the client's own timeout bounds each read, which a server
    sending a byte at a time never trips, and a deadline outside the client's call would also
    cut short its retries. A missed deadline is raised as the HTTP library's timeout, so the
    client retries it like any timeout. The chat client takes its wait between attempts from
    ``backoff`` (the extractor's ``_delay``): the client's fixed 0.5 to 8 s steps are neither
    configurable nor quick enough for tests, and there is no public hook for them.
    """
    import openai

    http_base: type[Any] = openai.DefaultAsyncHttpxClient
    # httpx for older openai releases, httpx2 for newer: the library the client catches
    library = next(c for c in http_base.__mro__ if c.__name__ == "AsyncClient").__module__
    timeout_error: Any = sys.modules[library.split(".")[0]].TimeoutException  # loaded by openai

    class DeadlineHttpClient(http_base):
        """Ends each HTTP exchange, body included, ``deadline`` seconds after it starts."""

        def __init__(self, *, deadline: float, **options: Any) -> None:
            super().__init__(**options)
            self.deadline = deadline

        async def send(self, request: Any, **options: Any) -> Any:
            try:
                return await asyncio.wait_for(super().send(request, **options), self.deadline)
            except asyncio.TimeoutError as error:  # cancelled above: its connection is closed
                raise timeout_error(
                    f"no answer within the {self.deadline:g} s deadline", request=request
                ) from error

    class ChatClient(openai.AsyncOpenAI):
        """``openai.AsyncOpenAI`` whose wait before a retry is ``backoff(attempt, retry_after)``."""

        backoff: Callable[[int, float | None], float] | None = None

        def _calculate_retry_timeout(
            self, remaining_retries: int, options: Any, response_headers: Any = None
        ) -> float:
            if self.backoff is None:
                return float(
                    super()._calculate_retry_timeout(remaining_retries, options, response_headers)
                )
            retry_after = self._parse_retry_after_header(response_headers)
            # older releases (1.40) pass one retry fewer: their first retry waits as a second
            return self.backoff(max(0, self.max_retries - remaining_retries), retry_after)

    return ChatClient, DeadlineHttpClient


class OpenAIChatClient:
    """Bounded-concurrency, retrying chat-completions calls: one text in, one result out.

    The shared machinery of every OpenAI-compatible client here (entity extraction, answer
    generation and judging in the tooling): subclasses say how a text becomes messages
    (``prepare``) and how a response becomes an ``ExtractionResult`` (``_interpret``). ``name``
    and ``version`` identify the configuration in the cache key, so the runner and the SQLite
    cache of :mod:`grapher_core.enrich.runner` serve every subclass unchanged.
    """

    name: str
    version: str

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 8,
        max_retries: int = 6,
        timeout: float = 60.0,
        max_output_tokens: int | None = 512,
        temperature: float | None = 0.0,
        response_format: dict[str, Any] | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("model must be a non-empty string (e.g. 'gpt-4o-mini')")
        if _not_int(concurrency) or concurrency < 1:
            raise ConfigError(f"concurrency must be an integer >= 1, got {concurrency!r}")
        if _not_int(max_retries) or max_retries < 0:
            raise ConfigError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        if not _finite_number(timeout) or timeout <= 0:
            raise ConfigError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
        if (
            not (_finite_number(backoff_base) and _finite_number(backoff_max))
            or min(backoff_base, backoff_max) < 0
        ):
            raise ConfigError("backoff_base and backoff_max must be finite numbers >= 0")
        if max_output_tokens is not None and (_not_int(max_output_tokens) or max_output_tokens < 1):
            raise ConfigError(
                f"max_output_tokens must be None or an integer >= 1, got {max_output_tokens!r}"
            )
        if api_key is not None:
            key: str | None = check_api_key(api_key, "api_key")
        else:  # an empty variable is as good as none; a blank or garbled one is refused
            from_env = os.environ.get(API_KEY_ENV) or None
            key = None if from_env is None else check_api_key(from_env, f"${API_KEY_ENV}")
        if not key:
            if base_url is None:
                raise ConfigError(
                    "no API key: pass api_key=... or set OPENAI_API_KEY "
                    "(or give base_url for a local server that needs none)"
                )
            key = "not-needed"
        self.model = model
        self.base_url = base_url
        self._api_key = key
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout = float(timeout)
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self.response_format = response_format
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.batch_size = max(64, concurrency * 8)

    def prepare(self, text: str) -> list[dict[str, str]]:
        """The chat messages sent for ``text``."""
        raise NotImplementedError

    def _interpret(self, response: Any, text: str) -> ExtractionResult:
        """The result of one successful HTTP exchange (parse problems are failed results)."""
        raise NotImplementedError

    # ----------------------------------------------------------------- public API

    def extract_batch(self, texts: Sequence[str]) -> list[ExtractionResult]:
        """Sync: results in input order (runs an event loop; safe inside a running one)."""
        from grapher_core.enrich.runner import _run_sync

        return list(_run_sync(lambda: self.aextract_batch(texts)))

    async def aextract_batch(self, texts: Sequence[str]) -> list[ExtractionResult]:
        """Async: results in input order."""
        results: list[ExtractionResult | None] = [None] * len(texts)
        async with contextlib.aclosing(self.aiter_extract(texts)) as stream:
            async for index, result in stream:
                results[index] = result
        return [r for r in results if r is not None]

    async def aiter_extract(
        self, texts: Sequence[str]
    ) -> AsyncGenerator[tuple[int, ExtractionResult], None]:
        """Yield ``(index, result)`` as each request completes, ``concurrency`` at a time."""
        texts = check_texts(texts, "aiter_extract")
        if not texts:
            return
        client = self._async_client()
        done: asyncio.Queue[tuple[int, ExtractionResult] | BaseException] = asyncio.Queue()
        indices = iter(range(len(texts)))

        async def worker() -> None:
            try:
                for index in indices:
                    await done.put((index, await self._extract_one(client, texts[index])))
            except asyncio.CancelledError:
                raise
            except BaseException as error:  # a config error: stop the whole run
                await done.put(error)

        workers = [asyncio.create_task(worker()) for _ in range(min(self.concurrency, len(texts)))]
        try:
            for _ in range(len(texts)):
                item = await done.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            await client.close()

    # ----------------------------------------------------------------- internals

    def _async_client(self) -> Any:
        try:
            chat_client, http_client = _client_classes()
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise MissingDependencyError(
                "the LLM extractor needs the openai client: pip install 'grapher-rerank[llm]'"
            ) from error
        client = chat_client(
            api_key=self._api_key,
            base_url=self.base_url,
            max_retries=self.max_retries,
            timeout=self.timeout,
            http_client=http_client(deadline=self.timeout, timeout=self.timeout),
        )
        client.backoff = self._delay
        return client

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry ``attempt + 1``: the server's ``Retry-After`` (parsed by
        the client) bounded by ``backoff_max``, else exponential backoff with "equal jitter"."""
        if retry_after is not None and math.isfinite(retry_after):
            waited = min(self.backoff_max, max(0.0, retry_after))
            return waited + random.uniform(0, self.backoff_base / 4)
        cap = min(self.backoff_max, self.backoff_base * (2.0 ** min(attempt, 64)))
        return cap / 2 + random.uniform(0, cap / 2)

    def _request(self, text: str) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": self.prepare(text)}
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.max_output_tokens is not None:
            request["max_tokens"] = self.max_output_tokens
        if self.response_format is not None:
            request["response_format"] = self.response_format
        return request

    async def _extract_one(self, client: Any, text: str) -> ExtractionResult:
        """One object's request, retried by the client; what it raised becomes the result."""
        import openai

        try:
            response = await client.chat.completions.create(**self._request(text))
        except (
            openai.AuthenticationError,
            openai.PermissionDeniedError,
            openai.NotFoundError,
        ) as error:
            raise ExtractorConfigError(
                f"{self.base_url or 'OpenAI'} refused model {self.model!r} "
                f"(HTTP {error.status_code}): {error.message}"
            ) from error
        except openai.APITimeoutError as error:  # the deadline passed on the last attempt
            return self._gave_up(error, f"no answer within the {self.timeout:g} s deadline")
        except openai.APIConnectionError as error:
            return self._gave_up(error, type(error).__name__)
        except openai.APIStatusError as error:
            if _retried_status(error.status_code):
                return self._gave_up(error, f"HTTP {error.status_code}")
            return ExtractionResult(None, f"HTTP {error.status_code}: {error.message}")
        except (openai.APIError, ValueError) as error:
            return ExtractionResult(None, f"bad response: {type(error).__name__}: {error}")
        return self._interpret(response, text)

    def _gave_up(self, error: Any, last_problem: str) -> ExtractionResult:
        """The failed result of a request the client stopped retrying. Its last attempt's
        ``x-stainless-retry-count`` header says how many were made (the server can stop the
        retries early: ``x-should-retry: false``, a ``Retry-After`` over two minutes); clients
        that do not send it made them all."""
        headers = getattr(getattr(error, "request", None), "headers", None) or {}
        try:
            attempts = int(headers.get("x-stainless-retry-count", self.max_retries)) + 1
        except (TypeError, ValueError):
            attempts = self.max_retries + 1
        plural = "" if attempts == 1 else "s"
        return ExtractionResult(
            None, f"gave up after {attempts} attempt{plural} (last: {last_problem})"
        )


class OpenAIEntityExtractor(OpenAIChatClient):
    """Entities from a chat-completions model, with the paper's prompt by default.

    ``name`` is ``"openai:<model>"``; ``version`` is the prompt version plus the truncation
    limit (both change the answers, so both are part of the cache key). ``api_key`` defaults to
    ``$OPENAI_API_KEY``; with a ``base_url`` (local servers) a placeholder key is used when none
    is set. ``response_format`` is passed through (``"json_schema"`` selects
    ``ENTITY_LIST_SCHEMA``, which vLLM and llama.cpp's ``llama-server`` accept; ``"json_object"``
    selects ``ENTITY_LIST_JSON_OBJECT``, the shape llama-cpp-python's server wants; OpenAI itself
    wants an object at the schema root, so pass your own dict there).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        prompt_version: str = "a11",
        concurrency: int = 8,
        max_retries: int = 6,
        timeout: float = 60.0,
        max_tokens_per_object: int = 2000,
        max_output_tokens: int | None = 512,
        temperature: float | None = 0.0,
        response_format: str | dict[str, Any] | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        drop_example_copies: bool = True,
    ) -> None:
        if prompt_version not in PROMPTS:
            raise ConfigError(
                f"unknown prompt_version {prompt_version!r}; known: {sorted(PROMPTS)}"
            )
        if max_tokens_per_object < 1:
            raise ConfigError(f"max_tokens_per_object must be >= 1, got {max_tokens_per_object}")
        if isinstance(response_format, str):
            if response_format not in RESPONSE_FORMATS:
                raise ConfigError(
                    f"response_format must be None, a dict or one of {sorted(RESPONSE_FORMATS)}, "
                    f"got {response_format!r}"
                )
            response_format = RESPONSE_FORMATS[response_format]
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            concurrency=concurrency,
            max_retries=max_retries,
            timeout=timeout,
            max_output_tokens=max_output_tokens,
            temperature=temperature,
            response_format=response_format,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
        )
        self.prompt = PROMPTS[prompt_version]
        self.prompt_version = prompt_version
        self.max_tokens_per_object = max_tokens_per_object
        self.drop_example_copies = drop_example_copies
        self.name = f"openai:{model}"
        self.version = f"{prompt_version}/t{max_tokens_per_object}" + (
            "/schema" if response_format else ""
        )
        self._counter: TokenCounter | None = None

    def __repr__(self) -> str:
        return (
            f"OpenAIEntityExtractor(model={self.model!r}, base_url={self.base_url!r}, "
            f"prompt_version={self.prompt_version!r}, concurrency={self.concurrency})"
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_counter"] = None  # tokenizers do not pickle; reload in the worker
        return state

    @property
    def counter(self) -> TokenCounter:
        """The token counter used for truncation and estimates (offline, may be approximate)."""
        if self._counter is None:
            self._counter = get_token_counter(self.model)
        return self._counter

    # ----------------------------------------------------------------- public API

    def prepare(self, text: str) -> list[dict[str, str]]:
        """The messages sent for ``text`` (after truncation to ``max_tokens_per_object``)."""
        return self.prompt.messages(self.counter.truncate(text, self.max_tokens_per_object))

    def estimate(
        self,
        texts: Sequence[str],
        *,
        price_input_per_million: float | None = None,
        price_output_per_million: float | None = None,
        output_tokens_per_object: int = 60,
    ) -> CostEstimate:
        """Tokens (and cost, given prices in $ per million tokens) of extracting ``texts``."""
        prompts = [
            "\n".join(message["content"] for message in self.prepare(text)) for text in texts
        ]
        return estimate_cost(
            prompts,
            self.counter,
            output_tokens_per_object=output_tokens_per_object,
            price_input_per_million=price_input_per_million,
            price_output_per_million=price_output_per_million,
        )

    def _interpret(self, response: Any, text: str) -> ExtractionResult:
        choices = getattr(response, "choices", None) or []
        if not choices:
            return ExtractionResult(None, "response has no choices")
        content = getattr(choices[0].message, "content", None)
        try:
            entities = parse_entity_list(content)
        except EntityParseError as error:
            return ExtractionResult(None, f"unparseable answer: {error}")
        flags: tuple[str, ...] = ()
        copied = copied_example_entities(entities, text)
        if copied:
            flags = tuple(f"example_copy:{entity}" for entity in dedupe_entities(copied))
            if self.drop_example_copies:
                dropped = {normalise_entity(e) for e in copied}
                entities = [e for e in entities if normalise_entity(e) not in dropped]
        return ExtractionResult(dedupe_entities(entities), None, flags)
