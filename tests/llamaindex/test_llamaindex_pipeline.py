"""End to end with real parts: IngestionPipeline -> Chroma -> query engine -> GraphER."""

from __future__ import annotations

import itertools

import pytest

chromadb = pytest.importorskip("chromadb")
pytest.importorskip("llama_index.vector_stores.chroma")
from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.ingestion import IngestionPipeline  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.core.schema import (  # noqa: E402
    Document,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    TextNode,
)
from llama_index.vector_stores.chroma import ChromaVectorStore  # noqa: E402

from grapher_core import ForeignKeys, GCSRanker, GraphReranker, SharedEntities  # noqa: E402
from grapher_core.enrich.links import build_target_index  # noqa: E402
from llama_index_grapher import (  # noqa: E402
    EXPLANATION_KEY,
    GraphEREntityExtractor,
    GraphERLinkExtractor,
    GraphERPostprocessor,
    candidates_from_nodes,
    relationship_proximity,
)

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray

# One long document about a lighthouse: the question matches paragraph 2, and paragraph 3
# ("It ...") continues the story without repeating the words of the question.
STORY = [
    "The harbour town of Valdoria sits on a rocky coast in the north of Portugal.",
    "Fishermen in Valdoria tell many stories about the sea and the winter storms.",
    "Who built the Valdoria lighthouse? The lighthouse was commissioned in 1871 after a "
    "shipwreck killed forty sailors near the harbour.",
    "Its construction was led by the engineer Maria Quintela, who designed the iron tower "
    "and its rotating lens herself.",
    "Today the tower is a museum and the old keeper's house sells coffee to tourists.",
    "Every August a festival with music and grilled sardines fills the main square.",
]
OTHERS = [
    "Photosynthesis converts light energy into chemical energy in plants.",
    "The Danube flows through ten countries before reaching the Black Sea.",
    "A sonnet is a poem of fourteen lines with a strict rhyme scheme.",
    "Volcanoes form where tectonic plates diverge or converge.",
]
QUESTION = "Who built the Valdoria lighthouse?"


def documents() -> list[Document]:
    story = Document(
        text="\n\n".join(STORY), id_="valdoria", metadata={"url": "https://example.org/valdoria"}
    )
    others = [
        Document(
            text=f"{t} See [Valdoria](https://example.org/valdoria).",
            id_=f"other-{i}",
            metadata={"url": f"https://example.org/other-{i}"},
        )
        for i, t in enumerate(OTHERS)
    ]
    return [story, *others]


def pipeline(store: ChromaVectorStore, embed_model, tmp_path, list_format="list"):
    index = build_target_index({d.metadata["url"]: d.metadata["url"] for d in documents()})
    return IngestionPipeline(
        transformations=[
            SentenceSplitter(chunk_size=48, chunk_overlap=0),
            GraphEREntityExtractor(
                cache=str(tmp_path / "entities.sqlite"), list_format=list_format
            ),
            GraphERLinkExtractor(id_by_target=index, url_keys="url", list_format=list_format),
            embed_model,
        ],
        vector_store=store,
    )


@pytest.fixture(scope="module")
def chroma_index(hf_embed_model, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("chroma")
    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    collection = client.get_or_create_collection("grapher_story")
    store = ChromaVectorStore(chroma_collection=collection)
    # ChromaVectorStore.__init__ drops a flat_metadata= keyword (llama-index-vector-stores-chroma
    # 0.6): set the field afterwards so lists reach Chroma as lists.
    store.flat_metadata = False
    nodes = pipeline(store, hf_embed_model, tmp_path).run(documents=documents())
    index = VectorStoreIndex.from_vector_store(store, embed_model=hf_embed_model)
    return index, collection, nodes


def story_chunk(nodes, word: str) -> TextNode:
    (found,) = [n for n in nodes if word in n.get_content()]
    return found


def test_pipeline_writes_edge_fields_kept_out_of_text(chroma_index):
    _index, collection, nodes = chroma_index
    assert len([n for n in nodes if n.ref_doc_id == "valdoria"]) >= 3  # chunked
    stored = collection.get(include=["metadatas"])["metadatas"]
    assert any(isinstance(m.get("entities"), list) and m["entities"] for m in stored)
    assert any(m.get("links") == ["https://example.org/valdoria"] for m in stored)
    engineer = story_chunk(nodes, "Maria Quintela")
    assert "Maria Quintela" in engineer.metadata["entities"]
    for mode in (MetadataMode.EMBED, MetadataMode.LLM):
        text = engineer.get_content(metadata_mode=mode)
        assert "entities" not in text and "links" not in text
    assert engineer.text_template == TextNode(text="").text_template  # not rewritten
    assert NodeRelationship.PREVIOUS in engineer.relationships


def test_entity_cache_makes_reingestion_reuse_results(chroma_index, hf_embed_model, tmp_path):
    from grapher_core.enrich import EntityCache

    path = tmp_path / "entities.sqlite"
    extractor = GraphEREntityExtractor(cache=str(path))
    nodes = [TextNode(text=t) for t in STORY[:3]]
    first = extractor(nodes)
    second = GraphEREntityExtractor(cache=str(path))(nodes)
    assert [n.metadata for n in first] == [n.metadata for n in second]
    with EntityCache(path) as cache:
        assert len(cache) >= 3
    assert all(n.metadata == {} for n in nodes)  # in_place=False: inputs untouched


def ranks(nodes: list[NodeWithScore]) -> dict[str, int]:
    return {n.node.node_id: position for position, n in enumerate(nodes)}


def test_chunked_document_gets_contextual_edges_with_zero_configuration(chroma_index):
    index, _collection, nodes = chroma_index
    retrieved = index.as_retriever(similarity_top_k=len(nodes)).retrieve(QUESTION)
    story = [n for n in nodes if n.ref_doc_id == "valdoria"]  # in document order
    # The graph the postprocessor builds, from relationships that survived the Chroma round trip.
    graph = GraphReranker([relationship_proximity()]).graph(candidates_from_nodes(retrieved))
    position = {node_id: i for i, node_id in enumerate(graph.ids)}
    edges = {(graph.ids[i], graph.ids[j]) for i, j in zip(*graph.adjacency.nonzero(), strict=True)}
    chain = {(a.node_id, b.node_id) for a, b in itertools.pairwise(story)}
    assert edges == chain | {(b, a) for a, b in chain}
    assert set(graph.by_kind) == {"contextual"} and len(position) == len(nodes)

    # Relationships alone (entities/links are detected too). Chunk order as the only evidence
    # passes 0.8 of its share by default (0.85 among sentence-sized chunks) and leaves this
    # order as it was; at full share (alone_weights={}) the continuation of the matching chunk
    # rises.
    default = GraphERPostprocessor(auto_proximities=False).postprocess_nodes(
        retrieved, query_str=QUESTION
    )
    assert ranks(default) == ranks(retrieved)
    reranked = GraphERPostprocessor(
        explain=True, auto_proximities=False, ranker=GCSRanker(alone_weights={})
    ).postprocess_nodes(retrieved, query_str=QUESTION)
    base, after = ranks(retrieved), ranks(reranked)
    story_ids = {n.node_id for n in story}
    moved_up = {node_id for node_id in after if after[node_id] < base[node_id]}
    assert moved_up and moved_up <= story_ids, (base, after)
    answer = story_chunk(nodes, "Maria Quintela").node_id
    lifted = next(n for n in reranked if n.node.node_id == answer)
    assert story_chunk(nodes, "Who built").node_id in {
        c["neighbour_id"] for c in lifted.node.metadata[EXPLANATION_KEY]
    }


def test_sentence_window_nodes_are_read_as_sentence_sized(hf_embed_model, caplog):
    """LlamaIndex's sentence-window parser: one sentence per node (the window rides in the
    metadata), PREVIOUS / NEXT between them. The postprocessor reads the node text, finds the
    chunks sentence-sized and says which share chunk order passes."""
    import logging

    from llama_index.core.node_parser import SentenceWindowNodeParser

    parser = SentenceWindowNodeParser.from_defaults(window_size=2)
    nodes = parser.get_nodes_from_documents(documents())
    assert all("window" in n.metadata for n in nodes)
    index = VectorStoreIndex(nodes, embed_model=hf_embed_model)
    retrieved = index.as_retriever(similarity_top_k=len(nodes)).retrieve(QUESTION)
    with caplog.at_level(logging.INFO, logger="grapher"):
        out = GraphERPostprocessor(auto_proximities=False).postprocess_nodes(
            retrieved, query_str=QUESTION
        )
    said = [r.message for r in caplog.records if "alone_weights" in r.message]
    assert said and "sentence-sized chunks: GCS passes on 0.85" in said[0]
    assert {n.node.node_id for n in out} == {n.node.node_id for n in retrieved}
    assert [n.node.node_id for n in out][:5] == [n.node.node_id for n in retrieved][:5]


def test_query_engine_sync(chroma_index):
    index, _collection, nodes = chroma_index
    post = GraphERPostprocessor(top_n=4, proximities=[SharedEntities()], keep_retrieval_score=True)
    engine = index.as_query_engine(similarity_top_k=8, node_postprocessors=[post], llm=MockLLM())
    sync = engine.query(QUESTION)
    assert len(sync.source_nodes) == 4
    assert all("retrieval_score" in n.node.metadata for n in sync.source_nodes)
    scores = [n.score for n in sync.source_nodes]
    assert scores == sorted(scores, reverse=True)
    answer = story_chunk(nodes, "Maria Quintela").node_id
    assert answer in [n.node.node_id for n in sync.source_nodes]


async def test_query_engine_async(chroma_index):
    index, _collection, _nodes = chroma_index
    engine = index.as_query_engine(
        similarity_top_k=8, node_postprocessors=[GraphERPostprocessor(top_n=4)], llm=MockLLM()
    )
    sync = engine.query(QUESTION)
    asynchronous = await engine.aquery(QUESTION)
    assert [n.node.node_id for n in asynchronous.source_nodes] == [
        n.node.node_id for n in sync.source_nodes
    ]


def test_json_lists_work_in_a_flat_chroma_store(hf_embed_model, tmp_path):
    client = chromadb.EphemeralClient()
    collection = client.get_or_create_collection("grapher_flat")
    store = ChromaVectorStore(chroma_collection=collection)  # flat_metadata=True (default)
    pipeline(store, hf_embed_model, tmp_path, list_format="json").run(documents=documents())
    index = VectorStoreIndex.from_vector_store(store, embed_model=hf_embed_model)
    retrieved = index.as_retriever(similarity_top_k=10).retrieve("Valdoria harbour")
    assert any(isinstance(n.node.metadata.get("entities"), str) for n in retrieved)
    # Other pages link to the Valdoria story: structural edges through the url field.
    post = GraphERPostprocessor(
        proximities=[ForeignKeys("links", target_field="url")], explain=True
    )
    out = post.postprocess_nodes(retrieved, query_str="Valdoria harbour")
    linked = [n for n in out if n.node.metadata.get("url", "").endswith("other-0")]
    assert linked and linked[0].node.metadata[EXPLANATION_KEY]
