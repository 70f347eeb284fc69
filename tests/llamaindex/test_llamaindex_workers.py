"""GraphERMentionExtractor in a real ``IngestionPipeline`` with worker processes.

``run(num_workers=N)`` gives each spawned worker a share of the nodes; mentions are
corpus-level, so an extractor fitted on the whole corpus must write exactly what one call over
the whole corpus writes, and one that was not fitted must refuse instead of writing nothing.
"""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("ahocorasick")

from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import TextNode

from grapher_core.errors import ConfigError
from llama_index_grapher import GraphERMentionExtractor

PAGES = {
    "Berlin": "Berlin is the capital of Germany, a train ride from Paris and Vienna.",
    "Paris": "Paris is the capital of France; its museums lend paintings to Berlin.",
    "Vienna": "Vienna lies on the Danube.",
    "Danube": "The Danube flows through Vienna and Budapest.",
    "Budapest": "Budapest is split by the Danube.",
    "Lisbon": "Lisbon faces the Atlantic.",
}


def nodes() -> list[TextNode]:
    return [TextNode(id_=title, text=f"{title}\n{body}") for title, body in PAGES.items()]


def mentions(extractor: GraphERMentionExtractor, num_workers: int | None) -> list[object]:
    pipeline = IngestionPipeline(transformations=[extractor], disable_cache=True)
    out = pipeline.run(nodes=nodes(), num_workers=num_workers)
    return [(node.id_, node.metadata.get("mentions"), node.metadata.get("title")) for node in out]


def test_fitted_extractor_gives_the_same_mentions_with_two_workers() -> None:
    alone = mentions(GraphERMentionExtractor(), None)
    assert alone[0] == ("Berlin", '["Paris", "Vienna"]', "Berlin")  # found across the corpus
    fitted = GraphERMentionExtractor().fit(nodes())
    assert sorted(fitted.titles or []) == sorted(PAGES) and fitted.hub_titles == []
    assert mentions(fitted, 2) == alone
    assert mentions(fitted, None) == alone  # fitting changes nothing without workers


def test_unfitted_extractor_refuses_in_a_worker() -> None:
    with pytest.raises(ConfigError, match=r"call \.fit\(nodes\) on the whole corpus"):
        mentions(GraphERMentionExtractor(), 2)


def test_hub_titles_stay_out_in_every_share() -> None:
    """A title named by most of the corpus is a hub for the corpus, not for one share."""
    corpus = [TextNode(id_="Atlas", text="Atlas\nThe Atlas of everything.")] + [
        TextNode(id_=f"p{i}", text=f"Page {i}\nAs the Atlas says, item {i}.") for i in range(30)
    ]
    extractor = GraphERMentionExtractor(max_share=0.2).fit(corpus)
    assert extractor.hub_titles == ["Atlas"]
    half = extractor(corpus[:11])  # a share where Atlas is named 10 times: not a hub there
    assert all(node.metadata.get("mentions") in (None, "[]") for node in half)
