"""Errors that name what is wrong, at the edges: one case per class of the campaign's findings
(a: SemanticKNN vectors and options, b: neighbour sources, c: extreme seeds, d: a blank
question, e: an unsendable API key, f: grapher-bench options and results files, g: qa-eval's
stored texts, h: PENMAN round trip, i: proximity weights and GRAGRanker options). Each case
tries variants of its class, not only the input first reported."""

from __future__ import annotations

import json
import math
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grapher_core import Candidate, CorpusObject, ForeignKeys, GraphReranker
from grapher_core.cli import main
from grapher_core.edges import AdjacentChunks, ChunkLinks, SemanticKNN, SharedEntities
from grapher_core.edges.base import LinkKey
from grapher_core.edges.concepts import SharedConcepts
from grapher_core.enrich.concepts import ConceptGraph, graph_to_penman, penman_to_graph
from grapher_core.enrich.llm import OpenAIEntityExtractor
from grapher_core.errors import ConfigError, GraphERError
from grapher_core.expand import Expansion, GraphExpander
from grapher_core.ranking.seeds import make_seeds


def test_a_semantic_knn_names_the_candidate_and_refuses_bad_options() -> None:
    for bad_vector, said in [
        (np.ones(3), "dimension 3"),
        ("0.1 0.2 0.3 0.4", "str"),
        (["a", "b", "c", "d"], "not a vector of numbers"),
        ([[1.0], [2.0, 3.0]], "not a vector of numbers"),
    ]:
        pool = [
            Candidate("ok-1", embedding=np.ones(4)),
            Candidate("ok-2", embedding=np.arange(4.0)),
            Candidate("the-odd-one", embedding=bad_vector),
        ]
        for knn in (SemanticKNN(), SemanticKNN.paper(k=1, threshold=0.0)):
            with pytest.raises(GraphERError, match="the-odd-one") as error:
                knn.adjacency(pool)
            assert said in str(error.value)
    for options in [
        {"threshold": math.nan},
        {"threshold": -math.inf},
        {"threshold": 1.2},
        {"k": 0},
        {"k": True},
        {"k": 1.5},
    ]:
        for make in (SemanticKNN, SemanticKNN.paper):
            with pytest.raises(ConfigError, match=f"SemanticKNN.{next(iter(options))}"):
                make(**options)  # type: ignore[arg-type]


class _Answering:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def __repr__(self) -> str:
        return "_Answering(stub)"

    def fetch(self, keys: Sequence[LinkKey]) -> Any:
        return self.answer


def test_b_a_neighbour_source_returning_no_candidates_is_named() -> None:
    pool = [
        Candidate("A", "a", 0.9, {"title": "A", "mentions": ["B"]}, np.array([1.0, 0.0])),
        Candidate("C", "c", 0.5, {"title": "C"}, np.array([0.0, 1.0])),
    ]
    mentions = ForeignKeys("mentions", target_field="title")
    for answer, said in [
        (None, "returned None"),
        ([{"id": "B"}], "a dict"),
        ("B", "a str"),
        ([CorpusObject("B", "b")], "a CorpusObject"),
        ([Candidate("B"), 7], "an int"),
    ]:
        expander = GraphExpander([mentions], _Answering(answer), Expansion(seeds=1, hops=1))
        with pytest.raises(GraphERError) as error:
            expander.expand(pool, query_embedding=np.array([1.0, 0.0]))
        message = str(error.value)
        assert "_Answering(stub)" in message and said in message and "Candidate" in message


def test_c_minmax_seeds_of_finite_extreme_scores_are_finite() -> None:
    big = sys.float_info.max
    for scores in ([1e308, -1e308, 0.0], [-big, big], [big, big / 2, -big], [-1e308, 0.0, 1e308]):
        pool = [
            Candidate(f"t{i}", "x", s, {"foreign_keys": [f"t{(i + 1) % len(scores)}"]})
            for i, s in enumerate(scores)
        ]
        with np.errstate(over="raise", invalid="raise"):
            seeds = make_seeds(pool, "minmax")
        assert np.all(np.isfinite(seeds)) and seeds.min() == 0.0 and seeds.max() == 1.0
        for ranker in ("gcs", "ppr"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ranked = GraphReranker([ForeignKeys()], ranker, seed_transform="minmax").rerank(
                    pool
                )
            assert all(math.isfinite(r.score) for r in ranked)


def test_d_a_blank_question_is_refused_before_any_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_model() -> None:
        raise AssertionError("a model was loaded for a blank question")

    monkeypatch.setattr("grapher_core.embeddings.default_embedder", no_model)
    for question in ["", "   ", "\n\t", "\u200b\u00a0"]:  # refused before the corpus is read
        code = main(["rerank", question, "--corpus", str(tmp_path / "never-read.jsonl")])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "question is" in err
        assert "never-read.jsonl" not in err


def test_e_an_api_key_that_cannot_be_sent_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for key in ["", "  ", "sk-key\n", "sk-k\u00e9y"]:
        with pytest.raises(ConfigError, match="api_key"):
            OpenAIEntityExtractor("m", base_url="http://127.0.0.1:9/v1", api_key=key)
        code = main(["enrich", "--input", str(tmp_path / "in.jsonl"), "--output",
                     str(tmp_path / "out.jsonl"), "--extractor", "openai", "--model", "m",
                     "--base-url", "http://127.0.0.1:9/v1", "--api-key", key])  # fmt: skip
        err = capsys.readouterr().err
        assert code == 2 and "--api-key" in err and "in.jsonl" not in err
        assert not (tmp_path / "out.jsonl").exists()  # refused before any input or request


def test_f_grapher_bench_names_the_option_and_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from grapher_bench.cli import main as bench_main

    for argv, flag in [
        (["gat-latency", "--n", "-3"], "--n"),
        (["gat-latency", "--repeats", "0"], "--repeats"),
        (["bench", "--top-n", "-1"], "--top-n"),
        (["hub-memory", "--n", "ten"], "--n"),
    ]:
        with pytest.raises(SystemExit) as done:
            bench_main(argv)
        err = capsys.readouterr().err
        assert done.value.code == 2 and f"argument {flag}:" in err and err.count("\n") == 1
    results = tmp_path / "set" / "dense" / "results.json"
    results.parent.mkdir(parents=True)
    for content in ['{"dataset": ', "[]", json.dumps({"dataset": "d", "results": 3})]:
        results.write_text(content, encoding="utf-8")
        assert bench_main(["bench", "--from-results", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert str(results) in err and "--from-results" in err and "Traceback" not in err


def test_g_qa_eval_stores_a_runaway_answer_cut_and_flagged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from grapher_bench.qa_eval import pipeline
    from grapher_bench.qa_eval.pipeline import MAX_STORED_CHARS, QARecord

    monkeypatch.setattr(pipeline, "_said_cut", False)
    huge = "Answer: " + "word " * 3_600_000  # 18 MB
    rows = []
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for judge in (None, "yes " * 10_000):
            record = QARecord(
                "q", "s", [], 1.0, huge, None, judge, None, 0.0, 0.0, False, True, False, huge[8:]
            )
            rows.append(record.to_json())
    assert all(len(json.dumps(row)) < 4 * MAX_STORED_CHARS for row in rows)
    assert all(row["answer_truncated"] for row in rows)
    assert [row["judge_reply_truncated"] for row in rows] == [False, True]
    assert sum("truncated" in str(w.message) for w in said) == 1


def test_h_penman_written_by_the_library_reads_back() -> None:
    pytest.importorskip("penman", reason="needs the grag extra (penman)")
    roles = ["has part", "x:y", "ARG0-of", 'q"', "(", "instance", "a\nb"]
    graph = ConceptGraph(
        ("new york", "city", "x"),
        (*(("new york", role, "city") for role in roles), ("city", "mod", "x")),
        ("new york",),
    )
    back = penman_to_graph(graph_to_penman(graph))
    assert set(back.nodes) == set(graph.nodes) and set(back.edges) == set(graph.edges)
    for concept in ["line\nbreak", "Upper", " edge", "a;b"]:
        with pytest.raises(GraphERError, match="cannot write PENMAN") as error:
            graph_to_penman(ConceptGraph((concept,)))
        assert repr(concept) in str(error.value)


def test_i_proximity_weights_and_grag_options_are_checked_when_made() -> None:
    proximities = [ForeignKeys, AdjacentChunks, SharedEntities, SemanticKNN, ChunkLinks]
    for make in [*proximities, SharedConcepts]:
        for weight in [math.nan, math.inf, -1, 0, True, "2"]:
            with pytest.raises(GraphERError, match=rf"{make.__name__}\.weight"):
                make(weight=weight)
    pytest.importorskip("torch", reason="needs the grag extra (torch)")
    from grapher_core.learned.grag.ranker import GRAGRanker

    for options in [{"threads": True}, {"threads": 0}, {"concept_format": "xml"}]:
        option = next(iter(options))
        with pytest.raises(ConfigError, match=f"GRAGRanker: {option}"):
            GRAGRanker(**options)  # type: ignore[arg-type]
