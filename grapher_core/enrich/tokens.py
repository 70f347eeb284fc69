"""Token counting for truncation and cost estimates, working offline.

tiktoken downloads its BPE files on first use, which fails without network. llama-index-core
ships cl100k_base and o200k_base in ``llama_index/core/_static/tiktoken_cache``; when
``TIKTOKEN_CACHE_DIR`` is unset (or empty) we point tiktoken there while it loads an encoding
(the environment is restored afterwards). When no encoding loads at all,
counts fall back to an approximation (about 4 characters per token) and say so (``exact`` is
False) instead of failing the run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import threading
from collections.abc import Iterator, Sequence
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


def offline_tiktoken_dir() -> Path | None:
    """The tiktoken cache shipped inside llama-index-core, if that package is installed."""
    try:
        spec = importlib.util.find_spec("llama_index.core")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "_static" / "tiktoken_cache"
        if candidate.is_dir():
            return candidate
    return None


@contextlib.contextmanager
def _offline_cache_dir() -> Iterator[None]:
    """Point tiktoken at the shipped cache while an encoding loads, then put the environment back.

    tiktoken reads ``TIKTOKEN_CACHE_DIR`` only while it loads an encoding (it keeps loaded ones),
    so the variable is set for that call alone and the user's environment is left as it was. An
    empty value (e.g. ``export TIKTOKEN_CACHE_DIR ?=`` in a Makefile) means "no cache" to tiktoken,
    i.e. always download: offline, it is treated as unset.
    """
    if os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR"):
        yield
        return
    found = offline_tiktoken_dir()
    if found is None:
        yield
        return
    with _environ_lock:
        before = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(found)
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = before


_environ_lock = threading.Lock()


@lru_cache(maxsize=16)
def get_token_counter(model: str | None = None, encoding: str | None = None) -> TokenCounter:
    """The best counter available offline for ``model`` (or a named ``encoding``).

    Tries the model's own encoding, then o200k_base and cl100k_base; returns an
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
            with _offline_cache_dir():
                loaded = tiktoken.get_encoding(name)
            return TiktokenCounter(loaded)
        except Exception:  # a failed download surfaces as many error types
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
