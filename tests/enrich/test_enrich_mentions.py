"""Title mentions in the core, the CLI and both frameworks, on a corpus without hyperlinks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grapher_core import Candidate, ForeignKeys, GraphReranker
from grapher_core.candidates import CorpusObject
from grapher_core.enrich.mentions import add_mentions, find_mentions
from grapher_core.metadata import read_list

LANGUAGES = [
    ("Fortran", "Fortran was developed at IBM in the 1950s for scientific computing."),
    ("ALGOL", "ALGOL influenced Pascal and C; it was designed in 1958 after Fortran."),
    ("Pascal (programming language)", "Pascal was designed by Niklaus Wirth."),
    ("C", "C was created at Bell Labs."),  # one letter: skipped as a title (a hub, not a link)
    ("The", "The is a stopword title."),
]


def corpus() -> list[CorpusObject]:
    return [CorpusObject(f"l{i}", f"{title}\n{body}") for i, (title, body) in
            enumerate(LANGUAGES)]


def test_aliases_word_boundaries_and_skipped_titles() -> None:
    found = find_mentions(corpus())
    assert found[1] == ["Pascal (programming language)", "Fortran"]  # alias without "(...)"
    assert found[0] == []  # "IBM" is no title; "The" and "C" are skipped
    assert "C" not in found[1] and all("The" not in m for m in found)
    words = [CorpusObject("a", "Java\nA language."), CorpusObject("b", "Notes\nJavaScript.")]
    assert find_mentions(words)[1] == []  # "Java" inside "JavaScript" is no match
    words.append(CorpusObject("c", "More\nJava, again."))
    assert find_mentions(words)[2] == ["Java"]


def test_titles_from_metadata_and_input_untouched() -> None:
    objects = [CorpusObject("x", "Ada wrote notes on the Analytical Engine.",
                            {"title": "Ada Lovelace"}),
               CorpusObject("y", "A mechanical computer.", {"title": "Analytical Engine"})]
    metadata = add_mentions(objects)
    assert metadata[0]["mentions"] == ["Analytical Engine"]
    assert "mentions" not in objects[0].metadata


def test_hub_titles_are_dropped() -> None:
    objects = [CorpusObject("hub", "Python\nA language.")] + [
        CorpusObject(f"o{i}", f"Thing {i}\nWritten in Python.") for i in range(30)]
    assert all(m == [] for m in find_mentions(objects, max_share=0.02))
    assert all(m == ["Python"] for m in find_mentions(objects, max_share=None)[1:])


def test_mentions_lift_the_named_passage_with_zero_config() -> None:
    metadata = add_mentions(corpus())
    scores = [0.9, 0.1, 0.5, 0.4, 0.3]
    candidates = [Candidate(o.id, o.text, s, m) for o, s, m in zip(corpus(), scores, metadata,
                                                                      strict=True)]
    reranker = GraphReranker()
    assert ForeignKeys("mentions", target_field="title") in reranker.proximities_for(candidates)
    ranked = reranker.rerank(candidates)
    assert [r.id for r in ranked].index("l1") < 4  # ALGOL, linked to Fortran, moves up


def test_cli_mentions_with_other_field_names(tmp_path: Path) -> None:
    source = tmp_path / "corpus.jsonl"
    source.write_text("".join(json.dumps({"doc": i, "body": f"{t}\n{b}"}) + "\n"
                              for i, (t, b) in enumerate(LANGUAGES)))
    out = tmp_path / "out.jsonl"
    done = subprocess.run([sys.executable, "-m", "grapher_core.cli", "enrich", "--input",
                           str(source), "--output", str(out), "--extractor", "mentions",
                           "--id-field", "doc", "--text-field", "body"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[1]["metadata"]["mentions"] == ["Pascal (programming language)", "Fortran"]
    assert rows[1]["doc"] == 1 and rows[1]["metadata"]["title"] == "ALGOL"


def test_cli_names_the_missing_field(tmp_path: Path) -> None:
    source = tmp_path / "corpus.jsonl"
    source.write_text(json.dumps({"doc": "a", "body": "x"}) + "\n")
    done = subprocess.run([sys.executable, "-m", "grapher_core.cli", "enrich", "--input",
                           str(source), "--output", str(tmp_path / "o.jsonl"), "--extractor",
                           "mentions"], capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "--id-field" in done.stderr


def test_langchain_transformer() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from langchain_grapher import MentionTransformer

    documents = [Document(id=f"l{i}", page_content=f"{t}\n{b}") for i, (t, b) in
                 enumerate(LANGUAGES)]
    out = MentionTransformer().transform_documents(documents)
    assert out[1].metadata["mentions"] == ["Pascal (programming language)", "Fortran"]
    assert out[1].metadata["title"] == "ALGOL" and out[1].id == "l1"
    assert "mentions" not in out[0].metadata  # empty lists are left out (Chroma rejects them)
    assert documents[1].metadata == {}


def test_llamaindex_extractor() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import TextNode

    from llama_index_grapher import GraphERMentionExtractor

    nodes = [TextNode(id_=f"l{i}", text=f"{t}\n{b}") for i, (t, b) in enumerate(LANGUAGES)]
    out = GraphERMentionExtractor().process_nodes(nodes)
    # LlamaIndex default: a JSON string (what every LlamaIndex vector store keeps), read back
    # as the list by the core.
    assert isinstance(out[1].metadata["mentions"], str)
    assert read_list(out[1].metadata["mentions"]) == ["Pascal (programming language)",
                                                      "Fortran"]
    native = GraphERMentionExtractor(list_format="list").process_nodes(nodes)
    assert native[1].metadata["mentions"] == ["Pascal (programming language)", "Fortran"]
    assert out[1].metadata["title"] == "ALGOL"
    assert "mentions" in out[1].excluded_embed_metadata_keys
    assert nodes[1].metadata == {}
