"""G-RAG test helpers: a deterministic fake embedder, a fake concept parser, synthetic candidates.

Nothing is downloaded: vectors are seeded by a CRC of the text, concept graphs drawn from a
Zipf vocabulary (frequent concepts shared by most candidates, as in real retrieval results).
Run as a script to measure one ``rank`` call (the numbers in docs/reliability.md)::

    .venv/bin/python tests/helpers/helpers_grag.py 2000 [question|documents] [--cap-gb 1.5]
"""

from __future__ import annotations

import resource
import sys
import time
import zlib
from collections.abc import Sequence

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.enrich.concepts import ConceptGraph, encode_graph

#: the embedding model the shipped G-RAG checkpoint was trained on (its name is checked)
SHIPPED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
QUESTION = ConceptGraph(("c1", "c7", "c30"), (("c1", "r", "c7"),), ("c1",))


class FakeEmbedder:
    """Unit vectors of ``dim`` entries, a pure function of the text."""

    def __init__(self, dim: int = 384, name: str = SHIPPED_MODEL) -> None:
        self.dim, self.name = dim, name

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = zlib.crc32(text.encode("utf-8", "surrogatepass"))
            out[i] = np.random.default_rng(seed).normal(size=self.dim)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class FakeParser:
    """Parses every text into the same graph (the question's, by default)."""

    def __init__(self, graph: ConceptGraph = QUESTION) -> None:
        self.graph = graph

    def parse(self, texts: Sequence[str], names: Sequence[str] | None = None) -> list[ConceptGraph]:
        return [self.graph for _ in texts]


def random_graph(rng: np.random.Generator, vocabulary: int = 5000, draws: int = 30) -> ConceptGraph:
    """A concept graph of about ``draws`` Zipf-distributed concepts chained by edges."""
    p = 1.0 / np.arange(1, vocabulary + 1)
    words = list(dict.fromkeys(f"c{i}" for i in rng.choice(vocabulary, size=draws, p=p / p.sum())))
    edges = tuple((words[k], "r", words[k + 1]) for k in range(len(words) - 1))
    return ConceptGraph(tuple(words), edges, tuple(words[:1]))


def synthetic_candidates(n: int, seed: int = 0) -> list[Candidate]:
    """``n`` candidates with a stored concept graph each (text = their concepts)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        graph = random_graph(rng)
        out.append(Candidate(str(i), " ".join(graph.nodes), 1.0, {"concepts": encode_graph(graph)}))
    return out


def rank_once(n: int, graph: str = "question") -> tuple[np.ndarray, float, float]:
    """``(scores, seconds, peak RSS in MB)`` of the shipped G-RAG over ``n`` candidates."""
    from grapher_core.edges.graph import build_graph
    from grapher_core.learned.grag.ranker import GRAGRanker
    from grapher_core.ranking.base import RankContext

    candidates = synthetic_candidates(n)
    ranker = GRAGRanker(embedder=FakeEmbedder(), parser=FakeParser(), graph=graph)  # type: ignore[arg-type]
    built = build_graph(candidates, [])
    start = time.perf_counter()
    scores = ranker.rank(built, np.ones(n), RankContext(candidates, "which c1 is c7?"))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return scores, seconds, peak


def main(argv: Sequence[str]) -> None:
    args = list(argv)
    if "--cap-gb" in args:  # address space of the whole process, imports included
        at = args.index("--cap-gb")
        cap = int(float(args[at + 1]) * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        del args[at : at + 2]
    n = int(args[0]) if args else 2000
    graph = args[1] if len(args) > 1 else "question"
    scores, seconds, peak = rank_once(n, graph)
    finite = bool(np.all(np.isfinite(scores)))
    print(f"g-rag n={n} graph={graph}: {seconds:.2f} s, peak RSS {peak:.0f} MB, finite={finite}")


if __name__ == "__main__":
    main(sys.argv[1:])
