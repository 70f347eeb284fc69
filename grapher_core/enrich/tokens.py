"""Token counting for truncation and cost estimates, working offline.

tiktoken reads its BPE files from one cache directory, and downloads them there on first use:
``$TIKTOKEN_CACHE_DIR`` when set (an empty value turns tiktoken's cache off), else
``$DATA_GYM_CACHE_DIR``, else tiktoken's default ``<temp dir>/data-gym-cache``
(:func:`tiktoken_cache_dir` says which). To count exactly without network, put the encoding's
file there once, or point ``TIKTOKEN_CACHE_DIR`` at a folder that holds it. GraphER neither
changes that variable nor looks inside other packages for BPE files. When no encoding loads
(tiktoken missing, no cached file and no network), counts fall back to an approximation (about
4 characters per token) and say so (``exact`` is False) instead of failing the run.
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from grapher_core.errors import InputError

CHARS_PER_TOKEN = 4.0


class TokenCounter(Protocol):
    """Counts and truncates text in tokens."""

    @property
    def name(self) -> str: ...

    @property
    def exact(self) -> bool: ...

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


@dataclass(frozen=True)
class ApproximateCounter:
    """Fallback when no tokenizer loads: ``ceil(len / 4)`` tokens, truncation by characters."""

    name: str = "approx-4-chars"
    exact: bool = False

    def count(self, text: str) -> int:
        return math.ceil(len(text) / CHARS_PER_TOKEN)

    def truncate(self, text: str, max_tokens: int) -> str:
        limit = int(max_tokens * CHARS_PER_TOKEN)
        return text if len(text) <= limit else text[:limit]


class TiktokenCounter:
    """Exact counts with a tiktoken encoding."""

    exact = True

    def __init__(self, encoding: Any) -> None:
        self._encoding = encoding
        self.name = str(encoding.name)

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def truncate(self, text: str, max_tokens: int) -> str:
        tokens = self._encoding.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return text
        return str(self._encoding.decode(tokens[:max_tokens]))


def tiktoken_cache_dir() -> Path | None:
    """The folder tiktoken reads (and downloads) BPE files in; None when its cache is turned off.

    The same order as tiktoken's own loader: ``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR``, then
    ``<temp dir>/data-gym-cache``.
    """
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            value = os.environ[variable]
            return Path(value) if value else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


@lru_cache(maxsize=16)
def get_token_counter(model: str | None = None, encoding: str | None = None) -> TokenCounter:
    """The best counter available offline for ``model`` (or a named ``encoding``).

    Tries the model's own encoding, then o200k_base and cl100k_base, each from
    :func:`tiktoken_cache_dir` (downloaded there when the network allows); returns an
    ``ApproximateCounter`` when tiktoken is missing or none of them loads.
    """
    try:
        import tiktoken
    except ImportError:
        return ApproximateCounter()
    names: list[str] = []
    if encoding:
        names.append(encoding)
    if model:
        with contextlib.suppress(KeyError, ValueError):
            names.append(tiktoken.encoding_name_for_model(model))
    names += ["o200k_base", "cl100k_base"]
    for name in dict.fromkeys(names):
        try:
            return TiktokenCounter(tiktoken.get_encoding(name))
        except Exception:  # a missing file whose download fails surfaces as many error types
            continue
    return ApproximateCounter()


@dataclass(frozen=True)
class CostEstimate:
    """What a run would send and cost, before sending anything."""

    n_objects: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    counter: str
    exact: bool

    def describe(self) -> str:
        """One human-readable line."""
        approx = "" if self.exact else " (approximate count: no tokenizer available offline)"
        cost = "" if self.cost is None else f", estimated cost ${self.cost:,.4f}"
        return (
            f"{self.n_objects} objects to extract: {self.input_tokens:,} input tokens, "
            f"~{self.output_tokens:,} output tokens [{self.counter}]{approx}{cost}"
        )


def estimate_cost(
    prompts: Sequence[str],
    counter: TokenCounter,
    *,
    output_tokens_per_object: int = 60,
    price_input_per_million: float | None = None,
    price_output_per_million: float | None = None,
    overhead_tokens_per_message: int = 4,
) -> CostEstimate:
    """Token totals (and cost, when prices are given) for sending ``prompts``."""
    if output_tokens_per_object < 0:
        raise InputError("output_tokens_per_object must be >= 0")
    input_tokens = sum(counter.count(p) + overhead_tokens_per_message for p in prompts)
    output_tokens = output_tokens_per_object * len(prompts)
    cost: float | None = None
    if price_input_per_million is not None or price_output_per_million is not None:
        cost = (
            input_tokens * (price_input_per_million or 0.0)
            + output_tokens * (price_output_per_million or 0.0)
        ) / 1e6
    return CostEstimate(
        len(prompts), input_tokens, output_tokens, cost, counter.name, counter.exact
    )
