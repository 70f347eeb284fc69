"""Free-text chat completions through the enrichment client, runner and cache.

Answer generation and answer judging (``grapher-bench qa-eval``) send a filled prompt and keep
the model's text. They need exactly what entity extraction needs -- bounded concurrency,
retries with backoff, configuration errors that stop the run, a resumable cache -- so this is
an :class:`~grapher_core.enrich.llm.OpenAIChatClient` whose "text" is the whole prompt and
whose result holds the completion as a one-item list. Run it with
:func:`grapher_core.enrich.runner.run_extraction` and an ``EntityCache``: the cache key is
(``name``, model, ``version``, sha256 of the prompt), so an identical prompt is never sent
twice and a killed run resumes where it stopped. A reply past :data:`MAX_REPLY_BYTES` is
refused by its size before the runner caches it (a failed result naming the size and the
limit, retried on the next run): one runaway reply never makes the cache unusable.
"""

from __future__ import annotations

from typing import Any

from grapher_core.enrich.base import ExtractionResult
from grapher_core.enrich.llm import OpenAIChatClient
from grapher_core.errors import ConfigError

__all__ = ["MAX_REPLY_BYTES", "OpenAITextCompleter", "completion_text"]

MAX_REPLY_BYTES = 1 << 20
"""The largest reply kept (1 MiB of UTF-8): far past any answer or verdict (``qa-eval`` asks
for a few hundred tokens), and well inside the cache's cell bound
(:data:`~grapher_core.enrich.cache.MAX_CELL_BYTES`, 16 MiB), which a larger reply would hit
when it is written."""


class OpenAITextCompleter(OpenAIChatClient):
    """Send each text as one user turn and keep the answer's text.

    ``version`` names the prompt (and anything else that changes the answers) and goes into
    the cache key; bump it whenever the template changes. ``name`` is ``"openai-text:<model>"``.
    An empty answer is a failed result (the runner retries failures on the next run); an answer
    cut by ``max_output_tokens`` is kept and flagged ``truncated``.
    """

    def __init__(
        self, model: str, *, version: str, max_output_tokens: int | None = 256, **options: Any
    ) -> None:
        if not isinstance(version, str) or not version.strip():
            raise ConfigError("version must be a non-empty string (it is part of the cache key)")
        super().__init__(model, max_output_tokens=max_output_tokens, **options)
        self.name = f"openai-text:{model}"
        self.version = version

    def __repr__(self) -> str:
        return (
            f"OpenAITextCompleter(model={self.model!r}, base_url={self.base_url!r}, "
            f"version={self.version!r}, concurrency={self.concurrency})"
        )

    def prepare(self, text: str) -> list[dict[str, str]]:
        """One user message: the filled prompt, verbatim."""
        return [{"role": "user", "content": text}]

    def _interpret(self, response: Any, text: str) -> ExtractionResult:
        choices = getattr(response, "choices", None) or []
        if not choices:
            return ExtractionResult(None, "response has no choices")
        content = getattr(choices[0].message, "content", None)
        if not isinstance(content, str) or not content.strip():
            return ExtractionResult(None, "the model returned an empty answer")
        size = len(content.encode("utf-8", "surrogatepass"))
        if size > MAX_REPLY_BYTES:
            return ExtractionResult(
                None,
                f"the model returned a reply of {size:,} bytes, past the limit of "
                f"{MAX_REPLY_BYTES:,} bytes (MAX_REPLY_BYTES): refused before caching; check "
                "the server honours max_tokens (max_output_tokens) and run again",
            )
        flags = ("truncated",) if getattr(choices[0], "finish_reason", None) == "length" else ()
        return ExtractionResult([content.strip()], None, flags)


def completion_text(result: ExtractionResult) -> str | None:
    """The completion held by a result of :class:`OpenAITextCompleter` (``None`` if failed)."""
    if result.entities is None or len(result.entities) != 1:
        return None
    return result.entities[0]
