"""The LLM reranker peer (``llm-rerank``) and GraphER stacked on it (``llm-rerank+<row>``),
against the scripted chat server: prompt filling, reply parsing, fallback and its count, the
cache, the stack's seeds, and the bench / qa-eval command lines."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from enrich_fault_server import FaultConfig, FaultServer, qa_reply

from grapher_bench.peers.llm_rerank import (
    ENV_BASE_URL,
    ENV_MODEL,
    TAIL,
    LLMEndpoint,
    LLMReranker,
    is_llm_ranker,
    llm_peer_rankings,
    order_by_choices,
    parse_choices,
    stacked_row,
    using_llm,
)
from grapher_bench.peers.rankers import is_peer, peer_graph
from grapher_bench.qa_eval.prompts import CHOICE_SELECT_TEMPLATE, choice_select_prompt
from grapher_core.candidates import Candidate
from grapher_core.enrich.cache import EntityCache
from grapher_core.enrich.completion import OpenAITextCompleter


def test_the_prompt_is_llamaindexs_choice_select_filled_per_batch() -> None:
    default_prompts = pytest.importorskip("llama_index.core.prompts.default_prompts")
    assert CHOICE_SELECT_TEMPLATE == default_prompts.DEFAULT_CHOICE_SELECT_PROMPT_TMPL
    filled = choice_select_prompt("Who founded {query_str}?", ["Alpha\ntext a ", "Bravo"])
    assert filled.startswith("A list of documents is shown below.")
    assert filled.endswith(
        "Let's try this now: \n\nDocument 1:\nAlpha\ntext a\n\nDocument 2:\nBravo\n"
        "Question: Who founded {query_str}?\nAnswer:\n"
    )
    assert "Doc: 9, Relevance: 7\nDoc: 3, Relevance: 4\n" in filled  # its answer format


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            "Doc: 9, Relevance: 7\nDoc: 3, Relevance: 4\nDoc: 7, Relevance: 3",
            [(8, 7), (2, 4), (6, 3)],
        ),
        ("Sure! Here are the documents:\n\nDoc: 2, Relevance: 9\n\nHope it helps.", [(1, 9)]),
        ("**Doc: 4**, Relevance: 8/10\n- Document 1 - relevance 6", [(3, 8), (0, 6)]),
        ("Doc: 2, Relevance: 9; Doc: 5, Relevance: 2", [(1, 9), (4, 2)]),
        ("Doc: 11, Relevance: 9\nDoc: 0, Relevance: 9\nDoc: 3, Relevance: 5", [(2, 5)]),
        ("Doc: 3, Relevance: 8\nDoc: 3, Relevance: 2\nDoc: 1, Relevance: 4", [(2, 8), (0, 4)]),
        ("Doc: 6, Relevance: 85\nDoc: 5, Relevance: 0", [(5, 10), (4, 1)]),  # clipped to 1-10
        ("Doc: 7\nDoc: 2", [(6, 1), (1, 1)]),  # no relevance: 1
        ('[{"doc": 4, "relevance": 9}, {"doc": 12, "relevance": 9}]', [(3, 9)]),
        ("<think>Doc: 1, Relevance: 10?</think>\nDoc: 2, Relevance: 6", [(1, 6)]),
        ("Document 1:\nAlpha Corp is a toy maker.\n\nDocument 2:\nBravo", []),  # the listing echoed
        ("None of the documents are relevant.", []),
        ("I'm sorry, I can't help with that.", []),
        ("", []),
        (None, []),
    ],
)
def test_choice_replies_in_several_formats(
    reply: str | None, expected: list[tuple[int, float]]
) -> None:
    assert parse_choices(reply, 10) == [(i, float(r)) for i, r in expected]


def test_named_documents_first_the_others_in_retriever_order() -> None:
    # pool of 25 in retriever order; batch 0 covers 0-9, batch 1 covers 10-19
    order, scores = order_by_choices(25, [[(3, 5.0), (0, 9.0)], [(1, 9.0), (4, 5.0)]], 10)
    # relevance first; ties keep the order named, batch by batch (LlamaIndex's stable sort)
    assert order[:4] == [0, 11, 3, 14]
    rest = [p for p in range(25) if p not in (0, 11, 3, 14)]
    assert order[4:] == rest
    assert scores[:4] == [0.9, 0.9, 0.5, 0.5]
    assert scores[4:] == [TAIL / (p + 1) for p in rest]
    assert all(a >= b for a, b in itertools.pairwise(scores))
    assert max(scores[4:]) < 0.1  # below any named document, whatever its relevance
    assert order_by_choices(3, [[]], 10) == ([0, 1, 2], [TAIL, TAIL / 2, TAIL / 3])


def _pool(n: int) -> list[Candidate]:
    return [Candidate(f"d{i}", f"passage number {i}", float(n - i)) for i in range(n)]


def _completer(server: FaultServer) -> OpenAITextCompleter:
    return OpenAITextCompleter(
        "fake", version="choice-select-test", base_url=server.base_url, max_retries=0, timeout=10
    )


def test_reranker_windows_batches_parses_falls_back_and_caches(tmp_path: Path) -> None:
    pytest.importorskip("openai")  # the chat client the reranker talks through
    seen: list[str] = []

    def respond(messages: list[dict[str, Any]]) -> str:
        prompt = str(messages[-1]["content"])
        seen.append(prompt)
        first = int(re.findall(r"passage number (\d+)", prompt.split("Let's try this now:")[1])[0])
        if "q-unparsed" in prompt:
            return "I think the second one, maybe."
        if first == 0:
            return "Doc: 5, Relevance: 6\nDoc: 2, Relevance: 9\nDoc: 2, Relevance: 1\nDoc: 14, R"
        return "Here you go:\n- Doc: 1, Relevance: 8 (mentions it)\n- Doc: 99, Relevance: 10"

    pools = [_pool(25), _pool(25), _pool(7)]
    queries = ["q-main", "q-unparsed", "q-short"]
    with (
        FaultServer(FaultConfig(responder=respond), lifetime=60) as server,
        EntityCache(tmp_path / "c.sqlite") as cache,
    ):
        reranker = LLMReranker(_completer(server), cache)
        rankings, stats, timings = reranker.rank(queries, pools)
        first = server.stats.requests
        again, stats_again, _ = reranker.rank(queries, pools)
        assert server.stats.requests == first  # a rerun costs no request
    # windows of 20 in batches of 10: 2 + 2 + 1 prompts, each the filled template
    assert first == 5 and stats.prompts == 5 and (stats.computed, stats.cached) == (5, 0)
    assert (stats_again.computed, stats_again.cached) == (0, 5)
    texts = [c.text for c in pools[0]]
    assert choice_select_prompt("q-main", texts[:10]) in seen
    assert choice_select_prompt("q-main", texts[10:20]) in seen
    assert choice_select_prompt("q-short", texts[:7]) in seen
    assert not any("passage number 20\n" in p for p in seen)  # beyond the window: not read
    main, unparsed, short = rankings
    # batch 1: doc 2 (9) then doc 5 (6), the duplicate dropped; batch 2: doc 1 (pos 10) at 8
    assert main.order[:3] == [1, 10, 4]
    assert main.order[3:] == [p for p in range(25) if p not in (1, 10, 4)]
    assert main.scores[:3] == [0.9, 0.8, 0.6]
    # nothing parseable: the retriever's order, counted
    assert unparsed.order == list(range(25))
    assert stats.unparsed == 2 and stats.fallback_queries == 1 and stats.failed == 0
    assert short.order[:2] == [1, 4] and sorted(short.order) == list(range(7))
    assert [r.order for r in again] == [r.order for r in rankings]
    assert len(timings) == 3 and "2 named no usable document" in stats.note()


def test_failed_requests_fall_back_and_are_retried(tmp_path: Path) -> None:
    pytest.importorskip("openai")  # the chat client the reranker talks through
    with (
        FaultServer(FaultConfig(fixed_status=500), lifetime=60) as broken,
        EntityCache(tmp_path / "c.sqlite") as cache,
    ):
        rankings, stats, _ = LLMReranker(_completer(broken), cache).rank(["q"], [_pool(5)])
    assert rankings[0].order == [0, 1, 2, 3, 4] and stats.failed == 1 and stats.unparsed == 0
    with FaultServer(FaultConfig(responder=lambda m: "Doc: 3, Relevance: 7"), lifetime=60) as ok:
        with EntityCache(tmp_path / "c.sqlite") as cache:
            rankings, stats, _ = LLMReranker(_completer(ok), cache).rank(["q"], [_pool(5)])
        assert ok.stats.requests == 1  # the failure was not kept as an answer
    assert rankings[0].order[0] == 2 and stats.failed == 0


def test_names_graphs_and_refusals() -> None:
    assert is_llm_ranker("llm-rerank") and is_llm_ranker("llm-rerank+gcs[mentions]")
    assert is_peer("llm-rerank+gcs") and not is_llm_ranker("gcs")
    assert peer_graph("llm-rerank", "passages") == "none"
    assert peer_graph("llm-rerank+gcs[mentions]", "passages") == "mentions"
    assert stacked_row("llm-rerank+ppr", "tables") == ("ppr", "fk")
    for bad, said in (
        ("llm-rerank+baseline", "with a graph ranker"),
        ("llm-rerank+expand-gcs", "with a graph ranker"),
        ("llm-rerank+gcs[nonsense]", "nonsense"),
        ("llm-rerank+gcs[mentions", "expected llm-rerank+RANKER"),
    ):
        with pytest.raises(ValueError, match=re.escape(said)):
            peer_graph(bad, "passages")
    with pytest.raises(ValueError, match="http"):
        LLMEndpoint("localhost:8080", "m")


@pytest.fixture
def rerank_server() -> Any:
    server = FaultServer(FaultConfig(responder=qa_reply), lifetime=120).start()
    yield server
    server.stop()


def test_the_stacks_seed_graphers_ranking_from_the_llm(
    qa_set: Path, rerank_server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("bm25s")
    from grapher_bench.data import load_dataset
    from grapher_bench.runner import _enriched_metadata, expand_rankers, prepare_candidates
    from grapher_core.rerank import GraphReranker

    dataset = load_dataset(qa_set)
    specs = expand_rankers(["llm-rerank+gcs", "llm-scores+gcs"], dataset.task_type, ["mentions"])
    assert [(s.label, s.ranker, s.graph) for s in specs] == [
        ("llm-rerank+gcs", "llm-rerank+gcs[mentions]", "mentions"),
        ("llm-scores+gcs", "llm-scores+gcs[mentions]", "mentions"),
    ]
    metadata = _enriched_metadata(dataset, specs, [], False)
    pools, _ = prepare_candidates(dataset, "bm25", metadata, top_n=8, progress=False)
    seen: list[list[Any]] = []
    rerank = GraphReranker.rerank

    def spy(self: GraphReranker, candidates: Any, **kwargs: Any) -> Any:
        seen.append(list(candidates))
        return rerank(self, candidates, **kwargs)

    monkeypatch.setattr(GraphReranker, "rerank", spy)
    endpoint = LLMEndpoint(rerank_server.base_url, "fake", cache=tmp_path / "c.sqlite")
    notes: list[str] = []
    with using_llm(endpoint):
        alone, _ = llm_peer_rankings("llm-rerank", dataset, pools)
        by_order, _ = llm_peer_rankings("llm-rerank+gcs[mentions]", dataset, pools, notes=notes)
        by_scores, _ = llm_peer_rankings("llm-scores+gcs[mentions]", dataset, pools)
    assert rerank_server.stats.requests == len(dataset.queries)  # the stacks reused the replies
    n = len(dataset.queries)
    given_order, given_scores = seen[:n], seen[n:]
    graph = proximities_for_mentions()
    moved = 0
    for index, ((ids, scores, _r), pool) in enumerate(zip(alone, pools, strict=True)):
        by_id = dict(zip(ids, scores, strict=True))
        # llm-rerank+: the candidates arrive in the LLM reranker's order, seeded by the
        # library's default rule (the order), as chaining the two postprocessors does
        assert [c.id for c in given_order[index]] == ids
        expected = rerank(GraphReranker(graph, "gcs", explain=0), given_order[index])
        assert by_order[index][0] == [r.id for r in expected]
        retriever_rank = {c.id: rank for rank, c in enumerate(pool, start=1)}
        assert by_order[index][2] == [retriever_rank[i] for i in by_order[index][0]]
        # llm-scores+: retriever order, the LLM's scores read as seeds
        assert [c.id for c in given_scores[index]] == [c.id for c in pool]
        assert [c.score for c in given_scores[index]] == [by_id[c.id] for c in pool]
        expected = rerank(
            GraphReranker(graph, "gcs", explain=0, seed_transform="raw"), given_scores[index]
        )
        assert by_scores[index][0] == [r.id for r in expected]
        assert by_scores[index][2] == [r.original_rank for r in expected]
        plain = [r.id for r in rerank(GraphReranker(graph, "gcs", explain=0), list(pool))]
        moved += by_order[index][0] != plain and by_scores[index][0] != plain
    # the LLM reaches the graph ranker: neither stack is GCS on the retriever's order
    assert moved > 0
    assert "llm-rerank+gcs[mentions]: 4 choice-select replies (0 new, 4 cached)" in notes[0]


def proximities_for_mentions() -> Any:
    from grapher_bench.enrichment import proximities_for

    return proximities_for("mentions")


def _bench(qa_set: Path, out: Path, *extra: str) -> list[str]:
    return [
        "bench", "--data", str(qa_set), "--retriever", "bm25", "--graphs", "mentions",
        "--out", str(out), "--no-progress", *extra,
    ]  # fmt: skip


def test_bench_refuses_an_llm_ranker_without_an_endpoint(
    qa_set: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from grapher_bench.cli import main as bench_main

    monkeypatch.delenv(ENV_BASE_URL, raising=False)
    monkeypatch.delenv(ENV_MODEL, raising=False)
    out = tmp_path / "out"
    assert bench_main(_bench(qa_set, out, "--rankers", "baseline,llm-rerank+gcs")) == 2
    err = capsys.readouterr().err
    assert "an llm ranker needs an OpenAI-compatible endpoint" in err
    assert "--llm-base-url" in err and ENV_MODEL in err and "Traceback" not in err
    assert not out.exists()  # refused before any work
    monkeypatch.setenv(ENV_BASE_URL, "http://127.0.0.1:9/v1")  # half an endpoint
    assert bench_main(_bench(qa_set, out, "--rankers", "llm-rerank")) == 2
    assert "got only the URL" in capsys.readouterr().err


def test_bench_runs_the_llm_rows_resumably(
    qa_set: Path,
    rerank_server: FaultServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("bm25s")
    from grapher_bench.cli import main as bench_main

    monkeypatch.setenv("GRAPHER_CACHE", str(tmp_path / "cache"))
    argv = _bench(
        qa_set, tmp_path / "out", "--rankers", "baseline,gcs,llm-rerank,llm-rerank+gcs",
        "--llm-base-url", rerank_server.base_url, "--llm-model", "fake",
    )  # fmt: skip
    assert bench_main(argv) == 0
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert set(results["results"]) == {"baseline", "gcs", "llm-rerank", "llm-rerank+gcs"}
    notes = [n for n in results["notes"] if n.startswith("llm-rerank")]
    assert len(notes) == 2 and "4 choice-select replies (4 new, 0 cached)" in notes[0]
    assert (tmp_path / "cache" / "qa-eval.sqlite").is_file()  # qa-eval's reply cache
    requests = rerank_server.stats.requests
    assert requests == 4
    assert bench_main(argv) == 0  # from the cache
    assert rerank_server.stats.requests == requests
    assert "| bm25 + llm-rerank+gcs |" in capsys.readouterr().out


def test_qa_eval_answers_from_the_llm_reranked_top_k(
    qa_set: Path, qa_server: tuple[FaultServer, list[str]], tmp_path: Path
) -> None:
    pytest.importorskip("bm25s")
    from grapher_bench.cli import main as bench_main

    server, seen = qa_server
    out = tmp_path / "out"
    argv = [
        "qa-eval", "--data", str(qa_set), "--retriever", "bm25", "--k", "3",
        "--systems", "baseline,llm-rerank,llm-rerank+gcs[mentions]:graph",
        "--base-url", server.base_url, "--model", "fake", "--cache", str(tmp_path / "c.sqlite"),
        "--out", str(out), "--no-progress",
    ]  # fmt: skip
    assert bench_main(argv) == 0
    choice_prompts = [p for p in seen if p.startswith("A list of documents is shown below.")]
    assert len(choice_prompts) == 4  # one batch per question, shared by both llm systems
    meta = json.loads((out / "qa_meta.json").read_text())
    assert meta["llm_rerank"]["model"] == "fake"
    assert meta["prompts"]["llm_rerank"] == "choice-select-v1"
    summary = json.loads((out / "tinyqa" / "summary.json").read_text())
    assert any(n.startswith("llm-rerank:") for n in summary["retrieval_notes"])
    assert "*llm-rerank: 4 choice-select replies" in (out / "table.md").read_text()
    rows = [json.loads(r) for r in (out / "tinyqa" / "per_query.jsonl").read_text().splitlines()]
    tops = {r["system"]: r["top_ids"] for r in rows if r["query_id"] == "q1"}
    assert set(tops) == {"baseline", "llm-rerank", "llm-rerank+gcs[mentions] + graph context"}
    requests = server.stats.requests
    assert bench_main(argv) == 0
    assert server.stats.requests == requests
