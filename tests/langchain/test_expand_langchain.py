"""Expansion through LangChain stores (real Chroma, InMemoryVectorStore): one batched store call
per hop, fetched documents ranked and flagged, and the graph-context runnable."""

from __future__ import annotations

import os
import uuid
from functools import lru_cache

import pytest

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

chromadb = pytest.importorskip("chromadb")
langchain_chroma = pytest.importorskip("langchain_chroma")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore  # noqa: E402

from grapher_core import AdjacentChunks, ForeignKeys  # noqa: E402
from langchain_grapher import GraphEREmbeddings, GraphERReranker, GraphERRetriever  # noqa: E402
from langchain_grapher.context import graph_context_formatter  # noqa: E402
from langchain_grapher.neighbours import (  # noqa: E402
    EXPANDED_KEY,
    VectorStoreSource,
    as_neighbour_source,
)

MENTIONS = ForeignKeys("mentions", target_field="title")

PASSAGES = [
    (
        "Inception",
        "Inception is a 2010 science fiction film written and directed by Christopher Nolan.",
        ["Christopher Nolan"],
    ),
    (
        "Christopher Nolan",
        "Christopher Nolan is a film director; his mother is Christina Jensen, an English teacher.",
        ["Christina Jensen"],
    ),
    (
        "Christina Jensen",
        "Christina Jensen is an American flight attendant and English teacher from Evanston.",
        [],
    ),
    ("Weather of Evanston", "Evanston has cold winters and warm summers.", []),
    ("Bread", "Bread is a staple food prepared from a dough of flour and water.", []),
    ("Football", "Association football is a team sport played with a spherical ball.", []),
]


@lru_cache(maxsize=1)
def embeddings() -> GraphEREmbeddings:
    return GraphEREmbeddings()


def documents() -> list[Document]:
    out = []
    for title, text, mentions in PASSAGES:
        metadata: dict[str, object] = {"title": title}
        if mentions:  # Chroma keeps only non-empty lists
            metadata["mentions"] = mentions
        out.append(Document(id=title, page_content=f"{title}\n{text}", metadata=metadata))
    return out


class CountingChroma(langchain_chroma.Chroma):  # type: ignore[misc,name-defined]
    """Real Chroma; counts the batched reads expansion makes."""

    get_calls = 0

    def get(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        CountingChroma.get_calls += 1
        return super().get(*args, **kwargs)


def chroma(only: tuple[str, ...] | None = None) -> CountingChroma:
    store = CountingChroma(
        collection_name=f"expand-{uuid.uuid4().hex[:8]}",
        embedding_function=embeddings(),
        client=chromadb.EphemeralClient(),
        collection_metadata={"hnsw:space": "cosine"},
    )
    store.add_documents([d for d in documents() if only is None or d.id in only])
    return store


def memory() -> InMemoryVectorStore:
    store = InMemoryVectorStore(embeddings())
    store.add_documents(documents())
    return store


@pytest.mark.parametrize("make", [chroma, memory])
def test_reranker_expands_through_store_in_one_call(make) -> None:  # type: ignore[no-untyped-def]
    store: VectorStore = make()
    question = "Who is the mother of the director of Inception?"
    retrieved = [d for d in documents() if d.id in ("Inception", "Bread", "Football")]
    plain = GraphERReranker(proximities=[MENTIONS], top_n=None, embeddings=embeddings())
    assert {d.id for d in plain.compress_documents(retrieved, question)} == {
        "Inception",
        "Bread",
        "Football",
    }
    source = VectorStoreSource(store)
    reranker = GraphERReranker(
        proximities=[MENTIONS],
        top_n=4,
        embeddings=embeddings(),
        neighbour_source=source,
        expand_hops=2,
        expand_seeds=1,
    )
    before = CountingChroma.get_calls
    out = reranker.compress_documents(retrieved, question)
    ids = [d.id for d in out]
    # Rank seeds keep the retriever's second (1/2); the fetched director passes its third.
    assert ids[:3] == ["Inception", "Bread", "Christopher Nolan"]
    assert "Christina Jensen" in ids  # two hops away from the retrieved documents
    assert source.calls == 2  # one store call per hop
    if isinstance(store, CountingChroma):
        assert CountingChroma.get_calls - before == 2
    fetched = {d.id: d for d in out if d.metadata.get(EXPANDED_KEY)}
    assert set(fetched) == {"Christopher Nolan", "Christina Jensen"}
    assert fetched["Christopher Nolan"].page_content.startswith("Christopher Nolan\n")
    assert "relevance_score" in fetched["Christopher Nolan"].metadata
    assert retrieved[0].metadata == {"title": "Inception", "mentions": ["Christopher Nolan"]}


def test_vector_store_passed_directly_and_retriever_path() -> None:
    store = chroma()  # the full store is the neighbour source; retrieval sees only a part
    searched = chroma(only=("Inception", "Bread", "Football"))
    reranker = GraphERReranker(
        proximities=[MENTIONS], embeddings=embeddings(), neighbour_source=store, expand_seeds=2
    )
    retriever = GraphERRetriever(
        base_retriever=searched.as_retriever(), reranker=reranker, k=3, fetch_k=3
    )
    out = retriever.invoke("Inception science fiction film director")
    assert [d.id for d in out][:2] == ["Inception", "Christopher Nolan"]
    assert out[1].metadata[EXPANDED_KEY] is True
    assert "retrieval_score" in out[0].metadata and "retrieval_score" not in out[1].metadata


def test_chunk_neighbours_from_chroma_with_integer_index() -> None:
    store = langchain_chroma.Chroma(
        collection_name=f"chunks-{uuid.uuid4().hex[:8]}",
        embedding_function=embeddings(),
        client=chromadb.EphemeralClient(),
    )
    chunks = [
        Document(
            id=f"guide#{k}",
            page_content=f"part {k} of the guide",
            metadata={"doc_id": "guide", "chunk_index": k},
        )
        for k in range(4)
    ]
    store.add_documents(chunks)
    source = VectorStoreSource(store)
    got = source.fetch(
        AdjacentChunks().link_keys(
            candidate=__import__("grapher_core").Candidate(
                "guide#1", metadata={"doc_id": "guide", "chunk_index": 1}
            )
        )
    )
    assert sorted(c.id for c in got) == ["guide#0", "guide#2"]
    assert all(c.embedding is not None and c.embedding.shape == (384,) for c in got)
    assert source.calls == 1


def test_bad_neighbour_source_and_id_lookup() -> None:
    with pytest.raises(TypeError, match="neighbour_source"):
        as_neighbour_source(42)
    with pytest.raises(Exception, match="neighbour_source"):
        GraphERReranker(proximities=[MENTIONS], neighbour_source=42)

    source = VectorStoreSource(memory())
    assert [c.id for c in source.fetch([((None, "Bread"),)])] == ["Bread"]
    with pytest.raises(TypeError, match="VectorStore"):
        VectorStoreSource("not a store")  # type: ignore[arg-type]


def test_without_source_behaves_as_before() -> None:
    docs = documents()[:3]
    a = GraphERReranker(proximities=[MENTIONS], top_n=None).compress_documents(docs, "q")
    b = GraphERReranker(proximities=[MENTIONS], top_n=None, expand_budget=0).compress_documents(
        docs, "q"
    )
    assert [(d.id, d.metadata) for d in a] == [(d.id, d.metadata) for d in b]
    assert all(EXPANDED_KEY not in d.metadata for d in a)


def test_graph_context_runnable() -> None:
    formatter = graph_context_formatter([MENTIONS], seeds=1, max_chars=30)
    text = formatter.invoke(documents()[:3])
    lines = text.splitlines()
    assert lines[0] == "[1] Inception"
    assert "  [1.1] Christopher Nolan  <- structural" in lines
    assert "    [1.1.1] Christina Jensen  <- structural" in lines


def test_relation_view_runnable() -> None:
    formatter = graph_context_formatter([MENTIONS], seeds=1, max_chars=30, style="relations")
    lines = formatter.invoke(documents()[:3]).splitlines()
    assert lines[0] == "[ROOT] Inception."
    assert "Inception is connected to:" in lines
    assert "  1.1 Christopher Nolan via mentions." in lines
    assert "    1.1.1 Christina Jensen via mentions." in lines
    with pytest.raises(ValueError, match="style"):
        graph_context_formatter([MENTIONS], style="fancy")


def test_entity_links_through_chroma_list_fields() -> None:
    from grapher_core import Candidate, SharedEntities
    from grapher_core.expand import Expansion, GraphExpander

    store = langchain_chroma.Chroma(
        collection_name=f"ents-{uuid.uuid4().hex[:8]}",
        embedding_function=embeddings(),
        client=chromadb.EphemeralClient(),
    )
    store.add_documents(
        [
            Document(
                id="a", page_content="Nolan directed Inception", metadata={"entities": ["Nolan"]}
            ),
            Document(
                id="b",
                page_content="Nolan was born in London",
                metadata={"entities": ["Nolan", "London"]},
            ),
            Document(id="c", page_content="Paris is in France", metadata={"entities": ["Paris"]}),
        ]
    )
    source = VectorStoreSource(store)
    seed = Candidate("a", "Nolan directed Inception", 1.0, {"entities": ["Nolan"]})
    result = GraphExpander([SharedEntities()], source, Expansion(follow_entities=True)).expand(
        [seed]
    )
    assert result.added == ("b",) and source.calls == 1  # $contains, one get per hop
    with pytest.raises(TypeError, match="list_fields"):
        VectorStoreSource(store, list_fields="entities")


def test_chroma_source_honours_limit_and_scores_before_reading() -> None:
    store = chroma()
    source = VectorStoreSource(store)
    keys = [(("title", t),) for t, _text, _m in PASSAGES[:4]] + [((None, "Bread"),)]
    assert len(source.fetch(keys)) == 5
    limited = source.fetch(keys, limit=2)
    assert [c.id for c in limited] == ["Bread", limited[1].id] and len(limited) == 2  # ids first
    assert len(source.fetch(keys, limit=0)) == 0
    partial = source.fetch(keys, full=False)
    assert len(partial) == 5 and all(c.text == "" for c in partial)
    assert all(c.embedding is not None and c.metadata.get("title") for c in partial)
    with pytest.raises(ValueError, match="limit"):
        source.fetch(keys, limit=-1)


def test_expansion_through_chroma_reads_only_the_kept_documents() -> None:
    from grapher_core import Candidate
    from grapher_core.expand import Expansion, GraphExpander

    store = chroma()
    before = CountingChroma.get_calls
    source = VectorStoreSource(store)
    mentions = [title for title, _text, _m in PASSAGES]
    seed = Candidate("Seed", "x", 1.0, {"mentions": mentions}, embeddings().embed_query("x"))
    query = embeddings().embed_query("Who is the mother of the director of Inception?")
    result = GraphExpander([MENTIONS], source, Expansion(seeds=1, budget=2)).expand(
        [seed], query_embedding=query
    )
    assert len(result.added) == 2 and result.fetched == len(PASSAGES)
    assert result.fetch_calls == CountingChroma.get_calls - before == 2  # score, then read 2
    assert all(c.text for c in result.candidates)
