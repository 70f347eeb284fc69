"""Where the test suite finds tiktoken's BPE files and NLTK's data offline: llama-index-core's
copies.

The library only reads tiktoken's cache directory (``TIKTOKEN_CACHE_DIR``); tests may use the
frameworks, so they point that directory at the files llama-index-core ships. Its sentence
splitter reads NLTK's stopwords and punkt: some versions (0.14.0, the floor ``make test-min``
runs) look for them in the user's cache folder and download them when absent, which fails
offline, so the suite points ``NLTK_DATA`` at the copy the package ships.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path


def bundled_tiktoken_cache() -> Path | None:
    """llama-index-core's copy of tiktoken's cl100k_base and o200k_base files, if installed."""
    return _bundled("tiktoken_cache")


def bundled_nltk_data() -> Path | None:
    """llama-index-core's copy of NLTK's stopwords and punkt, if installed."""
    found = _bundled("nltk_cache")
    return found if found is not None and (found / "corpora" / "stopwords").is_dir() else None


def _bundled(name: str) -> Path | None:
    try:
        spec = find_spec("llama_index.core")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "_static" / name
        if candidate.is_dir():
            return candidate
    return None
