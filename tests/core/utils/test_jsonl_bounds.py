"""``read_jsonl`` bounds a line before reading it whole, and the depth scan works in chunks."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from grapher_core.errors import ConfigError, InputError
from grapher_core.utils import jsonl
from grapher_core.utils.jsonl import json_depth, read_jsonl


def test_a_line_past_the_bound_is_refused_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    fits = json.dumps({"t": "x" * 91})
    assert len(fits) == 100
    path.write_text(f"{fits}\n{fits}\r\n\n{fits[:-1]}  }}\n")
    assert [n for n, _ in read_jsonl(path, max_line_bytes=102)] == [1, 2, 4]
    with pytest.raises(InputError, match=r"rows\.jsonl:4: line longer than 101 bytes"):
        list(read_jsonl(path, max_line_bytes=101))
    with pytest.raises(InputError, match=r"rows\.jsonl:1: line longer than 99 bytes"):
        list(read_jsonl(path, max_line_bytes=99))
    with pytest.raises(ConfigError, match="max_line_bytes must be a positive integer"):
        list(read_jsonl(path, max_line_bytes=True))


def test_a_long_line_costs_the_bound_not_its_length(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    with path.open("wb") as handle:
        handle.truncate(256 << 20)  # one 256 MiB line of NULs, sparse on disk
    tracemalloc.start()
    with pytest.raises(InputError, match=r"one\.jsonl:1: line longer than 1,048,576 bytes"):
        list(read_jsonl(path, max_line_bytes=1 << 20))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4 << 20


def _reference_depth(raw: bytes) -> int:
    depth = deepest = 0
    inside = escaped = False
    for byte in raw:
        char = chr(byte)
        if inside:
            escaped, inside = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            inside = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


@pytest.mark.parametrize("chunk", [1, 3, 7, 1 << 20])
def test_depth_is_the_same_across_chunk_boundaries(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(jsonl, "_DEPTH_CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    for _ in range(30):
        parts = rng.choice(["[", "]", '{"a": ', "}", '"[{\\"x"', "1,"], size=40)
        raw = "".join(parts).encode()
        assert json_depth(raw) == _reference_depth(raw), raw
    assert json_depth(b"[" * 5000 + b"]" * 5000) == 5000
    assert json_depth(b"") == 0
