"""The query-aware GNN (Agrawal et al., MLoG-GenAI @ KDD'25): network only.

Per candidate, its ego-subgraph (:mod:`grapher_core.learned.qa_gnn.features`) goes through

1. **Edge-aware GAT encoder** (Alg. 2): ``layers`` x ``GATConv`` (multi-head, edge features =
   ``EdgeEmbed(type) ⊕ weight``), ``h' = conv(h) + ResProj(h)``, then ``LayerNorm(ReLU(h'))``
   and dropout.
2. **Query-guided pooling** (Alg. 3): ``score_i = AttentionMLP(ProjectNodes(H)[i] +
   ProjectQuery(q))``, softmax per ego-subgraph, ``g = Σ α_i H_i``, dropout -- PyG's
   ``AttentionalAggregation`` with a gate that also sees the projected query (written with
   ``torch_geometric.utils.softmax`` and a scatter sum, which is what that class does).
   ``pooling="mean"`` is the ablation without the query.
3. **Fusion and scoring** (Alg. 4 + 7): ``f = MLP([g; q]) + Skip([g; q])`` with widths
   ``fusion`` ([512, 256, 128]) and LayerNorm, then ``Linear(128, 32) -> ReLU -> Linear(32, 1)``;
   the sigmoid of Alg. 7 is applied by the loss / by the caller (logits are returned).
   ``centre=True`` (our addition, default) also gives the fusion the centre's own encoding,
   ``[g; h_centre; q]``: pooled over an ego-subgraph alone, a chunk and its neighbours get
   nearly the same ``g`` (they share most of their ego-subgraphs), so the network cannot tell
   which of them is relevant. ``centre=False`` is the paper's ``[g; q]`` (an ablation).

The query encoder is the packaged MiniLM (384-d), not the paper's 2048-d NV-EmbedQA.
Stage 1 (label-free link reconstruction) uses :meth:`QAGNNNet.link_logits` on the encoder output.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn

from grapher_core.errors import ConfigError
from grapher_core.learned.qa_gnn.features import EDGE_TYPES

__all__ = ["POOLINGS", "QAGNNNet", "QAGNNSpec"]

POOLINGS: tuple[str, ...] = ("query", "mean")


@dataclass(frozen=True)
class QAGNNSpec:
    """Hyper-parameters that fix the network's shape (stored in every checkpoint).

    Paper 6.3: 2 layers, hidden 256, 4 heads, fusion [512, 256, 128], dropout 0.3.
    """

    embedding_dim: int = 384
    hidden: int = 256
    heads: int = 4
    layers: int = 2
    edge_types: int = len(EDGE_TYPES)
    edge_type_dim: int = 16
    fusion: tuple[int, ...] = field(default=(512, 256, 128))
    dropout: float = 0.3
    pooling: str = "query"
    centre: bool = True

    def __post_init__(self) -> None:
        for name in ("embedding_dim", "hidden", "heads", "layers", "edge_types", "edge_type_dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.hidden % self.heads:
            raise ConfigError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if not self.fusion or any(int(w) < 1 for w in self.fusion):
            raise ConfigError(f"fusion widths must be positive, got {self.fusion!r}")
        object.__setattr__(self, "fusion", tuple(int(w) for w in self.fusion))
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout!r}")
        if self.pooling not in POOLINGS:
            raise ConfigError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["fusion"] = list(self.fusion)
        return data


def _gat(in_dim: int, spec: QAGNNSpec) -> nn.Module:
    from grapher_core.learned.pyg import quiet_jit_notice

    with quiet_jit_notice():  # torch-geometric's import-time torch.jit.script notice
        from torch_geometric.nn import GATConv
    return GATConv(
        in_dim,
        spec.hidden // spec.heads,
        heads=spec.heads,
        edge_dim=spec.edge_type_dim + 1,
        dropout=spec.dropout,
        add_self_loops=True,
        fill_value="mean",
    )


class EdgeAwareEncoder(nn.Module):
    """Algorithm 2: edge-type-aware multi-head graph attention with residual projections."""

    def __init__(self, spec: QAGNNSpec) -> None:
        super().__init__()
        self.edge_embed = nn.Embedding(spec.edge_types, spec.edge_type_dim)
        dims = [spec.embedding_dim] + [spec.hidden] * spec.layers
        self.convs = nn.ModuleList(_gat(dims[i], spec) for i in range(spec.layers))
        self.residuals = nn.ModuleList(nn.Linear(dims[i], spec.hidden) for i in range(spec.layers))
        self.norms = nn.ModuleList(nn.LayerNorm(spec.hidden) for _ in range(spec.layers))
        self.dropout = nn.Dropout(spec.dropout)

    def forward(
        self,
        x: torch.Tensor,
        edge_index: torch.Tensor,
        edge_type: torch.Tensor,
        edge_weight: torch.Tensor,
    ) -> torch.Tensor:
        edge_attr = torch.cat([self.edge_embed(edge_type), edge_weight.unsqueeze(-1)], dim=-1)
        h = x
        for conv, residual, norm in zip(self.convs, self.residuals, self.norms, strict=True):
            h = self.dropout(norm(torch.relu(conv(h, edge_index, edge_attr) + residual(h))))
        return h


class QueryGuidedPooling(nn.Module):
    """Algorithm 3: attention weights per node from node + projected query, softmax per graph."""

    def __init__(self, spec: QAGNNSpec) -> None:
        super().__init__()
        self.pooling = spec.pooling
        self.project_nodes = nn.Linear(spec.hidden, spec.hidden)
        self.project_query = nn.Linear(spec.embedding_dim, spec.hidden)
        self.gate = nn.Sequential(
            nn.Linear(spec.hidden, spec.hidden // 2), nn.ReLU(), nn.Linear(spec.hidden // 2, 1)
        )
        self.dropout = nn.Dropout(spec.dropout)

    def weights(
        self, h: torch.Tensor, batch: torch.Tensor, query: torch.Tensor, n_graphs: int
    ) -> torch.Tensor:
        """Per-node attention weights (sum to 1 within each ego-subgraph)."""
        from grapher_core.learned.pyg import quiet_jit_notice

        with quiet_jit_notice():
            from torch_geometric.utils import softmax

        if self.pooling == "mean":
            counts = torch.bincount(batch, minlength=n_graphs).clamp(min=1).to(h.dtype)
            return 1.0 / counts[batch]
        scores = self.gate(self.project_nodes(h) + self.project_query(query)[batch]).squeeze(-1)
        return softmax(scores, batch, num_nodes=n_graphs)

    def forward(
        self, h: torch.Tensor, batch: torch.Tensor, query: torch.Tensor, n_graphs: int
    ) -> torch.Tensor:
        alpha = self.weights(h, batch, query, n_graphs)
        pooled = torch.zeros(n_graphs, h.shape[1], dtype=h.dtype, device=h.device)
        pooled.index_add_(0, batch, alpha.unsqueeze(-1) * h)
        return self.dropout(pooled)


class FusionHead(nn.Module):
    """Algorithms 4 and 7: MLP over [graph; query] with a linear skip, then the score head."""

    def __init__(self, spec: QAGNNSpec) -> None:
        super().__init__()
        width = spec.hidden * (2 if spec.centre else 1) + spec.embedding_dim
        layers: list[nn.Module] = []
        for i, out in enumerate(spec.fusion):
            layers += [
                nn.Linear(width if i == 0 else spec.fusion[i - 1], out),
                nn.LayerNorm(out),
                nn.ReLU(),
                nn.Dropout(spec.dropout),
            ]
        self.fusion = nn.Sequential(*layers)
        self.skip = nn.Linear(width, spec.fusion[-1])
        last = spec.fusion[-1]
        self.head = nn.Sequential(
            nn.Linear(last, max(1, last // 4)), nn.ReLU(), nn.Linear(max(1, last // 4), 1)
        )

    def forward(self, pooled: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        combined = torch.cat([pooled, query], dim=-1)
        return self.head(self.fusion(combined) + self.skip(combined)).squeeze(-1)


class QAGNNNet(nn.Module):
    """Encoder + query-guided pooling + fusion head; one logit per ego-subgraph."""

    def __init__(self, spec: QAGNNSpec) -> None:
        super().__init__()
        self.spec = spec
        self.encoder = EdgeAwareEncoder(spec)
        self.pool = QueryGuidedPooling(spec)
        self.fusion = FusionHead(spec)

    def score(
        self, h: torch.Tensor, batch: torch.Tensor, query: torch.Tensor, centre: torch.Tensor
    ) -> torch.Tensor:
        """Logits from encoded ego nodes; ``query`` is ``(n_graphs, d)`` (one row per graph),
        ``centre`` the position of each graph's centre node."""
        pooled = self.pool(h, batch, query, query.shape[0])
        if self.spec.centre:
            pooled = torch.cat([pooled, h[centre]], dim=-1)
        return self.fusion(pooled, query)

    def forward(
        self,
        x: torch.Tensor,
        edge_index: torch.Tensor,
        edge_type: torch.Tensor,
        edge_weight: torch.Tensor,
        batch: torch.Tensor,
        query: torch.Tensor,
        centre: torch.Tensor,
    ) -> torch.Tensor:
        h = self.encoder(x, edge_index, edge_type, edge_weight)
        return self.score(h, batch, query, centre)

    def link_logits(self, h: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
        """Stage 1 decoder: scaled dot product of the two ends' encodings."""
        return (h[pairs[0]] * h[pairs[1]]).sum(-1) / float(self.spec.hidden) ** 0.5
