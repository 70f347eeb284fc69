"""Benchmarks on real data: loaders, base retrievers, enrichment, metrics, the bench command.

Import the pieces from their modules (``grapher_core.bench.data``, ``.metrics``, ...); this
package file stays import-light so ``grapher --help`` does not load models.
"""
