"""Concept graphs of a benchmark's passages and questions, parsed once and cached.

Both go through the enrichment runner and its SQLite cache (the ``grapher enrich --extractor
concepts`` path), so a second run reads ~12k passage graphs in seconds instead of re-parsing.
"""

from __future__ import annotations

from collections.abc import Sequence

from grapher_core.cli.enrich import default_cache_path
from grapher_core.enrich.cache import EntityCache
from grapher_core.enrich.concepts import ConceptGraph, SpacyConceptParser, decode_graph
from grapher_core.enrich.runner import run_extraction

__all__ = ["parse_cached"]


def parse_cached(
    texts: Sequence[str], *, progress: bool = False, parser: SpacyConceptParser | None = None
) -> list[ConceptGraph]:
    """The concept graph of each text, from the shared enrichment cache when present."""
    parser = parser or SpacyConceptParser()
    with EntityCache(default_cache_path()) as cache:
        run = run_extraction(list(texts), parser, cache=cache, progress=progress)
    out = []
    for text, result in zip(texts, run.results, strict=True):
        if result.entities is None:
            raise RuntimeError(f"concept parse failed for {text[:60]!r}: {result.error}")
        out.append(decode_graph(result.entities))
    return out


if __name__ == "__main__":  # parse the four passage sets once: python -m grapher_bench.grag.data
    import sys
    import time

    from grapher_bench.data import default_benchmarks_root, load_dataset

    for name in sys.argv[1:] or ["squad_chunks", "musique", "2wikimultihopqa", "hotpotqa"]:
        started = time.perf_counter()
        dataset = load_dataset(default_benchmarks_root() / name)
        texts = [q.text for q in dataset.queries] + [o.text for o in dataset.corpus]
        graphs = parse_cached(texts)
        n_nodes = sum(len(g.nodes) for g in graphs) / len(graphs)
        print(
            f"{name}: {len(texts)} texts parsed in {time.perf_counter() - started:.1f} s "
            f"({n_nodes:.1f} concepts per text)",
            flush=True,
        )
