"""GraphER research tooling: benchmarks, tuning, latency, the expansion study, peers, training.

The top layer: it may import ``grapher_core``, ``langchain_grapher`` and ``llama_index_grapher``;
nothing imports it. Import the pieces from their modules (``grapher_bench.data``,
``.metrics``, ...); this package file stays import-light so ``grapher-bench --help`` loads no
models.
"""
