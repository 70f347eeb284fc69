"""Every door runs the same request: the core (``GraphReranker.run``), the LangChain compressor,
the LangChain retriever over a real ``InMemoryVectorStore``, and the LlamaIndex postprocessor
behind a real ``VectorStoreIndex`` retriever return the same ids with the same relevance, sync
and async -- on pools linked by foreign keys, by links between chunked pages, by shared
entities and by chunk order; with vectors read from the store or embedded by the door's model;
with and without expansion through the store.

The embedding model is a deterministic hash of each word into a Gaussian vector (one function
behind a LangChain, a LlamaIndex and a core face), so every door's store retrieves the same pool
in the same order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

pytest.importorskip("langchain_core", reason="needs the langchain extra (langchain-core)")
pytest.importorskip("llama_index.core", reason="needs the llamaindex extra (llama-index-core)")

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, TextNode

from grapher_core import (
    AdjacentChunks,
    Candidate,
    ForeignKeys,
    GCSRanker,
    GraphReranker,
    SemanticKNN,
    register_ranker,
)
from grapher_core.expand import ExpandingReranker, Expansion, InMemorySource
from grapher_core.request import DoorIO, arun_call, run_call
from langchain_grapher import GraphERReranker, GraphERRetriever
from llama_index_grapher import GraphERPostprocessor

register_ranker("gcs-full-share", lambda **options: GCSRanker(alone_weights={}, **options))

DIM = 24
FETCH = 8  # the pool each door's store hands over
TOP = 6


def vector(text: str) -> list[float]:
    total = np.zeros(DIM)
    for word in text.lower().split():
        seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        total += np.random.default_rng(seed).normal(size=DIM)
    norm = np.linalg.norm(total)
    return (total / norm if norm else total).tolist()


class CoreEmbedder:
    name = "tests/hashed-words"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray([vector(t) for t in texts], dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(vector(text), dtype=np.float32)


class LangChainWords(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector(text)


class LlamaWords(BaseEmbedding):
    def _get_query_embedding(self, query: str) -> list[float]:
        return vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return vector(text)


def tables() -> list[tuple[str, str, dict[str, Any]]]:
    fk = {
        "orders": ["buyers", "parcels"],
        "parcels": ["orders", "couriers"],
        "buyers": ["orders"],
        "couriers": ["parcels"],
        "animals": ["keepers"],
        "keepers": ["animals"],
    }
    texts = {
        "orders": "orders placed by date",
        "parcels": "parcels weight shipped",
        "buyers": "buyers nickname",
        "couriers": "couriers vehicle",
        "animals": "animals placed weight species",
        "keepers": "keepers shift",
        "exhibits": "exhibits placed theme",
        "plants": "plants placed weight",
        "tickets": "tickets sold daily",
        "shops": "gift shops souvenirs",
    }
    return [(t, text, {"foreign_keys": fk.get(t, [])}) for t, text in texts.items()]


def pages() -> list[tuple[str, str, dict[str, Any]]]:
    chunks = {
        "install": ["install the package with pip", "install from source builds", "verify install"],
        "usage": ["usage first steps open a file", "usage options and flags", "usage examples"],
        "faq": ["faq why does install fail", "faq where are logs"],
        "api": ["api reference open function", "api reference close function"],
    }
    links = {("install", 2): ["usage"], ("usage", 0): ["api#open"], ("faq", 0): ["install"]}
    out = []
    for page, texts in chunks.items():
        for i, text in enumerate(texts):
            meta: dict[str, Any] = {"doc_id": page, "chunk_index": i, "source": page}
            if (page, i) in links:
                meta["links"] = links[(page, i)]
            if page == "api":
                meta["anchors"] = ["open" if i == 0 else "close"]
            out.append((f"{page}#{i}", text, meta))
    return out


def passages() -> list[tuple[str, str, dict[str, Any]]]:
    rows = [
        ("p0", "the volcano erupted lava", ["Etna", "Sicily"]),
        ("p1", "an island south of Italy", ["Sicily"]),
        ("p2", "tourists visit the crater", ["Etna"]),
        ("p3", "a river floods in spring", ["Po"]),
        ("p4", "the delta of the river", ["Po", "Adriatic"]),
        ("p5", "a sea between two coasts", ["Adriatic"]),
        ("p6", "mountains with snow", []),
        ("p7", "a lake near the alps", ["Garda"]),
        ("p8", "wine from the hills", ["Garda"]),
        ("p9", "an old harbour city", []),
    ]
    return [(i, text, {"entities": ents}) for i, text, ents in rows]


POOLS = {"foreign keys": (tables, "orders placed"), "chunked pages": (pages, "install then usage")}
POOLS["entities"] = (passages, "volcano lava crater")
SETTINGS: dict[str, dict[str, Any]] = {
    "default": {},
    "ppr": {"ranker": "ppr"},
    "semantic": {"proximities": [ForeignKeys(), SemanticKNN(k=2, threshold=-1.0)]},
    # expansion follows the link fields of the proximities it is given
    "foreign keys": {"proximities": [ForeignKeys()]},
    # at full share, the neighbour of the best chunk rises into a top 4
    "chunk order": {"proximities": [AdjacentChunks()], "ranker": "gcs-full-share"},
}


def lc_store(corpus: list[tuple[str, str, dict[str, Any]]]) -> InMemoryVectorStore:
    store = InMemoryVectorStore(LangChainWords())
    store.add_documents(
        [Document(id=i, page_content=t, metadata=m) for i, t, m in corpus],
        ids=[i for i, _t, _m in corpus],
    )
    return store


def li_index(corpus: list[tuple[str, str, dict[str, Any]]]) -> VectorStoreIndex:
    nodes = [TextNode(id_=i, text=t, metadata=m) for i, t, m in corpus]
    for node in nodes:
        node.excluded_embed_metadata_keys = list(node.metadata)
    return VectorStoreIndex(nodes, embed_model=LlamaWords(), show_progress=False)


def core_pool(
    corpus: list[tuple[str, str, dict[str, Any]]], query: str, fetch: int = FETCH
) -> list[Candidate]:
    """The same pool the stores hand over: cosine top ``fetch``, with the stored vectors."""
    q = np.asarray(vector(query))
    scored = sorted(corpus, key=lambda row: -float(np.asarray(vector(row[1])) @ q))[:fetch]
    return [Candidate(i, t, None, m, np.asarray(vector(t), dtype=np.float32)) for i, t, m in scored]


def fields(setting: str) -> dict[str, Any]:
    return {"top_n": TOP, **SETTINGS[setting]}


async def every_door(
    pool: str,
    setting: str,
    *,
    embedded: bool,
    expand: bool,
    mode: str,
    fetch: int = FETCH,
    top: int = TOP,
) -> dict[str, list[tuple[str, float]]]:
    make, query = POOLS[pool]
    corpus = make()
    store, index = lc_store(corpus), li_index(corpus)
    candidates = core_pool(corpus, query, fetch)
    if not embedded:  # no vectors at hand: the door's model embeds what the call asks for
        candidates = [Candidate(c.id, c.text, c.score, c.metadata) for c in candidates]
    settings = {**fields(setting), "top_n": top}
    lc_extra: dict[str, Any] = {"embeddings": LangChainWords()}
    li_extra: dict[str, Any] = {"embed_model": LlamaWords(), "use_relationships": False}
    if embedded:
        li_extra["vector_store"] = index.vector_store
    if expand:
        lc_extra["neighbour_source"] = store
        li_extra["neighbour_source"] = index.docstore
        for extra in (lc_extra, li_extra):
            extra.update(expand_max_seconds=None, expand_seeds=2)
    core_settings = {k: v for k, v in settings.items() if k != "top_n"}
    core = GraphReranker(core_settings.pop("proximities", None), explain=0, **core_settings)
    engine: Any = core
    if expand:
        source = InMemorySource(
            [Candidate(i, t, None, m) for i, t, m in corpus],
            embeddings=np.asarray([vector(t) for _i, t, _m in corpus], dtype=np.float32),
        )
        engine = ExpandingReranker(core, source, Expansion(seeds=2, max_seconds=None))
    call = engine.call(candidates, query=query, embedder=CoreEmbedder(), top_n=top)
    io = DoorIO.of(CoreEmbedder())
    result = run_call(call, io.answer) if mode == "sync" else await arun_call(call, io.aanswer)
    out = {"core": [(r.id, round(r.relevance or r.score, 9)) for r in result.ranked]}

    compressor = GraphERReranker(**settings, **lc_extra)
    retriever = GraphERRetriever(
        base_retriever=store.as_retriever(), reranker=compressor, k=top, fetch_k=fetch
    )
    li_post = GraphERPostprocessor(**settings, **li_extra)
    li_retriever = index.as_retriever(similarity_top_k=fetch)
    lc_docs = [
        Document(id=c.id, page_content=c.text, metadata=dict(c.metadata)) for c in candidates
    ]
    vectors = [c.embedding for c in candidates] if embedded else None
    if mode == "sync":
        compressed = compressor.rerank_documents(lc_docs, query, document_embeddings=vectors)
        found = retriever.invoke(query)
        nodes = li_post.postprocess_nodes(li_retriever.retrieve(query), query_str=query)
    else:
        compressed = await compressor.arerank_documents(lc_docs, query, document_embeddings=vectors)
        found = await retriever.ainvoke(query)
        retrieved = await li_retriever.aretrieve(query)
        nodes = await li_post.apostprocess_nodes(retrieved, query_str=query)
    out["langchain compressor"] = _docs(compressed)
    out["langchain retriever"] = _docs(found)
    out["llamaindex retriever + postprocessor"] = _nodes(nodes)
    return out


def _docs(documents: Sequence[Document]) -> list[tuple[str, float]]:
    return [(d.id or "", round(d.metadata["relevance_score"], 9)) for d in documents]


def _nodes(nodes: Sequence[NodeWithScore]) -> list[tuple[str, float]]:
    return [(n.node.node_id, round(n.score or 0.0, 9)) for n in nodes]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("embedded", [True, False], ids=["stored-vectors", "embedded"])
@pytest.mark.parametrize("setting", ["default", "ppr", "semantic"])
@pytest.mark.parametrize("pool", list(POOLS))
async def test_four_doors_one_ranking(pool: str, setting: str, embedded: bool, mode: str) -> None:
    doors = await every_door(pool, setting, embedded=embedded, expand=False, mode=mode)
    reference = doors.pop("core")
    assert len(reference) == TOP
    for door, ranking in doors.items():
        assert ranking == reference, door


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    ("pool", "setting"), [("foreign keys", "foreign keys"), ("chunked pages", "chunk order")]
)
async def test_four_doors_one_ranking_with_expansion(pool: str, setting: str, mode: str) -> None:
    # the retriever fetches at least k: a pool of 4, the top 4 of it and what expansion adds
    doors = await every_door(pool, setting, embedded=True, expand=True, mode=mode, fetch=4, top=4)
    reference = doors.pop("core")
    pooled = {c.id for c in core_pool(POOLS[pool][0](), POOLS[pool][1], 4)}
    assert any(i not in pooled for i, _ in reference), "expansion must add something here"
    for door, ranking in doors.items():
        assert ranking == reference, door


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_every_door_can_hold_the_ego_graph_engine(mode: str) -> None:
    """The third engine: the query's nearest ego-graphs joined, in the core and both wrappers."""
    from grapher_core.expand import EgoGraphIndex

    corpus = tables()
    query = "orders placed"
    objects = [Candidate(i, t, None, m) for i, t, m in corpus]
    vectors = np.asarray([vector(t) for _i, t, _m in corpus], dtype=np.float32)
    ego = EgoGraphIndex.build(objects, vectors, [ForeignKeys()], hops=1)
    candidates = core_pool(corpus, query, 4)
    source = InMemorySource(objects, embeddings=vectors)
    core = ego.reranker(GraphReranker([ForeignKeys()], explain=0), source, n=10)
    call = core.call(candidates, query=query, embedder=CoreEmbedder(), top_n=TOP)
    io = DoorIO.of(CoreEmbedder())
    result = run_call(call, io.answer) if mode == "sync" else await arun_call(call, io.aanswer)
    expected = [(r.id, round(r.relevance or r.score, 9)) for r in result.ranked]
    assert any(r.expanded for r in result.ranked)

    store, index = lc_store(corpus), li_index(corpus)
    lc = GraphERReranker(
        proximities=[ForeignKeys()],
        top_n=TOP,
        embeddings=LangChainWords(),
        neighbour_source=store,
        ego_index=ego,
    )
    li = GraphERPostprocessor(
        proximities=[ForeignKeys()],
        top_n=TOP,
        embed_model=LlamaWords(),
        use_relationships=False,
        neighbour_source=index.docstore,
        vector_store=index.vector_store,
        ego_index=ego,
    )
    docs = [Document(id=c.id, page_content=c.text, metadata=dict(c.metadata)) for c in candidates]
    retrieved = index.as_retriever(similarity_top_k=4)
    if mode == "sync":
        lc_out = lc.rerank_documents(
            docs, query, document_embeddings=[c.embedding for c in candidates]
        )
        li_out = li.postprocess_nodes(retrieved.retrieve(query), query_str=query)
    else:
        lc_out = await lc.arerank_documents(
            docs, query, document_embeddings=[c.embedding for c in candidates]
        )
        li_out = await li.apostprocess_nodes(await retrieved.aretrieve(query), query_str=query)
    assert _docs(lc_out) == expected
    assert _nodes(li_out) == expected
