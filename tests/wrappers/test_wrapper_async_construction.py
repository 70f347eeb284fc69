"""A learned-ranker wrapper built inside a coroutine reads no file on the event loop.

Building ``GraphERReranker(ranker="gat")`` or ``GraphERPostprocessor(ranker="gat")`` used to load
the checkpoint in the constructor: seconds of blocking file IO and torch set-up in an async app.
Inside a running loop the ranker now defers the load to its first rank, which the async doors
run in a worker thread. ``blockbuster`` raises on any blocking call (``os.stat``, file reads,
``time.sleep``) made on the event loop from GraphER's packages; outside a loop a bad
checkpoint is still refused at construction.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("torch_geometric", reason="needs the 'gat' extra")
pytest.importorskip("blockbuster", reason="needs the dev group (blockbuster)")
pytest.importorskip("langchain_core", reason="needs the 'langchain' extra")
pytest.importorskip("llama_index.core", reason="needs the 'llamaindex' extra")

import blockbuster

from grapher_core.errors import GraphERError
from grapher_core.learned.gat.ranker import GATRanker
from langchain_grapher import GraphERReranker
from llama_index_grapher import GraphERPostprocessor

OURS = ["grapher_core", "langchain_grapher", "llama_index_grapher"]


def test_building_gat_wrappers_in_a_coroutine_blocks_nothing() -> None:
    import torch_geometric  # noqa: F401 - imports are not the subject; file reads are

    async def build() -> list[object]:
        with blockbuster.blockbuster_ctx(OURS):
            return [GraphERReranker(ranker="gat", top_n=3), GraphERPostprocessor(ranker="gat")]

    built = asyncio.run(build())
    assert len(built) == 2


def test_a_ranker_built_in_a_coroutine_loads_on_first_use() -> None:
    async def build() -> GATRanker:
        return GATRanker()

    ranker = asyncio.run(build())
    assert ranker._checkpoint is None  # nothing read yet
    assert 0.0 < ranker.alpha < 1.0  # the checkpoint's alpha: read now, off any loop
    assert ranker._checkpoint is not None


def test_outside_a_loop_a_bad_checkpoint_is_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(GraphERError):
        GATRanker(checkpoint=tmp_path / "missing.safetensors")

    async def build() -> GATRanker:
        return GATRanker(checkpoint=tmp_path / "missing.safetensors")

    deferred = asyncio.run(build())  # in a coroutine: refused when first needed
    with pytest.raises(GraphERError):
        deferred.config  # noqa: B018
