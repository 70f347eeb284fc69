"""Fixtures of the qa-eval tests: a tiny multi-hop QA set and the fake chat server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from enrich_fault_server import FaultConfig, FaultServer, fault_server, qa_reply

__all__ = ["fault_server"]  # the shared fault-injecting server factory

PASSAGES = {
    "Alpha Corp": "Alpha Corp is a toy maker founded by Dana Reed. Its head office is in "
    "Bravo City.",
    "Bravo City": "Bravo City is a port on the Cobalt River, famous for its lighthouse.",
    "Dana Reed": "Dana Reed is an engineer born in Echo Town who founded Alpha Corp.",
    "Echo Town": "Echo Town is a village in the Foxtrot Hills with a population of 900.",
    "Cobalt River": "The Cobalt River flows from the Foxtrot Hills to the sea at Bravo City.",
    "Foxtrot Hills": "The Foxtrot Hills are low hills covered by oak forest.",
    "Golf Club": "The Golf Club of Bravo City was founded in 1901.",
    "Hotel Lima": "Hotel Lima is a hotel in Echo Town opened in 1950.",
}
QUESTIONS = [
    (
        "q1",
        "In which city is the head office of the toy maker founded by Dana Reed?",
        ["Alpha Corp", "Bravo City"],
        "Bravo City",
        ["Bravo"],
    ),
    (
        "q2",
        "Where was the founder of Alpha Corp born?",
        ["Alpha Corp", "Dana Reed"],
        "Echo Town",
        [],
    ),
    (
        "q3",
        "Which hills does the river of Bravo City come from?",
        ["Bravo City", "Cobalt River"],
        "Foxtrot Hills",
        [],
    ),
    (
        "q4",
        "What covers the hills near the village where Hotel Lima is?",
        ["Hotel Lima", "Echo Town", "Foxtrot Hills"],
        "oak forest",
        [],
    ),
]


@pytest.fixture
def qa_set(tmp_path: Path) -> Path:
    """A passages set in the shared benchmark format (title-mention links between passages)."""
    folder = tmp_path / "tinyqa"
    folder.mkdir()
    with (folder / "corpus.jsonl").open("w") as handle:
        for title, text in PASSAGES.items():
            handle.write(
                json.dumps({"id": title, "text": f"{title}\n{text}", "metadata": {"title": title}})
                + "\n"
            )
    with (folder / "queries.jsonl").open("w") as handle:
        for qid, text, gold, answer, aliases in QUESTIONS:
            handle.write(
                json.dumps(
                    {
                        "id": qid,
                        "text": text,
                        "gold": gold,
                        "answer": answer,
                        "answer_aliases": aliases,
                    }
                )
                + "\n"
            )
    return folder


@pytest.fixture
def qa_server() -> Iterator[tuple[FaultServer, list[str]]]:
    """The fake server answering with :func:`qa_reply`, and every prompt it received."""
    seen: list[str] = []

    def respond(messages: list[dict[str, Any]]) -> str:
        seen.append(str(messages[-1]["content"]))
        return qa_reply(messages)

    server = FaultServer(FaultConfig(responder=respond), lifetime=120).start()
    yield server, seen
    server.stop()
