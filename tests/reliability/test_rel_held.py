"""Cases that held before the reliability suite was written and must keep holding: bad inputs
through the core, the CLI and the wrappers get errors naming the problem; nothing given is
mutated; server faults lose nothing. (SIGKILL resume: ``test_rel_kill.py``; concurrency:
``test_rel_validation.py``.)"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from enrich_fault_server import FaultServer

from grapher_core import Candidate, ForeignKeys, GraphReranker, SharedEntities
from grapher_core.cli import main

FINITE = "finite numbers; bad score for 'a'"
CORE_BAD = {
    "NaN score": ([Candidate("a", score=math.nan), Candidate("b", score=0.1)], FINITE),
    "inf score": ([Candidate("a", score=math.inf), Candidate("b", score=0.1)], FINITE),
    "some scores missing": ([Candidate("a", score=0.5), Candidate("b")], "b"),
    "text score": ([Candidate("a", score="high"), Candidate("b", score=0.1)], "a"),  # type: ignore[arg-type]
    "duplicate ids": ([Candidate("a", score=0.5), Candidate("a", score=0.1)], "duplicate"),
    "empty id": ([Candidate("", score=0.5)], "empty"),
    "not a candidate": ([{"id": "a"}], "not a grapher_core.Candidate"),
}  # fmt: skip


@pytest.mark.parametrize(("pool", "named"), list(CORE_BAD.values()), ids=list(CORE_BAD))
def test_core_bad_input_named(pool: list[Any], named: str) -> None:
    with pytest.raises((ValueError, TypeError), match=named):
        GraphReranker([ForeignKeys()]).rerank(pool)


@pytest.mark.parametrize("top_n", [-1, 2.5, True, "3"])
def test_core_bad_top_n_named(top_n: object) -> None:
    with pytest.raises(ValueError, match="top_n"):
        GraphReranker([ForeignKeys()]).rerank([Candidate("a", score=1.0)], top_n=top_n)  # type: ignore[arg-type]


def test_core_never_mutates_input() -> None:
    pool = [Candidate(f"c{i}", score=1.0 - i / 10, embedding=np.ones(3) * i,
                      metadata={"entities": ["x", f"e{i}"], "foreign_keys": ["c0"]})
            for i in range(6)]  # fmt: skip
    before = copy.deepcopy(pool)
    GraphReranker([ForeignKeys(), SharedEntities()], ranker="ppr").rerank(pool, top_n=3)
    assert pool == before
    assert all(np.array_equal(a.embedding, b.embedding) for a, b in zip(pool, before, strict=True))


@pytest.mark.filterwarnings("ignore::grapher_core.diagnostics.GraphERWarning")
def test_wrappers_never_mutate_input() -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from langchain_core.documents import Document
    from llama_index.core.schema import NodeWithScore, TextNode

    from langchain_grapher import GraphERReranker
    from llama_index_grapher import GraphERPostprocessor

    documents = [Document(id=f"d{i}", page_content=f"t{i}",
                          metadata={"score": 1 - i / 10, "foreign_keys": ["d0"]})
                 for i in range(4)]  # fmt: skip
    nodes = [NodeWithScore(node=TextNode(id_=d.id, text=d.page_content, metadata=dict(d.metadata)),
                           score=d.metadata["score"]) for d in documents]  # fmt: skip
    documents_before, nodes_before = copy.deepcopy(documents), copy.deepcopy(nodes)
    GraphERReranker(proximities=[ForeignKeys()], score_key="score", explain=True
                    ).compress_documents(documents, "q")  # fmt: skip
    GraphERPostprocessor(proximities=[ForeignKeys()], explain=True).postprocess_nodes(
        nodes, query_str="q"
    )
    assert documents == documents_before
    assert [n.node.metadata for n in nodes] == [n.node.metadata for n in nodes_before]
    assert [n.score for n in nodes] == [n.score for n in nodes_before]


CLI_BAD = {
    "invalid JSON": ('{"id": "a", "text": "x"}\n{oops\n', "corpus.jsonl:2: not valid JSON"),
    "array line": ('[1, 2]\n', "corpus.jsonl:1: expected a JSON object"),
    "no text": ('{"id": "a"}\n', "corpus.jsonl:1"),
    "duplicate id": ('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "duplicate id 'a'"),
    "metadata list": ('{"id": "a", "text": "x", "metadata": [1]}\n', "'metadata' must be"),
    "not UTF-8": (b'{"id": "a", "text": "x"}\n\xff\xfe\n', "corpus.jsonl:2: not UTF-8"),
}  # fmt: skip


@pytest.mark.parametrize(("content", "named"), list(CLI_BAD.values()), ids=list(CLI_BAD))
def test_cli_bad_input_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             content: str | bytes, named: str) -> None:  # fmt: skip
    source = tmp_path / "corpus.jsonl"
    if isinstance(content, bytes):
        source.write_bytes(content)
    else:
        source.write_text(content)
    before = source.read_bytes()
    code = main(["enrich", "--input", str(source), "--output", str(tmp_path / "o.jsonl"),
                 "--no-cache", "--extractor", "mentions"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and named in err and "Traceback" not in err
    assert source.read_bytes() == before and not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize(("arguments", "named"), [
    (["--limit", "0"], "--limit"),
    (["--output", "{input}"], "must differ"),
    (["--input", "{tmp}"], "is a directory"),
])  # fmt: skip
def test_cli_bad_arguments_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 arguments: list[str], named: str) -> None:  # fmt: skip
    source = tmp_path / "corpus.jsonl"
    source.write_text('{"id": "a", "text": "x"}\n')
    base = {"--input": str(source), "--output": str(tmp_path / "o.jsonl")}
    for flag, value in zip(arguments[::2], arguments[1::2], strict=True):
        base[flag] = value.format(input=source, tmp=tmp_path)
    argv = ["enrich", "--no-cache", "--extractor", "mentions"]
    for flag, value in base.items():
        argv += [flag, value]
    assert main(argv) == 2
    assert named in capsys.readouterr().err


def test_server_faults_lose_nothing(
    fault_server: Callable[..., FaultServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """30 % 429/500 (retried) and 10 % unusable answers (failed, exit 1, retried by a re-run):
    a few re-runs give an output byte-identical to a run against a healthy server."""
    source = tmp_path / "corpus.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": f"d{i}", "text": f"Ada Lovelace {i} in London", "metadata": {"n": i}})
            + "\n"
            for i in range(60)
        )
    )

    def enrich(server: FaultServer, out: Path, cache: Path) -> int:
        return main(
            [
                "enrich",
                "--input",
                str(source),
                "--output",
                str(out),
                "--extractor",
                "openai",
                "--model",
                "fake",
                "--base-url",
                server.base_url,
                "--api-key",
                "x",
                "--cache",
                str(cache),
                "--no-progress",
                "--max-retries",
                "30",
            ]
        )

    faulty = fault_server(rate_429=0.15, rate_500=0.15, retry_after=0.01, rate_malformed=0.1,
                          seed=3)  # fmt: skip
    out, cache = tmp_path / "out.jsonl", tmp_path / "c.sqlite"
    codes = [enrich(faulty, out, cache)]
    while codes[-1] == 1 and len(codes) < 8:
        codes.append(enrich(faulty, out, cache))
    assert codes[0] == 1 and codes[-1] == 0, codes  # some failed first, all done in the end
    assert enrich(fault_server(), tmp_path / "clean.jsonl", tmp_path / "clean.sqlite") == 0
    assert out.read_bytes() == (tmp_path / "clean.jsonl").read_bytes()
