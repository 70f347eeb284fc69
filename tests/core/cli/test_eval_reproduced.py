"""What ``grapher eval`` measures is what the wrappers run: the configuration it writes, loaded
by the LangChain compressor and the LlamaIndex postprocessor, ranks the same pools into the
same gold ranks as eval's row for it -- on chunked, hyperlinked pages (links to pages, chunk
order) and on shared entities. A configuration that a door cannot honour is refused at load,
naming the field and the fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from grapher_core.candidates import CorpusObject
from grapher_core.cli import main
from grapher_core.cli.inputs import clean_text
from grapher_core.cli.rerank import retrieve
from grapher_core.errors import ConfigError
from grapher_core.evaluation.metrics import gold_ranks
from grapher_core.ranking.config import write_config
from grapher_core.request.settings import RerankSettings

if TYPE_CHECKING:
    from conftest import HashEmbedder

PAGES = {
    "install": ["install the package with pip", "then run the setup wizard", "verify it works"],
    "wizard": ["the setup wizard asks for a folder", "wizard options for experts"],
    "logs": ["logs live in the data folder", "rotate logs weekly"],
    "errors": ["errors during install mean a missing compiler", "errors listed by code"],
    "misc": ["a page about colours", "fonts and colours"],
}
LINKS = {("install", 1): ["wizard"], ("errors", 0): ["install"], ("wizard", 0): ["logs#0"]}
QUESTIONS = [
    {"id": "1", "text": "how do I install and run the wizard", "gold": ["install#0", "wizard#0"]},
    {"id": "2", "text": "install errors compiler", "gold": ["errors#0", "install#0"]},
    {"id": "3", "text": "where are the logs folder", "gold": ["logs#0", "wizard#0"]},
    {"id": "4", "text": "wizard options", "gold": ["wizard#1", "wizard#0"]},
]


def pages() -> list[dict[str, Any]]:
    rows = []
    for page, texts in PAGES.items():
        for i, text in enumerate(texts):
            meta: dict[str, Any] = {"doc_id": page, "chunk_index": i, "source": page}
            meta["links"] = LINKS.get((page, i), [])
            meta["anchors"] = [str(i)]
            rows.append({"id": f"{page}#{i}", "text": text, "metadata": meta})
    return rows


def entities() -> list[dict[str, Any]]:
    rows = [
        ("e0", "the volcano erupted lava", ["Etna"]),
        ("e1", "an island in the south", ["Sicily", "Etna"]),
        ("e2", "tourists climb the crater", ["Etna"]),
        ("e3", "a river floods each spring", ["Po"]),
        ("e4", "the delta meets the sea", ["Po"]),
        ("e5", "snow on the mountains", []),
        ("e6", "a lake near the hills", ["Garda"]),
        ("e7", "wine grown on the hills", ["Garda"]),
        # words of the questions, no entity: they push the linked gold objects down
        ("d0", "a volcano museum for children", []),
        ("d1", "lava lamps erupted in sales", []),
        ("d2", "river cruise tickets each spring", []),
        ("d3", "floods of letters", []),
    ]
    return [{"id": i, "text": t, "metadata": {"entities": e}} for i, t, e in rows]


ENTITY_QUESTIONS = [
    {"id": "1", "text": "volcano erupted lava", "gold": ["e0", "e2"]},
    {"id": "2", "text": "river floods spring", "gold": ["e3", "e4"]},
    {"id": "3", "text": "lake near the hills", "gold": ["e6", "e7"]},
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def pools(
    embedder: HashEmbedder, rows: list[dict[str, Any]], questions: list[dict[str, Any]], top: int
) -> list[list[Any]]:
    """The pools eval ranked: its dense retriever over the same model's vectors."""
    objects = [CorpusObject(r["id"], clean_text(r["text"], 4000), r["metadata"]) for r in rows]
    vectors = embedder.embed_documents([o.text for o in objects])
    return [
        retrieve(objects, vectors, embedder.embed_query(clean_text(q["text"], 4000)), top)
        for q in questions
    ]


@pytest.mark.parametrize("corpus", ["pages", "entities"])
def test_each_wrapper_reproduces_evals_row_from_the_config_it_wrote(
    corpus: str, tmp_path: Path, embedder: HashEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("langchain_grapher")
    pytest.importorskip("llama_index_grapher")
    corpus_rows, questions = (
        (pages(), QUESTIONS) if corpus == "pages" else (entities(), ENTITY_QUESTIONS)
    )
    config_path, report_path = tmp_path / "best.json", tmp_path / "report.json"
    args = ["eval", "--corpus", str(write_jsonl(tmp_path / "c.jsonl", corpus_rows))]
    args += ["--questions", str(write_jsonl(tmp_path / "q.jsonl", questions)), "--top-n", "8"]
    args += ["--k", "2,3", "--rankers", "gcs,ppr", "--no-progress"]
    assert main([*args, "--write-config", str(config_path), "--json", str(report_path)]) == 0
    capsys.readouterr()
    report = json.loads(report_path.read_text())
    measured = {row["name"]: row for row in report["rows"]}
    chosen = report["chosen"] or "retriever"
    rows = [(config_path, measured[chosen]["gold_ranks"])]
    for row in report["rows"]:  # every configuration eval measured, through its config
        if row["config"] is None or row["config"]["graph"] != "detected":
            continue
        path = tmp_path / f"{row['name'].replace(' ', '_').replace('=', '')}.json"
        settings = RerankSettings(
            ranker=row["config"]["ranker"],
            alpha=row["config"]["alpha"],
            seed_transform=row["config"]["seed_transform"],
            ranker_options=row["config"]["ranker_options"],
        )
        write_config(path, settings.to_config())
        rows.append((path, row["gold_ranks"]))
    assert len(rows) > 4
    moved = [r for _p, r in rows if r != measured["retriever"]["gold_ranks"]]
    assert moved, "no configuration moved a gold object: the comparison would prove little"
    for path, expected in rows:
        lc_ranks, li_ranks = wrapper_ranks(path, rows_of=corpus_rows, questions=questions,
                                           embedder=embedder)  # fmt: skip
        assert lc_ranks == [tuple(r) for r in expected], path.name
        assert li_ranks == [tuple(r) for r in expected], path.name


def wrapper_ranks(
    path: Path,
    *,
    rows_of: list[dict[str, Any]],
    questions: list[dict[str, Any]],
    embedder: HashEmbedder,
) -> tuple[list[Any], list[Any]]:
    """Gold ranks per question from the LangChain compressor and the LlamaIndex postprocessor
    loaded from the config at ``path``, over eval's pools."""
    langchain = pytest.importorskip("langchain_grapher")
    llama = pytest.importorskip("llama_index_grapher")
    from langchain_core.documents import Document
    from llama_index.core.schema import NodeWithScore, TextNode

    compressor = langchain.GraphERReranker.from_config(path, score_key="score", top_n=None)
    postprocessor = llama.GraphERPostprocessor.from_config(path, top_n=None)
    lc_ranks, li_ranks = [], []
    for question, pool in zip(questions, pools(embedder, rows_of, questions, 8), strict=True):
        documents = [
            Document(id=c.id, page_content=c.text, metadata={**c.metadata, "score": c.score})
            for c in pool
        ]
        nodes = [
            NodeWithScore(node=TextNode(id_=c.id, text=c.text, metadata=dict(c.metadata)),
                          score=c.score)
            for c in pool
        ]  # fmt: skip
        lc = compressor.compress_documents(documents, question["text"])
        li = postprocessor.postprocess_nodes(nodes, query_str=question["text"])
        lc_ranks.append(gold_ranks([d.id for d in lc], question["gold"]))
        li_ranks.append(gold_ranks([n.node.node_id for n in li], question["gold"]))
    return lc_ranks, li_ranks


def score_seed_config(tmp_path: Path) -> Path:
    path = tmp_path / "scores.json"
    write_config(path, {"grapher_config": 1, "ranker": "gcs", "seed_transform": "auto"})
    return path


def test_a_score_seed_config_is_refused_where_no_score_reaches_the_reranker(
    tmp_path: Path,
) -> None:
    langchain = pytest.importorskip("langchain_grapher")
    path = score_seed_config(tmp_path)
    with pytest.raises(ConfigError) as refused:
        langchain.GraphERReranker.from_config(path)
    message = str(refused.value)
    assert str(path) in message and "'seed_transform'" in message and "score_key=" in message
    loaded = langchain.GraphERReranker.from_config(path, score_key="score")
    assert loaded.seed_transform == "auto"


def test_the_retriever_hands_the_stores_scores_or_refuses(tmp_path: Path) -> None:
    pytest.importorskip("langchain_grapher")
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_grapher import GraphERRetriever

    path = score_seed_config(tmp_path)
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    retriever = GraphERRetriever.from_config(path, base_retriever=store.as_retriever())
    assert retriever.seeds == "score" and retriever.reranker.seed_transform == "auto"

    class Keyword(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return []

    with pytest.raises(ConfigError, match="'seed_transform'"):
        GraphERRetriever.from_config(path, base_retriever=Keyword())


def test_the_llamaindex_door_honours_score_seeds(tmp_path: Path) -> None:
    llama = pytest.importorskip("llama_index_grapher")
    path = score_seed_config(tmp_path)
    assert llama.GraphERPostprocessor.from_config(path).seed_transform == "auto"
