"""The default ranking: seeds from the retriever's order, degree-normalised GCS that shares a
hub's lift instead of copying it to every spoke, and chunk order alone damped."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from helpers_chunks import PASSAGE, SENTENCE, lone_neighbour_pool

from grapher_core import (
    AdjacentChunks,
    Candidate,
    ForeignKeys,
    GCSRanker,
    GraphReranker,
    build_graph,
)
from grapher_core.errors import ConfigError
from grapher_core.ranking.propagation import (
    ALONE_NEIGHBOUR_BEST_RANK,
    PPR_CAN_LOSE,
    SENTENCE_ALONE_NEIGHBOUR_BEST_RANK,
    SENTENCE_CHUNK_CHARS,
    PPRRanker,
    gcs_scores,
    sentence_sized,
)
from grapher_core.ranking.seeds import ascending, make_seeds, seed_policy
from grapher_core.utils import callsite


def star(spokes: int, hub_rank: int) -> list[Candidate]:
    """A retriever's top: the hub at ``hub_rank`` (0-based), its spokes linked to it and to the
    top result; the other candidates unlinked."""
    ids = [f"c{i}" for i in range(spokes + 6)]
    out = []
    for i, name in enumerate(ids):
        links: list[str] = []
        if i >= 6:  # spokes, retrieved low
            links = [ids[hub_rank], ids[0]]
        out.append(Candidate(name, metadata={"foreign_keys": links}))
    return out


def test_a_well_ranked_hub_is_not_buried_by_its_spokes() -> None:
    """Row normalisation (the paper's Algorithm 1) lifts every spoke of the top result and of the
    hub to near their scores: the hub at rank 4 falls behind them. Degree normalisation shares
    the lift, so no spoke enters the retriever's top 4 (the hub, linked to the top result
    through eight spokes, may rise within it)."""
    pool = star(spokes=8, hub_rank=3)
    row = GraphReranker([ForeignKeys()], ranker=GCSRanker(normalisation="row")).rerank(pool)
    default = GraphReranker([ForeignKeys()]).rerank(pool)
    assert [r.id for r in row].index("c3") > 3  # the paper's GCS demotes the hub
    top = [r.id for r in default][:4]
    assert set(top) == {"c0", "c1", "c2", "c3"} and top[:2] == ["c0", "c1"]  # no spoke above


def test_a_node_linked_to_everything_stays_out_of_the_top_five() -> None:
    n = 50
    pool = [Candidate(f"c{i}") for i in range(n - 1)]
    pool.append(Candidate("hub", metadata={"foreign_keys": [c.id for c in pool]}))
    ranked = [r.id for r in GraphReranker([ForeignKeys()]).rerank(pool)]
    assert ranked[:5] == ["c0", "c1", "c2", "c3", "c4"]
    symmetric = GraphReranker([ForeignKeys()], ranker=GCSRanker(degree_exponent=0.5)).rerank(pool)
    assert [r.id for r in symmetric].index("hub") < ranked.index("hub")  # 0.5 lifts it further


def test_degree_exponent_one_is_the_papers_row_normalisation() -> None:
    rng = np.random.default_rng(0)
    a = sp.random(30, 30, density=0.2, random_state=1, format="csr")
    a = (a + a.T).tocsr()
    seeds = rng.random(30)
    np.testing.assert_allclose(
        gcs_scores(a, seeds, 0.1, normalisation="degree", degree_exponent=1.0),
        gcs_scores(a, seeds, 0.1, normalisation="row"),
        atol=1e-6,
    )


def chunks(n: int) -> list[Candidate]:
    """One document's chunks, retrieved in a shuffled order."""
    order = [4, 0, 7, 2, 5, 1, 6, 3]
    return [Candidate(f"d#{i}", metadata={"doc_id": "d", "chunk_index": i}) for i in order[:n]]


def test_chunk_order_alone_is_damped_and_said(caplog: pytest.LogCaptureFixture) -> None:
    pool = chunks(8)
    reranker = GraphReranker([AdjacentChunks()])
    with caplog.at_level(logging.INFO, logger="grapher"):
        damped = [r.id for r in reranker.rerank(pool)]
        reranker.rerank(pool)
    said = [r.message for r in caplog.records if "alone_weights" in r.message]
    assert len(said) == 1 and "only contextual edges" in said[0]
    full = [
        r.id
        for r in GraphReranker([AdjacentChunks()], ranker=GCSRanker(alone_weights={})).rerank(pool)
    ]
    assert damped[:3] == [c.id for c in pool[:3]]  # the retriever's top stays
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="grapher"):  # row GCS damps nothing, says nothing
        GraphReranker([AdjacentChunks()], ranker=GCSRanker(normalisation="row")).rerank(pool)
    assert not [r for r in caplog.records if "alone_weights" in r.message]
    assert full != damped  # at full share the neighbours of d#4 rise
    assert full.index("d#5") < damped.index("d#5")


@pytest.mark.parametrize(
    ("share", "chars", "best_rank"),
    [
        (None, 0, ALONE_NEIGHBOUR_BEST_RANK),
        (None, PASSAGE, ALONE_NEIGHBOUR_BEST_RANK),
        (None, SENTENCE, SENTENCE_ALONE_NEIGHBOUR_BEST_RANK),
        (0.85, PASSAGE, 6),
        (0.85, SENTENCE, 6),
        (1.0, SENTENCE, 2),
    ],
)
def test_a_chunk_supported_by_chunk_order_alone_stays_out_of_the_top_five(
    share: float | None, chars: int, best_rank: int
) -> None:
    """The bounds the default shares are chosen by: next to the best chunk and nothing else, a
    chunk reaches 7th among passages, 6th among sentences; an explicit share applies to either,
    full share lifts it to 2nd."""
    ranker = GCSRanker() if share is None else GCSRanker(alone_weights={"contextual": share})
    pool = lone_neighbour_pool(chars=chars)
    ranked = [r.id for r in GraphReranker([AdjacentChunks()], ranker=ranker).rerank(pool)]
    assert ranked.index("d#2") + 1 == best_rank
    assert ranked[0] == "d#1"
    if share is None:  # the defaults keep it out of the retriever's top 5
        assert ranked.index("d#2") >= 5


def test_sentence_sized_reads_the_median_of_the_texts_it_has() -> None:
    def pool(*lengths: int) -> list[Candidate]:
        return [Candidate(f"c{i}", "y" * n) for i, n in enumerate(lengths)]

    assert sentence_sized(pool(100, 120, 5000))  # one long outlier does not decide
    assert not sentence_sized(pool(700, 800, 90))
    assert sentence_sized(pool(0, 0, SENTENCE_CHUNK_CHARS))  # empty texts are not counted
    assert not sentence_sized(pool(SENTENCE_CHUNK_CHARS + 1))
    assert not sentence_sized(pool(0, 0))  # no text: the cautious passage share
    assert not sentence_sized([Candidate("c", "   ")])


def test_the_share_said_names_the_chunk_size(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="grapher"):
        reranker = GraphReranker([AdjacentChunks()])
        reranker.rerank(lone_neighbour_pool(chars=SENTENCE))
        reranker.rerank(lone_neighbour_pool(chars=PASSAGE))
    said = [r.message for r in caplog.records if "alone_weights" in r.message]
    assert len(said) == 2
    assert "sentence-sized chunks: GCS passes on 0.85" in said[0]
    assert "passage-sized chunks: GCS passes on 0.8 " in said[1]


def test_chunk_order_beside_links_passes_the_beside_share() -> None:
    pool = chunks(8)
    pool = [
        Candidate(c.id, metadata={**c.metadata, "foreign_keys": ["d#4"] if c.id == "d#6" else []})
        for c in pool
    ]
    graph = GraphReranker([AdjacentChunks(), ForeignKeys()]).graph(pool)
    assert GCSRanker(beside_weights={})._weighted(graph, pool) is graph.adjacency  # whole share
    sentences = [Candidate(c.id, "a short sentence.", metadata=c.metadata) for c in pool]
    assert GCSRanker()._weighted(graph, sentences) is graph.adjacency  # sentence-sized: whole
    weighted = GCSRanker()._weighted(graph, pool)  # no text: the passage share, the cautious one
    expected = graph.by_kind["contextual"] * 0.9 + graph.by_kind["structural"]
    assert abs(weighted - expected).max() == 0.0


@pytest.mark.parametrize(
    "options",
    [
        {"degree_exponent": 0.4},
        {"degree_exponent": True},
        {"normalisation": "symmetric"},
        {"kind_weights": {"contextual": -1.0}},
        {"alone_weights": [("contextual",)]},
        {"alone_weights": "sentences"},
        {"beside_weights": {"contextual": float("nan")}},
        {"beside_weights": "sentences"},
    ],
)
def test_bad_settings_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        GCSRanker(**options)  # type: ignore[arg-type]


def test_one_seed_rule_for_every_wrapper() -> None:
    pool = [Candidate(f"c{i}", score=s) for i, s in enumerate([0.2, 0.3, 0.9])]
    np.testing.assert_allclose(make_seeds(pool, seed_policy(None, GCSRanker())), [1, 1 / 2, 1 / 3])

    class ReadsScores:
        name = "learned"
        reads_scores = True

    assert seed_policy(None, ReadsScores()) == "auto"
    assert seed_policy("minmax", ReadsScores()) == "minmax"


def test_auto_reads_distances_the_other_way() -> None:
    distances = [Candidate(f"c{i}", score=s) for i, s in enumerate([0.1, 0.3, 0.35])]
    cosines = [Candidate(f"c{i}", score=1 - s) for i, s in enumerate([0.1, 0.3, 0.35])]
    assert ascending(np.array([0.1, 0.3, 0.35])) and not ascending(np.array([0.3, 0.3]))
    np.testing.assert_allclose(make_seeds(distances, "minmax"), make_seeds(cosines, "minmax"))
    assert make_seeds(distances, "auto")[0] > make_seeds(distances, "auto")[2]


def test_picking_ppr_is_said_once() -> None:
    callsite._said.discard(PPR_CAN_LOSE)
    with pytest.warns(UserWarning, match="ppr can rank below the retriever's own order"):
        PPRRanker()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PPRRanker(alpha=0.5)  # said already: nothing again


def linked_page_pool() -> list[Candidate]:
    """A page's chunks spread over the retriever's top 7 (p5 first), p5 linked from q0, a chunk
    of another page the retriever ranked 17th; unrelated chunks between them."""
    order = ["p5", "p2", "p0", "x0", "p1", "p3", "p4", *[f"x{i}" for i in range(1, 10)], "q0"]
    pool = []
    for name in order:
        metadata: dict[str, object] = {}
        if name.startswith("p"):
            metadata = {"doc_id": "p", "chunk_index": int(name[1:]), "source": "p.md"}
        elif name == "q0":
            metadata = {"doc_id": "q", "chunk_index": 0, "source": "q.md", "links": ["p5"]}
        pool.append(
            Candidate(name, text=f"{name} " + "passage " * (PASSAGE // 8), metadata=metadata)
        )
    return pool


def test_chunk_order_beside_links_is_damped_and_said(caplog: pytest.LogCaptureFixture) -> None:
    """Beside links, chunk order passes 0.9 of its share: the linked chunk still rises into the
    top 5, and the best chunk's neighbour, supported by nothing else, no longer jumps over the
    retriever's third result (at full share it does)."""
    from grapher_core.edges.links import ChunkLinks

    proximities = [ChunkLinks(), AdjacentChunks()]
    graph = build_graph(linked_page_pool(), proximities)
    assert GCSRanker().beside_shares(graph, linked_page_pool()) == (("contextual", 0.9),)
    sentences = [Candidate(c.id, c.id, metadata=c.metadata) for c in linked_page_pool()]
    assert GCSRanker().beside_shares(graph, sentences) == ()  # sentence-sized: whole share
    with caplog.at_level(logging.INFO, logger="grapher"):
        default = [r.id for r in GraphReranker(proximities).rerank(linked_page_pool())]
    full_ranker = GCSRanker(beside_weights={})
    full = [r.id for r in GraphReranker(proximities, ranker=full_ranker).rerank(linked_page_pool())]
    assert full.index("p4") < full.index("p0")  # full share: the neighbour passes the 3rd
    assert default[:3] == ["p5", "p2", "p0"]
    assert default.index("q0") < 5  # the link's lift is kept
    said = [r.message for r in caplog.records if "beside_weights" in r.message]
    assert len(said) == 1 and "contextual edges beside other kinds" in said[0]
    alone = build_graph(chunks(8), [AdjacentChunks()])  # chunk order alone: alone_weights
    assert GCSRanker().beside_shares(alone) == ()
