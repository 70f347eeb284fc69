"""The user-like corpora (grapher_bench/user_corpora): format, gold, links, and the builders."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from grapher_bench.data import find_datasets, load_dataset
from grapher_bench.user_corpora import CORPORA, DOC_CORPORA, HERE, TABLE_CORPORA
from grapher_bench.user_corpora.build import (
    DATABASES,
    check_gold,
    chunk_html_page,
    chunk_markdown_page,
    normalise_link,
    read_sqlite_schema,
    slugify,
)
from grapher_bench.user_corpora.run import score

TABLE_KEYS = {
    "table",
    "db_id",
    "foreign_keys",
    "columns",
    "column_types",
    "primary_keys",
    "fk_pairs",
}
CHUNK_KEYS = {
    "doc_id",
    "source",
    "chunk_index",
    "n_chunks_in_doc",
    "title",
    "heading",
    "anchors",
    "links",
}


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _corpus(name: str) -> list[dict[str, Any]]:
    return _records(HERE / name / "corpus.jsonl")


def _queries(name: str) -> list[dict[str, Any]]:
    return _records(HERE / name / "queries.jsonl")


# ---------------------------------------------------------------- the committed corpora


def test_the_four_corpora_are_found_by_the_bench_loader() -> None:
    assert [p.name for p in find_datasets(HERE)] == sorted(CORPORA)
    for name in CORPORA:
        dataset = load_dataset(HERE / name)  # refuses duplicate ids and unknown gold ids
        assert dataset.task_type == ("tables" if name in TABLE_CORPORA else "chunks")
        assert len(dataset.queries) >= 12, f"{name} has {len(dataset.queries)} questions"
        assert (HERE / name / "corpus.jsonl").stat().st_size < 1_500_000


@pytest.mark.parametrize("name", CORPORA)
def test_ids_are_unique_and_every_gold_id_exists(name: str) -> None:
    ids = [r["id"] for r in _corpus(name)]
    assert len(ids) == len(set(ids))
    queries = _queries(name)
    assert len({q["id"] for q in queries}) == len(queries)
    known = set(ids)
    for query in queries:
        assert query["text"].strip() and query["note"].strip(), query["id"]
        assert query["gold"] and len(query["gold"]) == len(set(query["gold"])), query["id"]
        assert set(query["gold"]) <= known, (query["id"], set(query["gold"]) - known)
    assert check_gold(HERE / name) == []


@pytest.mark.parametrize("name", TABLE_CORPORA)
def test_table_objects_follow_the_benchmark_format(name: str) -> None:
    objects = _corpus(name)
    by_id = {o["id"]: o for o in objects}
    assert {o["metadata"]["db_id"] for o in objects} == set(DATABASES[name])
    for obj in objects:
        meta = obj["metadata"]
        assert set(meta) == TABLE_KEYS, obj["id"]
        assert obj["id"] == f"{meta['db_id']}.{meta['table']}"
        assert len(meta["columns"]) == len(meta["column_types"]) > 0
        assert set(meta["primary_keys"]) <= set(meta["columns"])
        expected = f"Table: {meta['table']}\nColumns: " + ", ".join(
            f"{c} ({t})" for c, t in zip(meta["columns"], meta["column_types"], strict=True)
        )
        assert obj["text"] == expected
        for other in meta["foreign_keys"]:  # linked in both directions, inside one database
            assert other in by_id and other.split(".")[0] == meta["db_id"], (obj["id"], other)
            assert obj["id"] in by_id[other]["metadata"]["foreign_keys"], (obj["id"], other)
        for mine, other, theirs in meta["fk_pairs"]:
            assert mine in meta["columns"] and theirs in by_id[other]["metadata"]["columns"]
    linked = sum(1 for o in objects if o["metadata"]["foreign_keys"])
    assert linked >= 0.8 * len(objects)  # real applications declare their foreign keys


@pytest.mark.parametrize("name", TABLE_CORPORA)
def test_table_questions_name_the_tables_their_sql_joins(name: str) -> None:
    for query in _queries(name):
        db_id = query["db_id"]
        tables = {f"{db_id}.{t}" for t in re.findall(r"(?:FROM|JOIN)\s+(\w+)", query["sql"])}
        assert tables == set(query["gold"]), query["id"]
    multi = sum(1 for q in _queries(name) if len(q["gold"]) >= 2)
    assert multi >= 0.8 * len(_queries(name))


def _pages(objects: list[dict[str, Any]]) -> tuple[dict[str, set[str]], dict[str, dict[str, Any]]]:
    anchors: dict[str, set[str]] = defaultdict(set)
    for obj in objects:
        anchors[obj["metadata"]["source"]].update(obj["metadata"]["anchors"])
    return anchors, {o["id"]: o for o in objects}


@pytest.mark.parametrize("name", DOC_CORPORA)
def test_chunks_follow_the_contract(name: str) -> None:
    objects = _corpus(name)
    per_doc: dict[str, list[int]] = defaultdict(list)
    for obj in objects:
        meta = obj["metadata"]
        assert set(meta) == CHUNK_KEYS, obj["id"]
        assert meta["doc_id"] == meta["source"]
        assert obj["id"] == f"{meta['source']}#{meta['chunk_index']:03d}"
        assert obj["text"].strip() and meta["title"] and meta["heading"]
        assert 0 < len(obj["text"].split()) <= 400, obj["id"]
        assert all(isinstance(a, str) and a for a in meta["anchors"])
        for link in meta["links"]:
            assert not re.match(r"^[a-z]+:", link) and not link.startswith(("/", "../")), link
        per_doc[meta["doc_id"]].append(meta["chunk_index"])
    for doc_id, indexes in per_doc.items():
        assert sorted(indexes) == list(range(len(indexes))), doc_id
    for obj in objects:
        assert obj["metadata"]["n_chunks_in_doc"] == len(per_doc[obj["metadata"]["doc_id"]])
    sizes = sorted(len(o["text"].split()) for o in objects)
    assert 100 <= sizes[len(sizes) // 2] <= 300  # the median chunk is 100-300 words
    assert len(per_doc) >= 30 and len(objects) >= 3 * len(per_doc) * 0.8


@pytest.mark.parametrize("name", DOC_CORPORA)
def test_links_resolve_to_pages_and_anchors_of_the_corpus(name: str) -> None:
    objects = _corpus(name)
    anchors, _ = _pages(objects)
    unresolved, cross_page = [], 0
    for obj in objects:
        for link in obj["metadata"]["links"]:
            page, _, anchor = link.partition("#")
            if page not in anchors:
                continue  # a page left out of the corpus (an index, a stub)
            cross_page += page != obj["metadata"]["source"]
            if anchor and anchor not in anchors[page]:
                unresolved.append((obj["id"], link))
    assert unresolved == []
    assert cross_page >= 150


@pytest.mark.parametrize("name", DOC_CORPORA)
def test_doc_questions_are_two_hop_along_a_link(name: str) -> None:
    objects = _corpus(name)
    _, by_id = _pages(objects)
    for query in _queries(name):
        gold = query["gold"]
        assert 2 <= len(gold) <= 3, query["id"]
        pages = {by_id[g]["metadata"]["source"] for g in gold}
        assert len(pages) >= 2, f"{query['id']}: gold on one page"

        def linked_pages(chunk_id: str) -> set[str]:
            meta = by_id[chunk_id]["metadata"]
            near = [f"{meta['source']}#{meta['chunk_index'] + d:03d}" for d in (-1, 0, 1)]
            return {
                link.partition("#")[0]
                for n in near
                if n in by_id
                for link in by_id[n]["metadata"]["links"]
            }

        assert any(
            linked_pages(a) & {by_id[b]["metadata"]["source"]} for a in gold for b in gold if a != b
        ), f"{query['id']}: no gold chunk (or its neighbour) links to another gold chunk's page"


# ---------------------------------------------------------------- the builders


def test_normalise_link() -> None:
    assert normalise_link("ref/sprite.html", "mask.html#pygame.mask.from_surface", ".html") == (
        "ref/mask.html#pygame.mask.from_surface"
    )
    assert normalise_link("tut/A.html", "../ref/surface.html", ".html") == "ref/surface.html"
    assert normalise_link("ref/a.html", "#x", ".html") == "ref/a.html#x"
    assert normalise_link("ref/a.html", "https://www.pygame.org/", ".html") is None
    assert normalise_link("ref/a.html", "../../outside.html", ".html") is None
    assert normalise_link("ref/a.html", "../_static/logo.png", ".html") is None
    assert normalise_link("extensions/toc.md", "../library.md#extensions", ".md") == (
        "library.md#extensions"
    )
    assert normalise_link("index.md", "extensions/", ".md") == "extensions/index.md"
    assert normalise_link("a.md", "mailto:x@y.z", ".md") is None


def test_slugify_matches_python_markdown_toc() -> None:
    assert slugify("Key/Value Pairs") == "keyvalue-pairs"
    assert slugify("Running Python-Markdown's Tests") == "running-python-markdowns-tests"
    assert slugify("  The Basics ") == "the-basics"


def test_markdown_chunks_have_slugs_explicit_ids_links_and_no_code_span_links() -> None:
    page = (
        "---\ntitle: Demo Page\n---\n\n# Intro { #start }\n\n"
        + "Some words here. " * 40
        + "\nSee [the toc](../extensions/toc.md#usage) and [ref][] and `[not](a.md)`.\n\n"
        "[ref]: other.md#part\n\n## Second Part\n\n"
        + "More words. "
        * 60
        + "\n\n```\n# not a heading\n[not a link](x.md)\n```\n\n"
        "**`css_class`**{ #css_class }: an option\n"
    )
    chunks = chunk_markdown_page("docs/page.md", page)
    assert [c["id"] for c in chunks] == ["docs/page.md#000", "docs/page.md#001"]
    first, second = chunks
    assert first["metadata"]["title"] == "Demo Page"
    assert first["metadata"]["anchors"] == ["start"]
    assert first["metadata"]["links"] == ["extensions/toc.md#usage", "docs/other.md#part"]
    assert "[not](a.md)" in first["text"] and "[the toc]" not in first["text"]
    assert second["metadata"]["heading"] == "Second Part"
    assert second["metadata"]["anchors"] == ["second-part", "css_class"]
    assert second["metadata"]["links"] == []
    assert "# not a heading" in second["text"]


def test_html_chunks_follow_sections_anchors_and_links() -> None:
    body = "".join(
        f'<dl><dt id="mod.f{i}">f{i}()<a class="headerlink" href="#mod.f{i}">¶</a></dt>'
        f'<dd><p>{"word " * 90}see <a href="other.html#mod.g"><code>g()</code>'
        f'<span class="tooltip-content">tooltip</span></a>.</p></dd></dl>'
        for i in range(3)
    )
    page = (
        "<html><head><title>mod &#8212; pkg docs</title></head><body>"
        '<div class="nav"><a href="nav.html">nav</a></div>'
        f'<div class="body" role="main"><section id="mod"><h1>mod</h1>{body}</section></div>'
        '<div class="footer"><a href="foot.html">x</a></div></body></html>'
    )
    chunks = chunk_html_page("ref/mod.html", page)
    assert len(chunks) == 3
    assert chunks[0]["metadata"]["title"] == "mod"
    assert chunks[0]["metadata"]["anchors"] == ["mod", "mod.f0"]
    assert chunks[1]["metadata"]["heading"] == "mod.f1"
    assert chunks[1]["metadata"]["anchors"] == ["mod.f1"]
    assert all(c["metadata"]["links"] == ["ref/other.html#mod.g"] for c in chunks)
    text = " ".join(c["text"] for c in chunks)
    assert "tooltip" not in text and "¶" not in text and "nav" not in text


def test_read_sqlite_schema_links_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE studies (study_id INTEGER PRIMARY KEY, study_name VARCHAR(512));"
            "CREATE TABLE trials (trial_id INTEGER PRIMARY KEY, study_id INTEGER"
            " REFERENCES studies (study_id), parent INTEGER REFERENCES trials);"
            "CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT);"
            "CREATE VIRTUAL TABLE notes_fts USING fts5(body);"
        )
    db.close()
    objects = {o["id"]: o for o in read_sqlite_schema(path, "app")}
    assert sorted(objects) == ["app.notes", "app.notes_fts", "app.studies", "app.trials"]
    trials = objects["app.trials"]["metadata"]
    assert trials["foreign_keys"] == ["app.studies"]
    assert ["study_id", "app.studies", "study_id"] in trials["fk_pairs"]
    assert ["parent", "app.trials", "trial_id"] in trials["fk_pairs"]  # self link, no edge
    assert objects["app.studies"]["metadata"]["foreign_keys"] == ["app.trials"]
    assert objects["app.studies"]["text"] == (
        "Table: studies\nColumns: study_id (integer), study_name (varchar(512))"
    )
    assert objects["app.studies"]["metadata"]["primary_keys"] == ["study_id"]


def test_optuna_database_matches_the_committed_corpus(tmp_path: Path) -> None:
    pytest.importorskip("optuna", reason="needs the corpora dependency group")
    from grapher_bench.user_corpora.build import create_database

    create_database("optuna", tmp_path / "optuna.sqlite")
    built = read_sqlite_schema(tmp_path / "optuna.sqlite", "optuna")
    committed = [o for o in _corpus("ml_tracking_tables") if o["metadata"]["db_id"] == "optuna"]
    assert built == committed


def test_score_counts_gold_at_5_and_perfect_recall() -> None:
    gold = {"q1": ["a", "b"], "q2": ["c"]}
    rankings = {"q1": ["a", "x", "y", "z", "w", "b"], "q2": ["c"]}
    result = score(rankings, gold)
    assert (result.gold_at_5, result.gold_total) == (2, 3)
    assert result.pr5 == 0.5 and result.pr10 == 1.0 and result.questions == 2


def test_markdown_links_study_compares_the_two_readers(tmp_path: Path) -> None:
    """The regex reader and markdown-it-py on one README: both read inline and reference links
    and leave the badge image out; only the parser reads a reference link whose text is a
    reference image (``[![ci][badge]][ci-link]``, as badge rows are written)."""
    pytest.importorskip("markdown_it")
    from grapher_bench.user_corpora.markdown_links import compare

    info = tmp_path / "demo-1.0.dist-info"
    info.mkdir()
    body = (
        "# Demo\n\nSee [the guide](https://x.example/guide.html) and [ref][r].\n\n"
        "[![ci][badge]][ci-link]\n\n"
        "[r]: https://x.example/ref.html\n[badge]: https://img.shields.io/x.svg\n"
        "[ci-link]: https://x.example/ci\n" + "padding " * 30
    )
    info.joinpath("METADATA").write_text(
        "Metadata-Version: 2.1\nName: demo\nDescription-Content-Type: text/markdown\n\n" + body,
        encoding="utf-8",
    )
    documents, by_regex, by_parser, differences = compare(tmp_path)
    assert (documents, by_regex, by_parser) == (1, 2, 3)
    assert [(d.only_regex, d.only_parser) for d in differences] == [((), ("https://x.example/ci",))]
