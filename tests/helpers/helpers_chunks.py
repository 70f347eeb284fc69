"""A chunk pool whose only evidence is chunk order, for the chunk-order share tests."""

from __future__ import annotations

from grapher_core.candidates import Candidate

SENTENCE, PASSAGE = 120, 700  # median characters of the shared sentence and passage chunk sets


def lone_neighbour_pool(n: int = 20, chars: int = 0) -> list[Candidate]:
    """The retriever's best chunk and, ranked last, the chunk after it; every other candidate
    is the only chunk of its document. Every text is ``chars`` characters long (0: no text)."""
    text = "x" * chars
    pool = [Candidate("d#1", text, metadata={"doc_id": "d", "chunk_index": 1})]
    pool += [
        Candidate(f"o{i}#0", text, metadata={"doc_id": f"o{i}", "chunk_index": 0})
        for i in range(n - 2)
    ]
    return [*pool, Candidate("d#2", text, metadata={"doc_id": "d", "chunk_index": 2})]
