"""The real run of ``evaluate_retriever`` on the user corpora asks the hand-written questions
with their gold chunks replaced by the pages they are on."""

from __future__ import annotations

import json

from grapher_bench.user_corpora import HERE
from grapher_bench.user_corpora.pipeline_eval import page_questions


def test_gold_chunks_become_their_pages() -> None:
    folder = HERE / "markdown_docs"
    chunks = [json.loads(line) for line in (folder / "queries.jsonl").open()]
    pages = page_questions(folder)
    assert [q["id"] for q in pages] == [q["id"] for q in chunks]
    first = pages[0]
    assert first["gold"] == ["extensions/fenced_code_blocks.md", "extensions/code_hilite.md"]
    assert all(len(q["gold"]) == len(set(q["gold"])) >= 1 for q in pages)
