"""The whole qa-eval pipeline offline: retrieval, A.1.2 answers, A.1.3 verdicts, cache, CLI.

The model is the fake chat server on 127.0.0.1 (tests/helpers/enrich_fault_server.py): it
answers with the title of the first context object and judges by substring, wording its
verdicts three ways (strict, small-model prose, no decision at all).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from enrich_fault_server import qa_reply

from grapher_bench.cli import main as bench_main
from grapher_bench.data import load_dataset
from grapher_bench.qa_eval.pipeline import run_qa
from grapher_bench.qa_eval.prompts import answer_prompt, flat_context, judge_prompt
from grapher_bench.qa_eval.report import START, summary
from grapher_bench.qa_eval.systems import parse_system, render_context, retrieve
from grapher_core.enrich.cache import EntityCache
from grapher_core.enrich.completion import OpenAITextCompleter

pytest.importorskip("bm25s")  # every test retrieves with BM25 (the 'bench' extra)

SYSTEMS = [parse_system(s) for s in ("baseline", "gcs[mentions]", "gcs[mentions]:graph")]


def _clients(base_url: str) -> tuple[OpenAITextCompleter, OpenAITextCompleter]:
    options = {
        "base_url": base_url,
        "concurrency": 2,
        "max_retries": 4,
        "backoff_base": 0.01,
        "backoff_max": 0.05,
        "timeout": 10.0,
    }
    return (
        OpenAITextCompleter("fake", version="a12-test", **options),  # type: ignore[arg-type]
        OpenAITextCompleter("fake", version="a13-test", **options),
    )  # type: ignore[arg-type]


def test_pipeline_fills_prompts_parses_both_answers_and_hits_the_cache(
    qa_set: Path, qa_server: tuple, tmp_path: Path
) -> None:
    server, seen = qa_server
    dataset = load_dataset(qa_set)
    retrieved = retrieve(dataset, SYSTEMS, k=3, retriever="bm25")
    assert all(len(ids) == 3 for ids in retrieved.top["baseline"])
    answerer, judge = _clients(server.base_url)
    with EntityCache(tmp_path / "qa.sqlite") as cache:
        run = run_qa(dataset, SYSTEMS, retrieved, answerer, judge, cache, block=3)
        first_requests = server.stats.requests

        # prompts filled: the first question's flat prompt, byte for byte
        q1 = dataset.queries[0]
        ids = retrieved.top["baseline"][0]
        expected = answer_prompt(q1.text, flat_context([retrieved.objects[i].text for i in ids]))
        assert expected in seen
        assert expected.count("[1] ") == 1 and "Question:\n\n" + q1.text in expected
        graph_ctx = render_context(
            retrieved.top["gcs[mentions]"][0], retrieved.objects, "graph", "mentions"
        )
        assert answer_prompt(q1.text, graph_ctx) in seen
        # the relation layout: the same objects, each tree edge carrying its phrase
        relation_ctx = render_context(
            retrieved.top["gcs[mentions]"][0], retrieved.objects, "relation", "mentions"
        )
        assert "mentions" in relation_ctx and relation_ctx != graph_ctx
        assert all(
            retrieved.objects[i].text.splitlines()[1] in relation_ctx
            for i in retrieved.top["gcs[mentions]"][0]
        )
        # both answers parsed: every answer exists, verdicts follow the fake judge's rule
        records = run.records["baseline"]
        assert all(r.answer for r in records)
        for record, query in zip(records, dataset.queries, strict=True):
            truth = query.extra["answer"]
            assert judge_prompt(query.text, record.answer, truth) in seen
            expected_verdict = truth.lower() in record.answer.lower()
            style = len(record.answer) % 3
            assert record.judged_correct == (None if style == 2 else expected_verdict)
        stats = {label: summary(rows) for label, rows in run.records.items()}
        unparsed = sum(
            1 for rows in run.records.values() for r in rows if r.answer and len(r.answer) % 3 == 2
        )
        assert sum(s["judge_unparsed"] for s in stats.values()) == unparsed
        for s in stats.values():
            assert s["judged_yes"] + s["judged_no"] + s["judge_unparsed"] == s["n"] == 4
        # identical prompts are sent once (baseline and gcs share some top-3 lists)
        distinct = len({p for p in seen if "<context>" in p})
        assert run.n_answer_calls == distinct <= 3 * len(dataset.queries)

        # a re-run costs nothing and gives the same records
        again = run_qa(dataset, SYSTEMS, retrieved, answerer, judge, cache)
    assert server.stats.requests == first_requests
    assert (again.n_answer_calls, again.n_judge_calls) == (0, 0)
    assert again.n_answer_cached == run.n_answer_calls
    assert [r.answer for r in again.records["gcs[mentions] + graph context"]] == [
        r.answer for r in run.records["gcs[mentions] + graph context"]
    ]


def test_failures_are_counted_apart_and_retried(qa_set: Path, fault_server, tmp_path: Path) -> None:
    dataset = load_dataset(qa_set)
    systems = SYSTEMS[:1]
    retrieved = retrieve(dataset, systems, k=3, retriever="bm25")
    broken = fault_server(responder=qa_reply, fixed_status=500)
    answerer, judge = _clients(broken.base_url)
    answerer.max_retries = 1
    with EntityCache(tmp_path / "qa.sqlite") as cache:
        with pytest.warns(UserWarning, match="4 of 4 answers failed"):
            run = run_qa(dataset, systems, retrieved, answerer, judge, cache)
        s = summary(run.records["baseline"])
        assert (s["answer_failed"], s["judged_yes"], s["judged_no"]) == (4, 0, 0)
        assert s["judge_accuracy"] is None  # a failure is never a "no"
        # transient faults are retried by the enrichment client
        flaky = fault_server(responder=qa_reply, rate_429=0.3, rate_500=0.2, retry_after=0.01)
        answerer, judge = _clients(flaky.base_url)
        run = run_qa(dataset, systems, retrieved, answerer, judge, cache)
    assert summary(run.records["baseline"])["answer_failed"] == 0
    assert flaky.stats.statuses[200] < flaky.stats.requests  # faults were injected


def test_cli_writes_tables_per_query_rows_and_the_doc_section(
    qa_set: Path, qa_server: tuple, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, _ = qa_server
    doc = tmp_path / "qa.md"
    doc.write_text(f"# QA\n\nkept\n\n{START}\nSTALE-ROWS\n<!-- qa-eval:end -->\n\ntail\n")
    out = tmp_path / "out"
    argv = [
        "qa-eval",
        "--data",
        str(qa_set),
        "--retriever",
        "bm25",
        "--k",
        "3",
        "--systems",
        "baseline,gcs[mentions],gcs[mentions]:graph,gcs[mentions]:relation",
        "--base-url",
        server.base_url,
        "--model",
        "fake",
        "--cache",
        str(tmp_path / "c.sqlite"),
        "--out",
        str(out),
        "--write-doc",
        str(doc),
        "--no-progress",
    ]
    assert bench_main(argv) == 0
    table = capsys.readouterr().out
    assert "| baseline → gcs[mentions] + graph context |" in table
    assert "| gcs[mentions] → gcs[mentions] + graph context |" in table
    assert "| gcs[mentions] → gcs[mentions] + relation context |" in table
    text = doc.read_text()
    assert text.startswith("# QA\n\nkept\n") and text.endswith("\n\ntail\n")
    assert "STALE-ROWS" not in text
    assert "#### tinyqa (4 questions, top 3)" in text
    summary_json = json.loads((out / "tinyqa" / "summary.json").read_text())
    assert set(summary_json["systems"]) == {
        "baseline",
        "gcs[mentions]",
        "gcs[mentions] + graph context",
        "gcs[mentions] + relation context",
    }
    assert len(summary_json["paired"]) == 5
    rows = (out / "tinyqa" / "per_query.jsonl").read_text().splitlines()
    assert len(rows) == 16 and all(json.loads(r)["answer"] for r in rows)
    requests = server.stats.requests
    assert bench_main(argv) == 0  # resumed from the cache: no new request
    assert server.stats.requests == requests
    with pytest.raises(SystemExit):
        bench_main(
            [
                "qa-eval",
                "--data",
                str(qa_set),
                "--base-url",
                "x",
                "--model",
                "m",
                "--systems",
                "gcs:tree",
            ]
        )


def test_limit_for_cuts_one_set_and_a_misspelled_set_name_fails(
    qa_set: Path, qa_server: tuple, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, _ = qa_server
    out = tmp_path / "out"
    base = [
        "qa-eval",
        "--data",
        str(qa_set),
        "--retriever",
        "bm25",
        "--k",
        "3",
        "--systems",
        "baseline,gcs[mentions]",
        "--base-url",
        server.base_url,
        "--model",
        "fake",
        "--cache",
        str(tmp_path / "c.sqlite"),
        "--out",
        str(out),
        "--no-progress",
    ]
    assert bench_main([*base, "--limit", "3", "--limit-for", f"{qa_set.name}=2"]) == 0
    rows = [json.loads(r) for r in (out / "tinyqa" / "per_query.jsonl").read_text().splitlines()]
    assert len({r["query_id"] for r in rows}) == 2 and len(rows) == 4
    assert json.loads((out / "qa_meta.json").read_text())["limit_for"] == {"tinyqa": 2}
    capsys.readouterr()
    requests = server.stats.requests
    for option, message in (
        ("--limit-for=tinyqa_typo=2", "'tinyqa_typo', which is not a --data"),
        ("--systems-for=tinyqa_typo=baseline", "which is not a --data"),
        ("--limit-for=tinyqa=0", "positive integer, got '0'"),
        ("--limit-for=tinyqa", "wants SET=N, got 'tinyqa'"),
    ):
        assert bench_main([*base, option]) == 2
        assert message in capsys.readouterr().err
    assert server.stats.requests == requests  # bad options fail before any request
