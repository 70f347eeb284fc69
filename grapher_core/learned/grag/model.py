"""G-RAG's reranking network (the G-RAG paper 3.2.3-3.2.4) and its MLP baseline.

Two layers of edge-weighted mean aggregation (eq. 4-5): a node's message from neighbour ``u``
is ``sum_m e_uv(m) * x_u`` over the edge's feature dimensions (common nodes, common edges,
each normalised), the messages are averaged over the neighbours (the paper's mean aggregator),
and ``g`` is ``W_self x_v + W_neigh mean_u(...)`` (ReLU between the layers). The second layer
maps back to the encoder's dimension so the score is ``s_i = y . x_i`` (eq. 8) with ``y`` the
question's embedding from the same encoder.

Substitutions (docs/grag.md): edge features stay as given (eq. 6's edge update is not used:
the paper gives no form for ``g`` on edges and edges are not scored); ``residual=True`` adds
the input vector to the output (``x_L = x_0 + GCN(x_0)``), so the untrained network ranks like
the encoder's cosine and a few hundred training queries learn a correction rather than a
ranking from scratch. The MLP baseline is the same network with no neighbour term.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from grapher_core.errors import ConfigError, InputError

__all__ = ["GRAG_VARIANTS", "EdgeMeanConv", "GRAGNet", "GRAGSpec"]

GRAG_VARIANTS: tuple[str, ...] = ("gcn", "mlp")


@dataclass(frozen=True)
class GRAGSpec:
    """What fixes the network's shape (stored in every checkpoint)."""

    variant: str = "gcn"
    embedding_dim: int = 384
    hidden: int = 64
    dropout: float = 0.1
    edge_dim: int = 2
    residual: bool = True

    def __post_init__(self) -> None:
        if self.variant not in GRAG_VARIANTS:
            raise ConfigError(f"variant must be one of {GRAG_VARIANTS}, got {self.variant!r}")
        for name in ("embedding_dim", "hidden", "edge_dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class EdgeMeanConv(nn.Module):
    """``x_v' = W_self x_v + W_neigh * mean_{u in N(v)} (sum_m e_uv(m)) x_u`` (eq. 4-5).

    ``edge_index (2, E)``: row 0 the source ``u``, row 1 the target ``v``; ``edge_weight
    (E, l)``: the ``l`` edge features. A node with no neighbour gets only its own term.
    """

    def __init__(self, in_dim: int, out_dim: int, message_passing: bool = True) -> None:
        super().__init__()
        self.self_linear = nn.Linear(in_dim, out_dim)
        self.neighbour_linear = nn.Linear(in_dim, out_dim, bias=False) if message_passing else None

    def aggregate(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor
    ) -> torch.Tensor:
        """``mean_u (sum_m e_uv(m)) x_u`` per target node ``v`` (zeros when it has none)."""
        source, target = edge_index[0], edge_index[1]
        weight = edge_weight.sum(dim=-1) if edge_weight.dim() == 2 else edge_weight
        messages = x[source] * weight.unsqueeze(-1)
        total = torch.zeros_like(x).index_add_(0, target, messages)
        count = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
        count.index_add_(0, target, torch.ones_like(weight))
        return total / count.clamp(min=1.0).unsqueeze(-1)

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor
    ) -> torch.Tensor:
        out = self.self_linear(x)
        if self.neighbour_linear is not None and edge_index.numel():
            out = out + self.neighbour_linear(self.aggregate(x, edge_index, edge_weight))
        return out


class GRAGNet(nn.Module):
    """``forward(x, edge_index, edge_weight, queries, query_index) -> (n,)`` scores.

    ``x (n, d)``: node features (encoder vectors of document [+ concept path] text);
    ``queries (b, d)``: question vectors; ``query_index (n,)``: the question of each node.
    """

    def __init__(self, spec: GRAGSpec) -> None:
        super().__init__()
        self.spec = spec
        passing = spec.variant == "gcn"
        self.conv1 = EdgeMeanConv(spec.embedding_dim, spec.hidden, passing)
        self.conv2 = EdgeMeanConv(spec.hidden, spec.embedding_dim, passing)
        self.dropout = nn.Dropout(spec.dropout)
        if spec.residual:  # start as the identity: the untrained model ranks by cosine
            nn.init.zeros_(self.conv2.self_linear.weight)
            nn.init.zeros_(self.conv2.self_linear.bias)
            if self.conv2.neighbour_linear is not None:
                nn.init.zeros_(self.conv2.neighbour_linear.weight)

    def node_vectors(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor
    ) -> torch.Tensor:
        d = self.spec.embedding_dim
        if x.dim() != 2 or x.shape[1] != d:
            raise InputError(f"expected ({d})-d node features, got {tuple(x.shape)}")
        h = torch.relu(self.conv1(self.dropout(x), edge_index, edge_weight))
        out = self.conv2(self.dropout(h), edge_index, edge_weight)
        return x + out if self.spec.residual else out

    def forward(
        self,
        x: torch.Tensor,
        edge_index: torch.Tensor,
        edge_weight: torch.Tensor,
        queries: torch.Tensor,
        query_index: torch.Tensor,
    ) -> torch.Tensor:
        nodes = self.node_vectors(x, edge_index, edge_weight)
        return (nodes * queries.reshape(-1, self.spec.embedding_dim)[query_index]).sum(dim=-1)
