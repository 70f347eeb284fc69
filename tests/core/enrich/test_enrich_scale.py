"""Extraction as a pure batch function: plain Python first, then inside Ray Data if installed."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from grapher_core.enrich import EntityBatchMapper, EntityCache, SpacyEntityExtractor, cache_key
from grapher_core.enrich.cache import content_hash

pytestmark = pytest.mark.integration  # real parts: packaged models, stores, Ray

TEXTS = ["Ada Lovelace lived in London.", "Alan Turing worked at Bletchley Park.", "no names"]


def test_mapper_adds_columns_without_mutating(tmp_path: Path) -> None:
    extractor = SpacyEntityExtractor()
    mapper = EntityBatchMapper(extractor, cache_path=tmp_path / "c.sqlite")
    batch = {"id": ["a", "b", "c"], "text": list(TEXTS)}
    out = mapper(batch)
    assert batch == {"id": ["a", "b", "c"], "text": TEXTS}  # input untouched
    assert out["id"] == ["a", "b", "c"]
    assert out["entities"][0] == ["Ada Lovelace", "London"]
    assert out["entities"][2] == [] and out["entities_error"] == [None, None, None]
    with EntityCache(tmp_path / "c.sqlite") as cache:
        assert len(cache.get_many(cache_key(extractor), [content_hash(t) for t in TEXTS])) == 3
    assert pickle.loads(pickle.dumps(EntityBatchMapper(extractor))).key == "entities"
    with pytest.raises(ValueError, match="no column 'body'"):
        EntityBatchMapper(extractor, text_column="body")(batch)


def test_ray_data_map_batches(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'ray[data]')")
    pytest.importorskip("ray.data")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        rows = [{"id": str(i), "text": TEXTS[i % 3]} for i in range(9)]
        ds = ray.data.from_items(rows).map_batches(
            EntityBatchMapper,
            fn_constructor_kwargs={"extractor": SpacyEntityExtractor()},
            batch_size=4,
            concurrency=1,
        )
        result = sorted(ds.take_all(), key=lambda row: int(row["id"]))
    finally:
        ray.shutdown()
    assert [list(row["entities"]) for row in result[:3]] == [
        ["Ada Lovelace", "London"],
        ["Alan Turing", "Bletchley Park"],
        [],
    ]
    assert len(result) == 9
