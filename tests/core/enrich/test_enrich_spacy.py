"""The spaCy extractor on real text and the runners around it (no mocks: the real model)."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from grapher_core import CorpusObject, build_graph
from grapher_core.candidates import Candidate
from grapher_core.edges.entities import SharedEntities
from grapher_core.enrich import (
    EntityCache,
    EntityExtractor,
    ExtractionResult,
    SpacyEntityExtractor,
    dedupe_entities,
    enrich_objects,
    extract_entities,
    run_extraction,
)
from grapher_core.metadata import normalise_entity

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray

TEXTS = [
    "Barack Obama was born in Honolulu, Hawaii. Barack  Obama later moved to Chicago.",
    "The Gunboat War was fought between the United Kingdom and Denmark in 1810.",
    "nothing to see here",
    "",
]


@pytest.fixture(scope="module")
def spacy_extractor() -> SpacyEntityExtractor:
    return SpacyEntityExtractor()


def test_entities_labels_and_dedupe(spacy_extractor: SpacyEntityExtractor) -> None:
    obama, war, nothing, empty = extract_entities(TEXTS, spacy_extractor)
    assert obama is not None and war is not None
    assert obama[:3] == ["Barack Obama", "Honolulu", "Hawaii"]
    assert obama.count("Barack Obama") == 1  # "Barack  Obama" is the same entity
    assert "United Kingdom" in war  # leading article dropped
    assert "1810" not in war  # DATE is not a default label
    assert nothing == [] and empty == []
    assert spacy_extractor.nlp.pipe_names == ["tok2vec", "ner"]


def test_configurable_labels() -> None:
    dates = SpacyEntityExtractor(["DATE"])
    assert extract_entities([TEXTS[1]], dates) == [["1810"]]
    assert dates.version != SpacyEntityExtractor().version  # labels are part of the cache key


def test_bad_configuration_is_named() -> None:
    with pytest.raises(ValueError, match="NOT_A_LABEL"):
        SpacyEntityExtractor(["NOT_A_LABEL"]).extract_batch(["x"])
    with pytest.raises(TypeError, match="not a string"):
        SpacyEntityExtractor("PERSON")
    with pytest.raises(ValueError, match="empty"):
        SpacyEntityExtractor([])
    with pytest.raises(ImportError, match="not installed"):
        SpacyEntityExtractor(model="no_such_model_xyz").extract_batch(["x"])
    with pytest.raises(TypeError, match="position 1"):
        extract_entities(["ok", 3], SpacyEntityExtractor())  # type: ignore[list-item]


def test_protocol_and_pickle(spacy_extractor: SpacyEntityExtractor) -> None:
    assert isinstance(spacy_extractor, EntityExtractor)
    spacy_extractor.extract_batch(["warm"])
    clone = pickle.loads(pickle.dumps(spacy_extractor))
    assert clone._spacy._nlp is None  # reloads lazily where it lands (a Ray worker)
    assert clone.extract_batch(TEXTS[:1]) == spacy_extractor.extract_batch(TEXTS[:1])


def test_dedupe_keeps_first_surface_form() -> None:
    assert dedupe_entities(["Paris ", "paris", "PARIS", " ", "New  York", "new york"]) == [
        "Paris",
        "New York",
    ]


def test_enrich_objects_never_mutates(
    spacy_extractor: SpacyEntityExtractor, tmp_path: Path
) -> None:
    metadata = {"title": "Obama", "entities": ["old"]}
    objects = [CorpusObject("a", TEXTS[0], metadata), CorpusObject("b", TEXTS[1])]
    with EntityCache(tmp_path / "c") as cache:
        report = enrich_objects(objects, spacy_extractor, key="ents", cache=cache)
    assert metadata == {"title": "Obama", "entities": ["old"]}
    assert objects[0].metadata is metadata
    first = report.objects[0]
    assert first.metadata["entities"] == ["old"] and first.metadata["title"] == "Obama"
    assert first.metadata["ents"][0] == "Barack Obama"
    assert report.failed == [] and report.n_computed == 2
    with pytest.raises(ValueError, match="key"):
        enrich_objects(objects, spacy_extractor, key="")
    with pytest.raises(TypeError, match="CorpusObject"):
        enrich_objects([{"id": "x"}], spacy_extractor)  # type: ignore[list-item]


class CountingExtractor:
    """Wraps an extractor and counts the texts it is asked for (to see what the cache saves)."""

    def __init__(self, inner: SpacyEntityExtractor) -> None:
        self.inner = inner
        self.name = inner.name
        self.version = inner.version
        self.model = inner.model
        self.batch_size = 2
        self.seen: list[str] = []

    def extract_batch(self, texts: Sequence[str]) -> list[ExtractionResult]:
        self.seen.extend(texts)
        return self.inner.extract_batch(texts)


def test_cache_skips_done_and_dedupes(
    spacy_extractor: SpacyEntityExtractor, tmp_path: Path
) -> None:
    with EntityCache(tmp_path / "cache.sqlite") as cache:
        counting = CountingExtractor(spacy_extractor)
        texts = [TEXTS[0], TEXTS[1], TEXTS[0]]
        first = run_extraction(texts, counting, cache=cache)
        assert counting.seen == TEXTS[:2]  # identical texts extracted once
        assert first.n_unique == 2 and first.n_computed == 2
        counting.seen.clear()
        second = run_extraction([*texts, TEXTS[2]], counting, cache=cache)
        assert counting.seen == [TEXTS[2]]  # only the new text
        assert second.n_cached == 2
        assert [r.entities for r in second.results[:3]] == [r.entities for r in first.results]


def test_wrong_result_count_is_an_error(spacy_extractor: SpacyEntityExtractor) -> None:
    class Broken(CountingExtractor):
        def extract_batch(self, texts: Sequence[str]) -> list[ExtractionResult]:
            return []

    with pytest.raises(ValueError, match="returned 0 results for a batch of 2"):
        extract_entities(TEXTS[:2], Broken(spacy_extractor))


def test_hotpot_slice_links_passages(
    spacy_extractor: SpacyEntityExtractor, hotpot_slice: Callable[[int], Path]
) -> None:
    """Real passages: every object gets entities and SharedEntities finds edges among them."""
    records = [json.loads(line) for line in hotpot_slice(60).read_text().splitlines()]
    objects = [CorpusObject(r["id"], r["text"], r["metadata"]) for r in records]
    report = enrich_objects(objects, spacy_extractor)
    with_entities = [o for o in report.objects if o.metadata["entities"]]
    assert len(with_entities) >= 55
    for obj in report.objects:
        keys = [normalise_entity(e) for e in obj.metadata["entities"]]
        assert len(keys) == len(set(keys))
    candidates = [Candidate(o.id, o.text, 1.0, o.metadata) for o in report.objects]
    graph = build_graph(candidates, [SharedEntities()])
    assert graph.adjacency.nnz > 0
