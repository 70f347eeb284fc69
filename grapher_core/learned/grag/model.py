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

The aggregation is a sparse product (:class:`NeighbourMean`): the weighted adjacency times the
node matrix, or, for the ranker's complete question graph, the candidate-concept incidence
twice. No tensor has a row per edge, so memory follows the nodes and the stored pairs, not the
edges (docs/reliability.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from grapher_core.errors import ConfigError, InputError

if TYPE_CHECKING:
    from grapher_core.learned.grag.features import NeighbourWeights

__all__ = ["GRAG_VARIANTS", "EdgeMeanConv", "GRAGNet", "GRAGSpec", "NeighbourMean"]

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


def _sparse(rows: Any, cols: Any, values: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
    index = torch.stack([torch.as_tensor(rows), torch.as_tensor(cols)]).to(
        device=values.device, dtype=torch.long
    )
    return torch.sparse_coo_tensor(index, values, shape, check_invariants=False).coalesce()


class NeighbourMean:
    """``mean_{u in N(v)} (sum_m e_uv(m)) x_u`` for every node ``v`` as sparse products.

    ``pairs`` (``n x n``, row the target) holds listed edges' summed features; ``incidence``
    (``n x C``) with ``column_weight`` (``C``) holds pairs in factored form,
    ``W = L diag(w) L^T`` less its diagonal; ``degree`` is the mean's denominator. Neither
    form makes a tensor with a row per edge.
    """

    def __init__(
        self,
        degree: torch.Tensor,
        pairs: torch.Tensor | None = None,
        incidence: torch.Tensor | None = None,
        column_weight: torch.Tensor | None = None,
    ) -> None:
        self.degree = degree
        self.pairs = pairs
        self.incidence = incidence
        self.incidence_t = None if incidence is None else incidence.t().coalesce()
        self.column_weight = column_weight
        self.self_weight = (
            None
            if incidence is None or column_weight is None
            else torch.sparse.mm(incidence, column_weight.reshape(-1, 1)).reshape(-1)
        )

    @classmethod
    def from_edges(
        cls, edge_index: torch.Tensor, edge_weight: torch.Tensor, n: int
    ) -> NeighbourMean:
        """Listed edges: ``edge_index (2, E)`` source then target, ``edge_weight (E, l)`` or
        ``(E,)``; repeated edges count as often as they are listed."""
        source, target = edge_index[0], edge_index[1]
        weight = edge_weight.sum(dim=-1) if edge_weight.dim() == 2 else edge_weight
        degree = torch.zeros(n, dtype=weight.dtype, device=weight.device)
        degree.index_add_(0, target, torch.ones_like(weight))
        return cls(degree, pairs=_sparse(target, source, weight, (n, n)))

    @classmethod
    def from_weights(
        cls, weights: NeighbourWeights, device: str | torch.device = "cpu"
    ) -> NeighbourMean:
        """The ranker's :class:`~grapher_core.learned.grag.features.NeighbourWeights`; the
        factored part is computed in float64 (its diagonal is subtracted, not skipped)."""
        degree = torch.from_numpy(np.asarray(weights.degree, dtype=np.float64)).to(device)
        pairs = None
        if weights.pairs is not None and weights.pairs.nnz:
            coo = weights.pairs.tocoo()
            values = torch.from_numpy(coo.data.astype(np.float32)).to(device)
            pairs = _sparse(coo.row, coo.col, values, (weights.n, weights.n))
        incidence = column_weight = None
        if weights.incidence is not None and weights.column_weight is not None:
            coo = weights.incidence.tocoo()
            values = torch.from_numpy(coo.data.astype(np.float64)).to(device)
            incidence = _sparse(coo.row, coo.col, values, coo.shape)
            column_weight = torch.from_numpy(weights.column_weight.astype(np.float64)).to(device)
        return cls(degree, pairs, incidence, column_weight)

    @property
    def has_edges(self) -> bool:
        return bool((self.degree > 0).any())

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(x)
        if self.pairs is not None:
            out = out + torch.sparse.mm(self.pairs.to(x.dtype), x)
        if (
            self.incidence is not None
            and self.incidence_t is not None
            and self.column_weight is not None
            and self.self_weight is not None
        ):
            wide = x.to(torch.float64)
            shared = torch.sparse.mm(self.incidence_t, wide) * self.column_weight.unsqueeze(-1)
            factored = (
                torch.sparse.mm(self.incidence, shared) - self.self_weight.unsqueeze(-1) * wide
            )
            out = out + factored.to(x.dtype)
        return out / self.degree.to(x.dtype).clamp(min=1.0).unsqueeze(-1)


class EdgeMeanConv(nn.Module):
    """``x_v' = W_self x_v + W_neigh * mean_{u in N(v)} (sum_m e_uv(m)) x_u`` (eq. 4-5).

    ``edge_index (2, E)``: row 0 the source ``u``, row 1 the target ``v``; ``edge_weight
    (E, l)``: the ``l`` edge features; or, in place of both, a :class:`NeighbourMean`. A node
    with no neighbour gets only its own term.
    """

    def __init__(self, in_dim: int, out_dim: int, message_passing: bool = True) -> None:
        super().__init__()
        self.self_linear = nn.Linear(in_dim, out_dim)
        self.neighbour_linear = nn.Linear(in_dim, out_dim, bias=False) if message_passing else None

    def aggregate(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor
    ) -> torch.Tensor:
        """``mean_u (sum_m e_uv(m)) x_u`` per target node ``v`` (zeros when it has none)."""
        return NeighbourMean.from_edges(edge_index, edge_weight, x.shape[0])(x)

    def forward(
        self,
        x: torch.Tensor,
        edge_index: torch.Tensor | NeighbourMean | None,
        edge_weight: torch.Tensor | None = None,
    ) -> torch.Tensor:
        out = self.self_linear(x)
        if self.neighbour_linear is None:
            return out
        mean = _neighbour_mean(edge_index, edge_weight, x.shape[0])
        if mean is not None:
            out = out + self.neighbour_linear(mean(x))
        return out


def _neighbour_mean(
    edges: torch.Tensor | NeighbourMean | None, edge_weight: torch.Tensor | None, n: int
) -> NeighbourMean | None:
    """The aggregation for listed edges or a prepared one; ``None`` when there are no edges."""
    if edges is None:
        return None
    if isinstance(edges, NeighbourMean):
        return edges if edges.has_edges else None
    if not edges.numel():
        return None
    if edge_weight is None:
        raise InputError("listed edges need their edge_weight")
    return NeighbourMean.from_edges(edges, edge_weight, n)


class GRAGNet(nn.Module):
    """``forward(x, edge_index, edge_weight, queries, query_index) -> (n,)`` scores.

    ``x (n, d)``: node features (encoder vectors of document [+ concept path] text);
    ``queries (b, d)``: question vectors; ``query_index (n,)``: the question of each node.
    """

    def __init__(self, spec: GRAGSpec) -> None:
        super().__init__()
        self.spec = spec
        passing = spec.variant == "gcn"
        self.passing = passing
        self.conv1 = EdgeMeanConv(spec.embedding_dim, spec.hidden, passing)
        self.conv2 = EdgeMeanConv(spec.hidden, spec.embedding_dim, passing)
        self.dropout = nn.Dropout(spec.dropout)
        if spec.residual:  # start as the identity: the untrained model ranks by cosine
            nn.init.zeros_(self.conv2.self_linear.weight)
            nn.init.zeros_(self.conv2.self_linear.bias)
            if self.conv2.neighbour_linear is not None:
                nn.init.zeros_(self.conv2.neighbour_linear.weight)

    def node_vectors(
        self,
        x: torch.Tensor,
        edge_index: torch.Tensor | NeighbourMean,
        edge_weight: torch.Tensor | None = None,
    ) -> torch.Tensor:
        d = self.spec.embedding_dim
        if x.dim() != 2 or x.shape[1] != d:
            raise InputError(f"expected ({d})-d node features, got {tuple(x.shape)}")
        mean = _neighbour_mean(edge_index, edge_weight, x.shape[0]) if self.passing else None
        h = torch.relu(self.conv1(self.dropout(x), mean))
        out = self.conv2(self.dropout(h), mean)
        return x + out if self.spec.residual else out

    def forward(
        self,
        x: torch.Tensor,
        edge_index: torch.Tensor | NeighbourMean,
        edge_weight: torch.Tensor | None,
        queries: torch.Tensor,
        query_index: torch.Tensor,
    ) -> torch.Tensor:
        """Scores; ``edge_index`` may be a prepared :class:`NeighbourMean` (``edge_weight``
        then ``None``): the aggregation is built once and shared by both layers."""
        nodes = self.node_vectors(x, edge_index, edge_weight)
        return (nodes * queries.reshape(-1, self.spec.embedding_dim)[query_index]).sum(dim=-1)
