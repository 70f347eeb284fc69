"""Item 4: a lone surrogate (``\\ud800``) names its object and never aborts a batch."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from enrich_fault_server import FaultServer
from helpers_extras import needs

from grapher_core.candidates import CorpusObject
from grapher_core.cli import main
from grapher_core.enrich import content_hash, enrich_objects
from grapher_core.enrich.base import ExtractionResult

BAD = "Bad \ud800 text about Paris"


def test_cli_enriches_every_object_and_names_the_line(
    fault_server: Callable[..., FaultServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "corpus.jsonl"
    source.write_text(
        '{"id": "a", "text": "Ada Lovelace in London"}\n'
        '{"id": "b", "text": "Bad \\ud800 text about Paris", "metadata": {"k": "\\udfff"}}\n'
        '{"id": "c\\ud800", "text": "Charles Babbage"}\n', encoding="utf-8")  # fmt: skip
    out = tmp_path / "out.jsonl"
    server = fault_server()
    with pytest.warns(UserWarning, match=r"'b' \(line 2\)"):
        code = main(["enrich", "--input", str(source), "--output", str(out), "--extractor",
                     "openai", "--model", "fake", "--base-url", server.base_url, "--api-key",
                     "x", "--cache", str(tmp_path / "c.sqlite"), "--no-progress"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == ["a", "b", "c\ud800"]
    assert records[1]["text"] == BAD and records[1]["metadata"]["k"] == "\udfff"  # kept exactly
    assert records[1]["metadata"]["entities"] == ["Bad", "Paris"]
    assert records[2]["metadata"]["entities"] == ["Charles Babbage"]


def test_python_api_names_the_object_and_keys_the_original_text() -> None:
    class Echo:
        name, version = "echo", "1"

        def extract_batch(self, texts: list[str]) -> list[ExtractionResult]:
            for text in texts:
                text.encode("utf-8")  # what an HTTP client or tokenizer does
            return [ExtractionResult(text.split()[:1]) for text in texts]

    objects = [CorpusObject("ok", "Fine text"), CorpusObject("bad", BAD)]
    with pytest.warns(UserWarning, match=r"'bad'.*U\+FFFD"):
        report = enrich_objects(objects, Echo())
    assert report.failed == []
    assert [o.metadata["entities"] for o in report.objects] == [["Fine"], ["Bad"]]
    assert report.objects[1].text == BAD  # the object keeps its text
    assert content_hash(BAD) != content_hash(BAD.replace("\ud800", "\ufffd"))


def test_langchain_document_without_id() -> None:
    needs("langchain")
    from langchain_core.documents import Document

    from langchain_grapher import GraphERReranker

    documents = [Document(page_content=BAD, metadata={"score": 0.9}),
                 Document(page_content="Paris is in France", metadata={"score": 0.5})]  # fmt: skip
    out = GraphERReranker(score_key="score", top_n=None).compress_documents(documents, "Paris")
    assert sorted(d.page_content for d in out) == sorted(d.page_content for d in documents)
    assert all(d.id is None for d in out)  # an internal id is never leaked onto the output
