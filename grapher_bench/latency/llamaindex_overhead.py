"""How much the LlamaIndex wrapper adds over the core: median time to rerank 200 nodes.

Run: ``.venv/bin/python -m grapher_bench.latency.llamaindex_overhead [n_nodes] [repeats]``.
Not a test (speed is reported by scripts that print numbers, not asserted by unit tests).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable

from llama_index.core.schema import NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode

from grapher_core import GraphReranker, SharedEntities
from llama_index_grapher import GraphERPostprocessor, candidates_from_nodes, relationship_proximity


def make_nodes(n: int, chunks_per_doc: int = 10, seed: int = 0) -> list[NodeWithScore]:
    """n retrieved chunks: documents of consecutive chunks, a few shared entities each."""
    rng = random.Random(seed)
    vocabulary = [f"entity {i}" for i in range(n // 2)]
    nodes = [
        TextNode(
            id_=f"n{i}",
            text=f"chunk {i} " * 40,
            metadata={"entities": rng.sample(vocabulary, 4), "title": f"doc {i // 10}"},
        )
        for i in range(n)
    ]
    for i in range(n - 1):
        if (i + 1) % chunks_per_doc:
            nodes[i].relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=f"n{i + 1}")
            nodes[i + 1].relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(node_id=f"n{i}")
    items = [NodeWithScore(node=node, score=rng.random()) for node in nodes]
    rng.shuffle(items)
    return items


def median_ms(run: Callable[[], object], repeats: int) -> float:
    for _ in range(5):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main(n: int = 200, repeats: int = 200) -> None:
    items = make_nodes(n)
    candidates = candidates_from_nodes(items)
    core = GraphReranker([SharedEntities(), relationship_proximity()], explain=0)
    wrapper = GraphERPostprocessor(proximities=[SharedEntities()])
    assert [r.id for r in core.rerank(candidates)] == [
        x.node.node_id for x in wrapper.postprocess_nodes(items, query_str="q")
    ]
    core_ms = median_ms(lambda: core.rerank(candidates), repeats)
    convert_ms = median_ms(lambda: candidates_from_nodes(items), repeats)
    wrapper_ms = median_ms(lambda: wrapper.postprocess_nodes(items, query_str="q"), repeats)
    top10_ms = median_ms(
        lambda: GraphERPostprocessor(proximities=[SharedEntities()], top_n=10).postprocess_nodes(
            items, query_str="q"
        ),
        repeats,
    )
    print(f"nodes={n} repeats={repeats} (median ms)")
    print(f"core GraphReranker.rerank (candidates prebuilt): {core_ms:.3f}")
    print(f"node -> candidate conversion alone:             {convert_ms:.3f}")
    print(
        f"GraphERPostprocessor.postprocess_nodes, all n:   {wrapper_ms:.3f}"
        f"  ratio {wrapper_ms / core_ms:.2f}"
    )
    print(
        f"GraphERPostprocessor (top_n=10, incl. init):    {top10_ms:.3f}"
        f"  ratio {top10_ms / core_ms:.2f}"
    )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
