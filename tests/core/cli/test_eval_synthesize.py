"""``grapher eval --synthesize``: end to end against a real chat-completions server on
127.0.0.1 (the scripted one of ``enrich_fault_server``), real SQLite databases and the real
evaluation; only the embedding model is the tests' hashing one."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from enrich_fault_server import FaultServer, fault_server
from test_eval import SHOP, ZOO, make_db

from grapher_core.cli import main

if TYPE_CHECKING:
    from conftest import HashEmbedder

__all__ = ["fault_server"]

_TABLE = re.compile(r"^Table: (\w+)", re.M)


def synth_reply(messages: list[dict[str, Any]]) -> str:
    """The scripted "model": a question naming the items' tables in plain words, in the
    shapes small models answer with. About the couriers' pair it quotes the table id, and
    rewrites it away when asked; about the keepers' pair it quotes it again in the rewrite
    (dropped); about the plants it refuses (no question)."""
    prompt = str(messages[-1]["content"])
    if prompt.startswith("Rewrite this question"):
        question = prompt.split("Question: ", 1)[1].split("\n", 1)[0]
        if "zoo.keepers" in question:
            return f'{{"question": "{question}"}}'
        return f'Here you go:\n```json\n{{"question": "{question.replace("shop.", "the ")}"}}\n```'
    tables = _TABLE.findall(prompt)
    if len(tables) == 2:
        named = [
            f"shop.{t}" if t == "couriers" else f"zoo.{t}" if t == "keepers" else t for t in tables
        ]
        return json.dumps({"question": f"Which {named[0]} belong to which {named[1]}?"})
    (table,) = tables
    if table == "plants":
        return "I cannot write a question about this."
    return f'Question: "What is stored about the {table}?"'


@pytest.fixture
def databases(tmp_path: Path) -> list[str]:
    pytest.importorskip("sqlalchemy")
    shop = make_db(tmp_path / "shop.db", SHOP)
    zoo = make_db(tmp_path / "zoo.db", ZOO)
    return ["--database", shop, "--database", zoo]


def _synth(server: FaultServer, out: Path, n: int = 10) -> list[str]:
    args = ["eval", "--synthesize", str(n), "--write-questions", str(out)]
    args += ["--llm-model", "fake", "--llm-base-url", server.base_url, "--pair-share", "0.5"]
    return [*args, "--top-n", "6", "--k", "1,3", "--rankers", "gcs", "--no-progress"]


def test_synthesized_questions_are_written_evaluated_and_cached(
    tmp_path: Path,
    embedder: HashEmbedder,
    databases: list[str],
    fault_server: Callable[..., FaultServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = fault_server(responder=synth_reply)
    out = tmp_path / "synthetic.jsonl"
    assert main([*_synth(server, out), *databases]) == 0
    printed = capsys.readouterr().out
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    fks = {
        frozenset(("shop.orders", "shop.buyers")),
        frozenset(("shop.parcels", "shop.orders")),
        frozenset(("shop.routes", "shop.couriers")),
        frozenset(("shop.routes", "shop.parcels")),
        frozenset(("zoo.feedings", "zoo.keepers")),
    }
    pairs = [q for q in lines if q["kind"] == "pair"]
    singles = [q for q in lines if q["kind"] == "single"]
    # half of 10 asked, and the schemas have exactly 5 foreign keys; the keepers' dropped
    assert {frozenset(q["gold"]) for q in pairs} == fks - {
        frozenset(("zoo.feedings", "zoo.keepers"))
    }
    assert all(q["via"] == "ForeignKeys('foreign_keys')" for q in pairs)
    assert all(len(q["gold"]) == 1 for q in singles)
    texts = [q["text"] for q in lines]
    assert not any(re.search(r"shop\.|zoo\.", t) for t in texts)  # no identifier survives
    assert "Which the couriers belong to which routes?" in texts or (
        "Which routes belong to which the couriers?" in texts
    )
    assert "zoo.feedings" not in {g for q in lines for g in q["gold"] if q["kind"] == "pair"}
    assert ["zoo.plants"] not in [q["gold"] for q in lines]
    assert (
        "synthesised: 8 of 10 questions kept (4 pair, 4 single); 1 without a usable answer, "
        "1 rewritten and 1 dropped for naming an identifier (or the prompt's items), 0 repeats "
        "dropped; 0 answers from the cache"
    ) in printed
    assert f"wrote {out}" in printed
    assert "by kind of question" in printed
    assert "pair (4 q)" in printed and "single (4 q)" in printed
    asked = server.stats.requests

    # the answers are cached: a second synthesis into another file asks the server nothing
    again = tmp_path / "again.jsonl"
    assert main([*_synth(server, again), *databases]) == 0
    assert server.stats.requests == asked
    assert "12 answers from the cache" in capsys.readouterr().out  # 10 questions, 2 rewrites
    assert again.read_text() == out.read_text()

    # the file is the user's: evaluated as hand-written questions, never overwritten
    evaluate = ["eval", "--questions", str(out), "--top-n", "6", "--k", "1,3", "--rankers", "gcs"]
    assert main([*evaluate, "--no-progress", *databases]) == 0
    assert "by kind of question" in capsys.readouterr().out
    assert main([*_synth(server, out), *databases]) == 2
    assert "exists and is never overwritten" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ([], "give --questions FILE, or --synthesize N --write-questions FILE"),
        (["--synthesize", "3"], "--synthesize needs --write-questions"),
        (["--synthesize", "0", "--write-questions", "x.jsonl"], "--synthesize must be >= 1"),
        (["--synthesize", "3", "--write-questions", "x.jsonl"], "--synthesize needs --llm-model"),
        (["--synthesize", "3", "--questions", "q.jsonl"], "exclude each other"),
    ],
)
def test_synthesis_options_are_checked_before_any_request(
    embedder: HashEmbedder,
    databases: list[str],
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    said: str,
) -> None:
    assert main(["eval", *extra, "--no-progress", *databases]) == 2
    assert said in capsys.readouterr().err
    assert embedder.embedded == 0
