"""Title mentions in the core, the CLI and both frameworks, on a corpus without hyperlinks."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from grapher_core import Candidate, ForeignKeys, GraphReranker
from grapher_core.candidates import CorpusObject
from grapher_core.enrich.mentions import MentionIndex, add_mentions, find_mentions
from grapher_core.metadata import read_list

LANGUAGES = [
    ("Fortran", "Fortran was developed at IBM in the 1950s for scientific computing."),
    ("ALGOL", "ALGOL influenced Pascal and C; it was designed in 1958 after Fortran."),
    ("Pascal (programming language)", "Pascal was designed by Niklaus Wirth."),
    ("C", "C was created at Bell Labs."),  # one letter: skipped as a title (a hub, not a link)
    ("The", "The is a stopword title."),
]


# Finding mentions needs pyahocorasick (the 'mentions' extra); naming a missing field does not.
needs_mentions = pytest.mark.skipif(
    find_spec("ahocorasick") is None, reason="needs pyahocorasick (the 'mentions' extra)"
)


def corpus() -> list[CorpusObject]:
    return [CorpusObject(f"l{i}", f"{title}\n{body}") for i, (title, body) in enumerate(LANGUAGES)]


@needs_mentions
def test_aliases_word_boundaries_and_skipped_titles() -> None:
    found = find_mentions(corpus())
    assert found[1] == ["Pascal (programming language)", "Fortran"]  # alias without "(...)"
    assert found[0] == []  # "IBM" is no title; "The" and "C" are skipped
    assert "C" not in found[1] and all("The" not in m for m in found)
    words = [CorpusObject("a", "Java\nA language."), CorpusObject("b", "Notes\nJavaScript.")]
    assert find_mentions(words)[1] == []  # "Java" inside "JavaScript" is no match
    words.append(CorpusObject("c", "More\nJava, again."))
    assert find_mentions(words)[2] == ["Java"]


@needs_mentions
def test_titles_from_metadata_and_input_untouched() -> None:
    objects = [
        CorpusObject("x", "Ada wrote notes on the Analytical Engine.", {"title": "Ada Lovelace"}),
        CorpusObject("y", "A mechanical computer.", {"title": "Analytical Engine"}),
    ]
    metadata = add_mentions(objects)
    assert metadata[0]["mentions"] == ["Analytical Engine"]
    assert "mentions" not in objects[0].metadata


@needs_mentions
def test_hub_titles_are_dropped() -> None:
    objects = [CorpusObject("hub", "Python\nA language.")] + [
        CorpusObject(f"o{i}", f"Thing {i}\nWritten in Python.") for i in range(30)
    ]
    assert all(m == [] for m in find_mentions(objects, max_share=0.02))
    assert all(m == ["Python"] for m in find_mentions(objects, max_share=None)[1:])


@needs_mentions
def test_mentions_lift_the_named_passage_with_zero_config() -> None:
    metadata = add_mentions(corpus())
    scores = [0.9, 0.1, 0.5, 0.4, 0.3]
    candidates = [
        Candidate(o.id, o.text, s, m) for o, s, m in zip(corpus(), scores, metadata, strict=True)
    ]
    reranker = GraphReranker()
    assert ForeignKeys("mentions", target_field="title") in reranker.proximities_for(candidates)
    ranked = reranker.rerank(candidates)
    assert [r.id for r in ranked].index("l1") < 4  # ALGOL, linked to Fortran, moves up


@needs_mentions
def test_cli_mentions_with_other_field_names(tmp_path: Path) -> None:
    source = tmp_path / "corpus.jsonl"
    source.write_text(
        "".join(
            json.dumps({"doc": i, "body": f"{t}\n{b}"}) + "\n" for i, (t, b) in enumerate(LANGUAGES)
        )
    )
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grapher_core.cli",
            "enrich",
            "--input",
            str(source),
            "--output",
            str(out),
            "--extractor",
            "mentions",
            "--id-field",
            "doc",
            "--text-field",
            "body",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[1]["metadata"]["mentions"] == ["Pascal (programming language)", "Fortran"]
    assert rows[1]["doc"] == 1 and rows[1]["metadata"]["title"] == "ALGOL"


def test_cli_names_the_missing_field(tmp_path: Path) -> None:
    source = tmp_path / "corpus.jsonl"
    source.write_text(json.dumps({"doc": "a", "body": "x"}) + "\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grapher_core.cli",
            "enrich",
            "--input",
            str(source),
            "--output",
            str(tmp_path / "o.jsonl"),
            "--extractor",
            "mentions",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0 and "--id-field" in done.stderr


@needs_mentions
def test_langchain_transformer() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from langchain_grapher import MentionTransformer

    documents = [
        Document(id=f"l{i}", page_content=f"{t}\n{b}") for i, (t, b) in enumerate(LANGUAGES)
    ]
    out = MentionTransformer().transform_documents(documents)
    assert out[1].metadata["mentions"] == ["Pascal (programming language)", "Fortran"]
    assert out[1].metadata["title"] == "ALGOL" and out[1].id == "l1"
    assert "mentions" not in out[0].metadata  # empty lists are left out (Chroma rejects them)
    assert documents[1].metadata == {}


@needs_mentions
def test_llamaindex_extractor() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import TextNode

    from llama_index_grapher import GraphERMentionExtractor

    nodes = [TextNode(id_=f"l{i}", text=f"{t}\n{b}") for i, (t, b) in enumerate(LANGUAGES)]
    out = GraphERMentionExtractor().process_nodes(nodes)
    # LlamaIndex default: a JSON string (what every LlamaIndex vector store keeps), read back
    # as the list by the core.
    assert isinstance(out[1].metadata["mentions"], str)
    assert read_list(out[1].metadata["mentions"]) == ["Pascal (programming language)", "Fortran"]
    native = GraphERMentionExtractor(list_format="list").process_nodes(nodes)
    assert native[1].metadata["mentions"] == ["Pascal (programming language)", "Fortran"]
    assert out[1].metadata["title"] == "ALGOL"
    assert "mentions" in out[1].excluded_embed_metadata_keys
    assert nodes[1].metadata == {}


# docs/first_pipeline.md's worked example, exactly as printed there (both frameworks).
PAGES = {
    "Fortran": "Fortran was developed at IBM in the 1950s for scientific computing.",
    "ALGOL": "ALGOL was designed in 1958 by a committee; it introduced block structure "
    "and influenced Pascal.",
    "Pascal (programming language)": "Pascal was created by Niklaus Wirth around 1970 "
    "for teaching structured programming.",
    "Niklaus Wirth": "Niklaus Wirth was a Swiss computer scientist who received the "
    "Turing Award in 1984.",
    "COBOL": "COBOL is a business language designed in 1959.",
    "Lisp": "Lisp was specified by John McCarthy in 1958.",
}
SCORES = {
    "ALGOL": 0.61,
    "Fortran": 0.42,
    "COBOL": 0.37,
    "Lisp": 0.36,
    "Pascal (programming language)": 0.35,
    "Niklaus Wirth": 0.30,
}
QUESTION = "Which award did the designer of the language ALGOL influenced receive?"
# Seeds from rank (1, 1/2, ... 1/5 for Pascal): the retriever's scores only order the pool.
EXPECTED_TOP = [("ALGOL", 1.0), ("Fortran", 0.5), ("Pascal (programming language)", 0.43)]


@needs_mentions
def test_first_pipeline_doc_example_langchain() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from langchain_grapher import GraphERReranker, MentionTransformer

    docs = MentionTransformer().transform_documents(
        [Document(id=t, page_content=f"{t}\n{b}") for t, b in PAGES.items()]
    )
    mentions = {d.id: d.metadata.get("mentions", []) for d in docs}
    assert mentions == {
        "Fortran": [],
        "ALGOL": ["Pascal (programming language)"],
        "Pascal (programming language)": ["Niklaus Wirth"],
        "Niklaus Wirth": [],
        "COBOL": [],
        "Lisp": [],
    }
    pool = sorted(
        (
            Document(
                id=d.id,
                page_content=d.page_content,
                metadata={**d.metadata, "score": SCORES[str(d.id)]},
            )
            for d in docs
        ),
        key=lambda d: -d.metadata["score"],
    )
    out = GraphERReranker(top_n=3, score_key="score", explain=True).compress_documents(
        pool, QUESTION
    )
    assert [(d.id, round(d.metadata["relevance_score"], 2)) for d in out] == EXPECTED_TOP
    assert out[0].metadata["grapher_edges"] == {"structural": 4}


@needs_mentions
def test_first_pipeline_doc_example_llamaindex() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeWithScore, TextNode

    from llama_index_grapher import GraphERMentionExtractor, GraphERPostprocessor

    nodes = GraphERMentionExtractor().process_nodes(
        [TextNode(id_=t, text=f"{t}\n{b}") for t, b in PAGES.items()]
    )
    assert read_list(nodes[1].metadata["mentions"]) == ["Pascal (programming language)"]
    pool = sorted(
        (NodeWithScore(node=n, score=SCORES[n.node_id]) for n in nodes),
        key=lambda n: -(n.score or 0.0),
    )
    out = GraphERPostprocessor(top_n=3).postprocess_nodes(pool, query_str=QUESTION)
    assert [(n.node.node_id, round(n.score or 0.0, 2)) for n in out] == EXPECTED_TOP
    assert out[0].node.metadata["grapher_edges"] == {"structural": 4, "contextual": 0}


@needs_mentions
def test_an_index_fitted_on_the_corpus_finds_the_same_in_any_part() -> None:
    """Parts of a corpus (worker shares) get what the whole corpus gives them, hubs included."""
    objects = [*corpus(), CorpusObject("hub", "Atlas\nThe Atlas.")]
    objects += [CorpusObject(f"x{i}", f"Page {i}\nThe Atlas names Fortran.") for i in range(30)]
    whole = find_mentions(objects, max_share=0.2)
    index = MentionIndex.fit(objects, max_share=0.2)
    assert index.hubs == {"Atlas", "Fortran"}
    parts = [objects[:3], objects[3:12], objects[12:]]
    assert [m for part in parts for m in index.find(part)] == whole
    assert find_mentions(objects[3:12], max_share=0.2) != whole[3:12]  # alone, a part differs
    assert pickle.loads(pickle.dumps(index)) == index
