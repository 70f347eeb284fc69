"""The GraphER-GAT network (paper 2.2) and its MLP ablation (paper Table 4).

Layout: a node encoder, ``layers`` x ``GATv2Conv`` (multi-head attention over the candidate
graph, edge weights and kinds given to the attention as edge features), then two fully
connected layers, one score per node.

* **Node encoder.** The paper's node input is concat(GCS score, query embedding, object
  embedding). A linear layer on that concatenation equals ``W_s s + W_q q + W_o o``, which we
  compute per *distinct* query and object and then gather, instead of on a 770-wide row per
  node: the same function, several times cheaper to train. A low-rank bilinear term
  ``(U q) * (V o)`` lets the first layer see the query-object match per dimension.
* **Residuals.** Layers after the first add their output to their input, which keeps five
  rounds of message passing from washing out a node's own features on dense graphs.
* **GCS prior.** The score is ``fc2(...) + a * gcs + b * seed`` with learned ``a, b``
  (``a`` starts at ``prior_init``): the untrained network ranks like GCS, and training learns
  the corrections. On a few thousand training queries this is what keeps the first epochs
  from collapsing into "everything is irrelevant" under class imbalance.

The MLP ablation is the *same* network with every ``GATv2Conv`` replaced by a ``Linear`` of the
same width: identical encoder, depth, widths and inputs (the GCS score included), no message
passing, so a node's score depends on its own features only.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

__all__ = ["ARCHITECTURES", "GraphERNet", "ModelSpec"]

ARCHITECTURES: tuple[str, ...] = ("gat", "mlp")
N_SCALARS = 2


@dataclass(frozen=True)
class ModelSpec:
    """Hyper-parameters that fix the network's shape (stored in every checkpoint)."""

    architecture: str = "gat"
    embedding_dim: int = 384
    hidden: int = 64
    heads: int = 2
    layers: int = 5
    edge_dim: int = 7
    dropout: float = 0.1
    prior_init: float = 4.0

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, "
                             f"got {self.architecture!r}")
        for name in ("embedding_dim", "hidden", "heads", "layers", "edge_dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _gatv2(spec: ModelSpec) -> nn.Module:
    with warnings.catch_warnings():  # torch-geometric's import-time torch.jit.script notice
        warnings.filterwarnings("ignore", message=".*torch.jit.script.*",
                                category=DeprecationWarning)
        from torch_geometric.nn import GATv2Conv
    # Self-loops come with the graph (edge_arrays adds them with their own "self" flag).
    return GATv2Conv(spec.hidden, spec.hidden, heads=spec.heads, concat=False,
                     edge_dim=spec.edge_dim, add_self_loops=False)


class GraphERNet(nn.Module):
    """Node scorer; see the module docstring for the layout.

    ``forward(scalars, objects, object_index, queries, query_index, edge_index, edge_attr)``:
    ``scalars (n, 2)`` = (gcs, seed) per node; ``objects (m, d)`` distinct object embeddings
    and ``object_index (n,)`` the row of each node; ``queries (b, d)`` and ``query_index (n,)``
    likewise; ``edge_index (2, E)`` source/target with self-loops, ``edge_attr (E, edge_dim)``.
    Returns ``(n,)`` logits.
    """

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.spec = spec
        self.message_passing = spec.architecture == "gat"
        h = spec.hidden
        self.enc_scalars = nn.Linear(N_SCALARS, h)
        self.enc_query = nn.Linear(spec.embedding_dim, h, bias=False)
        self.enc_object = nn.Linear(spec.embedding_dim, h, bias=False)
        self.match_query = nn.Linear(spec.embedding_dim, h, bias=False)
        self.match_object = nn.Linear(spec.embedding_dim, h, bias=False)
        self.convs = nn.ModuleList(
            _gatv2(spec) if self.message_passing else nn.Linear(h, h)
            for _ in range(spec.layers))
        self.fc1 = nn.Linear(h, h)
        self.fc2 = nn.Linear(h, 1)
        self.prior = nn.Parameter(torch.tensor([spec.prior_init, 0.0]))
        self.act = nn.ELU()
        self.dropout = nn.Dropout(spec.dropout)

    def forward(self, scalars: torch.Tensor, objects: torch.Tensor, object_index: torch.Tensor,
                queries: torch.Tensor, query_index: torch.Tensor,
                edge_index: torch.Tensor | None = None,
                edge_attr: torch.Tensor | None = None) -> torch.Tensor:
        d = self.spec.embedding_dim
        if objects.dim() != 2 or objects.shape[1] != d or queries.shape[-1] != d:
            raise ValueError(f"expected {d}-d embeddings, got objects {tuple(objects.shape)} "
                             f"and queries {tuple(queries.shape)}")
        if self.message_passing and (edge_index is None or edge_attr is None):
            raise ValueError("the GAT needs edge_index and edge_attr (self-loops included)")
        objects = self.dropout(objects)
        queries = self.dropout(queries.reshape(-1, d))
        q_part = self.enc_query(queries)
        o_part = self.enc_object(objects)
        q_match = self.match_query(queries)
        o_match = self.match_object(objects)
        h = (self.enc_scalars(scalars) + q_part[query_index] + o_part[object_index]
             + q_match[query_index] * o_match[object_index])
        h = self.dropout(self.act(h))
        for layer in self.convs:
            out = layer(h, edge_index, edge_attr) if self.message_passing else layer(h)
            h = h + self.dropout(self.act(out))
        h = self.dropout(self.act(self.fc1(h)))
        return self.fc2(h).squeeze(-1) + scalars @ self.prior
