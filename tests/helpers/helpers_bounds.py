"""Child process of the 20 000-candidate memory test: ``python helpers_bounds.py CAP_GB`` caps its
own address space, reranks a hub-dense pool with every non-learned ranker under the zero-config
proximities plus SemanticKNN, and prints one line per ranker (peak RSS in MB)."""

from __future__ import annotations

import resource
import sys
import time
import warnings


def main() -> None:
    cap = int(float(sys.argv[1]) * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    import numpy as np

    from grapher_core import Candidate, ForeignKeys, GraphReranker, SemanticKNN, SharedEntities

    n = 20_000
    rng = np.random.default_rng(0)
    weights = 1.0 / np.arange(1, 401)
    picks = rng.choice(400, size=(n, 8), p=weights / weights.sum())  # Zipf: nearly complete
    candidates = [
        Candidate(
            f"c{i}",
            score=float(1 - i / n),
            embedding=rng.standard_normal(32).astype(np.float32),
            metadata={"entities": [f"z{e}" for e in row], "links": [f"c{(i * 7) % n}"]},
        )
        for i, row in enumerate(picks)
    ]
    proximities = [SharedEntities(), ForeignKeys("links"), SemanticKNN()]
    warnings.simplefilter("ignore")  # the edge-budget warning is expected here
    for name in ("baseline", "gcs", "ppr", "qa-adjust"):
        started = time.perf_counter()
        ranked = GraphReranker(proximities, ranker=name).rerank(candidates, top_n=10)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(f"{name} n={n} top={len(ranked)} {time.perf_counter() - started:.1f}s {peak}MB")


if __name__ == "__main__":
    main()
