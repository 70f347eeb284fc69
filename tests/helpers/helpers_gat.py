"""Small real inputs for the GAT tests: table-like candidates with FK metadata."""

from __future__ import annotations

from typing import Any

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.edges.graph import CandidateGraph, build_graph
from grapher_core.edges.keys import ForeignKeys


def table_candidates(
    n: int = 12, dim: int = 384, seed: int = 0, with_embeddings: bool = True
) -> list[Candidate]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    out = []
    for i in range(n):
        links = [f"db.t{j}" for j in (i - 1, i + 1) if 0 <= j < n and j // 3 == i // 3]
        out.append(
            Candidate(
                f"db.t{i}",
                f"Table: t{i}\nColumns: id (int), name (text)",
                float(1.0 - i / (2 * n)),
                {"foreign_keys": links},
                vectors[i] if with_embeddings else None,
            )
        )
    return out


def graph_of(candidates: list[Candidate]) -> CandidateGraph:
    return build_graph(candidates, [ForeignKeys("foreign_keys")])


def perturbed_plan(dim: int, seed: int, architecture: str = "gat") -> Any:
    """An ``InferencePlan`` of a small GAT (or MLP) with every parameter perturbed, so biases,
    attention and prior all count when paths are compared."""
    import torch

    from grapher_core.learned.gat.model import GraphERNet, InferencePlan, ModelSpec

    torch.manual_seed(seed)
    spec = ModelSpec(architecture, embedding_dim=dim, hidden=8, heads=3, layers=3)
    model = GraphERNet(spec).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.5 * torch.randn_like(parameter))
    return InferencePlan(model)


def narrow_inputs(kind: str, n: int, seed: int, dim: int) -> dict[str, np.ndarray]:
    """The GAT's inputs for a synthetic ``kind`` graph, object and query vectors cut to
    ``dim`` dimensions for a small network."""
    from grapher_bench.latency.gat import graph_inputs

    arrays = graph_inputs(kind, n, seed=seed)
    arrays["objects"] = arrays["objects"][:, :dim].copy()
    arrays["query"] = arrays["query"][:dim].copy()
    return arrays
