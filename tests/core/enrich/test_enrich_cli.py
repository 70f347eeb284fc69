"""``grapher enrich`` end to end: real files, real spaCy, a real HTTP server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from enrich_fault_server import FaultServer, fake_entities

from grapher_core.cli import main


def read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_corpus(path: Path, n: int) -> list[dict[str, object]]:
    records: list[dict[str, object]] = [
        {
            "id": f"doc{i}",
            "text": f"Item {i}: Clara Weiss founded Acme Corp in Lyon",
            "metadata": {"n": i},
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return records


def test_spacy_on_hotpot_slice_then_cached(
    hotpot_slice: Callable[[int], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = hotpot_slice(30)
    out = tmp_path / "out" / "enriched.jsonl"
    cache = tmp_path / "cache.sqlite"
    args = ["enrich", "--input", str(source), "--output", str(out), "--cache", str(cache)]
    assert main(args) == 0
    first_err = capsys.readouterr().err
    assert "enriched 30/30 objects" in first_err and "30 extracted" in first_err
    original, enriched = read(source), read(out)
    assert [r["id"] for r in enriched] == [r["id"] for r in original]
    for before, after in zip(original, enriched, strict=True):
        assert after["text"] == before["text"]
        metadata = after["metadata"]
        assert isinstance(metadata, dict) and isinstance(before["metadata"], dict)
        assert metadata["title"] == before["metadata"]["title"]
        assert isinstance(metadata["entities"], list)
    first_bytes = out.read_bytes()
    assert main([*args, "--key", "entities"]) == 0
    assert "30 unique texts from cache, 0 extracted" in capsys.readouterr().err
    assert out.read_bytes() == first_bytes


def test_openai_failures_listed_and_output_complete(
    fault_server: Callable[..., FaultServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "corpus.jsonl"
    records = write_corpus(source, 12)
    server = fault_server(fail_texts=frozenset({records[4]["text"]}))
    out, failed = tmp_path / "out.jsonl", tmp_path / "failed.txt"
    args = [
        "enrich", "--input", str(source), "--output", str(out), "--extractor", "openai",
        "--model", "fake", "--base-url", server.base_url, "--cache", str(tmp_path / "c.sqlite"),
        "--max-retries", "1", "--failed", str(failed), "--key", "ents", "--no-progress",
    ]  # fmt: skip
    assert main(args) == 1
    assert "doc4: gave up after 2 attempts" in capsys.readouterr().err
    assert failed.read_text() == "doc4\n"
    enriched = read(out)
    assert len(enriched) == 12 and "ents" not in enriched[4]["metadata"]  # type: ignore[operator]
    assert enriched[0]["metadata"] == {"n": 0, "ents": fake_entities(str(records[0]["text"]))}
    server.config.fail_texts = frozenset()
    server.reset_stats()
    assert main(args) == 0
    assert server.stats.requests == 1 and failed.read_text() == ""


def test_estimate_only(fault_server: Callable[..., FaultServer], tmp_path: Path,
                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    source = tmp_path / "corpus.jsonl"
    write_corpus(source, 5)
    server = fault_server()
    args = [
        "enrich", "--input", str(source), "--output", str(tmp_path / "o.jsonl"),
        "--extractor", "openai", "--model", "gpt-4o-mini", "--base-url", server.base_url,
        "--no-cache", "--estimate-only", "--price-input", "0.15", "--price-output", "0.6",
    ]  # fmt: skip
    assert main(args) == 0
    line = capsys.readouterr().out
    assert "5 objects to extract" in line and "estimated cost $" in line
    assert server.stats.requests == 0 and not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "text": "x"}\nnot json\n', ":2: not valid JSON"),
        ('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "duplicate id 'a'"),
        ('{"id": [3], "text": "x"}\n', "string 'id' and 'text'"),  # int ids are read as str
        ('{"id": "a", "text": "x", "metadata": [1]}\n', "'metadata' must be an object"),
    ],
)
def test_bad_input_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text(content)
    args = ["enrich", "--input", str(source), "--output", str(tmp_path / "o.jsonl"), "--no-cache"]
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = ["enrich", "--input", str(tmp_path / "nope.jsonl"), "--output", str(tmp_path / "o")]
    assert main(missing) == 2
    assert "does not exist" in capsys.readouterr().err
    source = tmp_path / "c.jsonl"
    write_corpus(source, 2)
    same = ["enrich", "--input", str(source), "--output", str(source)]
    assert main(same) == 2
    assert "must differ" in capsys.readouterr().err
    no_model = ["enrich", "--input", str(source), "--output", str(tmp_path / "o"),
                "--extractor", "openai", "--no-cache"]  # fmt: skip
    assert main(no_model) == 2
    assert "--model is required" in capsys.readouterr().err
