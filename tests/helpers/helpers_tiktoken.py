"""Where the test suite finds tiktoken's BPE files offline: llama-index-core's copy.

The library only reads tiktoken's cache directory (``TIKTOKEN_CACHE_DIR``); tests may use the
frameworks, so they point that directory at the files llama-index-core ships.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path


def bundled_tiktoken_cache() -> Path | None:
    """llama-index-core's copy of tiktoken's cl100k_base and o200k_base files, if installed."""
    try:
        spec = find_spec("llama_index.core")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "_static" / "tiktoken_cache"
        if candidate.is_dir():
            return candidate
    return None
