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

from grapher_core.errors import ConfigError, InputError, InputTypeError, StateError

__all__ = ["ARCHITECTURES", "GraphERNet", "InferencePlan", "ModelSpec"]

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
            raise ConfigError(
                f"architecture must be one of {ARCHITECTURES}, got {self.architecture!r}"
            )
        for name in ("embedding_dim", "hidden", "heads", "layers", "edge_dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _gatv2(spec: ModelSpec) -> nn.Module:
    with warnings.catch_warnings():  # torch-geometric's import-time torch.jit.script notice
        warnings.filterwarnings(
            "ignore", message=".*torch.jit.script.*", category=DeprecationWarning
        )
        from torch_geometric.nn import GATv2Conv
    # Self-loops come with the graph (edge_arrays adds them with their own "self" flag).
    return GATv2Conv(
        spec.hidden,
        spec.hidden,
        heads=spec.heads,
        concat=False,
        edge_dim=spec.edge_dim,
        add_self_loops=False,
    )


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
            _gatv2(spec) if self.message_passing else nn.Linear(h, h) for _ in range(spec.layers)
        )
        self.fc1 = nn.Linear(h, h)
        self.fc2 = nn.Linear(h, 1)
        self.prior = nn.Parameter(torch.tensor([spec.prior_init, 0.0]))
        self.act = nn.ELU()
        self.dropout = nn.Dropout(spec.dropout)

    def forward(
        self,
        scalars: torch.Tensor,
        objects: torch.Tensor,
        object_index: torch.Tensor,
        queries: torch.Tensor,
        query_index: torch.Tensor,
        edge_index: torch.Tensor | None = None,
        edge_attr: torch.Tensor | None = None,
    ) -> torch.Tensor:
        d = self.spec.embedding_dim
        if objects.dim() != 2 or objects.shape[1] != d or queries.shape[-1] != d:
            raise InputError(
                f"expected {d}-d embeddings, got objects {tuple(objects.shape)} "
                f"and queries {tuple(queries.shape)}"
            )
        if self.message_passing and (edge_index is None or edge_attr is None):
            raise InputError("the GAT needs edge_index and edge_attr (self-loops included)")
        objects = self.dropout(objects)
        queries = self.dropout(queries.reshape(-1, d))
        q_part = self.enc_query(queries)
        o_part = self.enc_object(objects)
        q_match = self.match_query(queries)
        o_match = self.match_object(objects)
        h = (
            self.enc_scalars(scalars)
            + q_part[query_index]
            + o_part[object_index]
            + q_match[query_index] * o_match[object_index]
        )
        h = self.dropout(self.act(h))
        for layer in self.convs:
            out = layer(h, edge_index, edge_attr) if self.message_passing else layer(h)
            h = h + self.dropout(self.act(out))
        h = self.dropout(self.act(self.fc1(h)))
        return self.fc2(h).squeeze(-1) + scalars @ self.prior


class InferencePlan:
    """The same function as ``GraphERNet.forward`` in eval mode for *one* query, with less
    dispatch: torch-geometric's ``GATv2Conv`` spends most of a 200-node forward in Python
    (argument inspection, message-passing hooks), so its math is written out here with plain
    tensor ops, the query's encoder terms computed once, the edge projections of all layers
    in one matmul and the two node projections of a layer in another. The attention layers'
    weights are packed when the plan is made (for a trained, frozen model: make a new plan
    after changing it); equality with ``forward`` is tested.
    """

    def __init__(self, model: GraphERNet) -> None:
        if model.training:
            raise ConfigError("InferencePlan needs a model in eval mode (dropout off)")
        with torch.no_grad():
            self.model = model
            self.message_passing = model.message_passing
            self.heads = model.spec.heads if self.message_passing else 1
            self.hidden = model.spec.hidden
            self.layers: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = []
            edge_weights = []
            convs: list[Any] = list(model.convs)  # GATv2Conv: torch-geometric is untyped
            for conv in convs:
                if not self.message_passing:
                    continue
                if not isinstance(conv.att, torch.Tensor):
                    raise InputTypeError(
                        f"GATv2 layer without an attention tensor: {type(conv.att).__name__}"
                    )
                lin_l, lin_r = conv.lin_l, conv.lin_r
                weight = torch.cat([lin_l.weight, lin_r.weight]).t().contiguous()
                bias = torch.cat([lin_l.bias, lin_r.bias]).clone()
                self.layers.append(
                    (weight, bias, conv.att.detach().clone(), conv.bias.detach().clone())
                )
                edge_weights.append(conv.lin_edge.weight)
                if conv.res is not None or conv.concat or conv.dropout or conv.share_weights:
                    raise ConfigError(
                        "InferencePlan supports the GATv2Conv settings "
                        "GraphERNet uses (concat=False, no residual, no dropout)"
                    )
            self.negative_slope = float(convs[0].negative_slope) if self.message_passing else 0.2
            self.edge_weight = torch.cat(edge_weights).t().contiguous() if edge_weights else None

    def __call__(
        self,
        scalars: torch.Tensor,
        objects: torch.Tensor,
        query: torch.Tensor,
        edge_index: torch.Tensor | None,
        edge_attr: torch.Tensor | None,
    ) -> torch.Tensor:
        """``(n,)`` logits; ``query`` is one ``(d,)`` vector, the rest as in ``forward``."""
        model = self.model
        d = model.spec.embedding_dim
        if objects.dim() != 2 or objects.shape[1] != d or query.numel() != d:
            raise InputError(
                f"expected {d}-d embeddings, got objects {tuple(objects.shape)} "
                f"and query {tuple(query.shape)}"
            )
        act = torch.nn.functional.elu
        query = query.reshape(1, d)
        h = (
            model.enc_scalars(scalars)
            + model.enc_query(query)
            + model.enc_object(objects)
            + model.match_query(query) * model.match_object(objects)
        )
        h = act(h)
        if self.message_passing:
            if edge_index is None or edge_attr is None:
                raise InputError("the GAT needs edge_index and edge_attr (self-loops included)")
            h = self._message_passing(h, edge_index, edge_attr)
        else:
            for layer in model.convs:
                h = h + act(layer(h))
        h = act(model.fc1(h))
        return model.fc2(h).squeeze(-1) + scalars @ model.prior

    def _message_passing(
        self, h: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor
    ) -> torch.Tensor:
        n, heads, hidden = h.shape[0], self.heads, self.hidden
        source, target = edge_index[0], edge_index[1]
        if self.edge_weight is None:
            raise StateError("message passing asked for on a plan built without edge weights")
        edges = (edge_attr @ self.edge_weight).view(-1, len(self.layers), heads, hidden)
        target_heads = target.unsqueeze(-1).expand(-1, heads)
        target_features = target.view(-1, 1, 1).expand(-1, heads, hidden)
        width = heads * hidden
        for k, (weight, bias, att, out_bias) in enumerate(self.layers):
            both = torch.addmm(bias, h, weight)
            x_l = both[:, :width].view(n, heads, hidden)
            x_r = both[:, width:].view(n, heads, hidden)
            x_j = x_l[source]
            x = x_j + x_r[target] + edges[:, k]
            x = torch.nn.functional.leaky_relu(x, self.negative_slope)
            logits = (x * att).sum(dim=-1)  # (E, heads)
            top = torch.full((n, heads), float("-inf"), dtype=logits.dtype, device=h.device)
            top.scatter_reduce_(0, target_heads, logits, "amax")
            weights = (logits - top[target]).exp()
            total = torch.zeros((n, heads), dtype=logits.dtype, device=h.device)
            total.index_add_(0, target, weights)
            weights = weights / (total[target] + 1e-16)
            out = torch.zeros((n, heads, hidden), dtype=h.dtype, device=h.device)
            out.scatter_add_(0, target_features, x_j * weights.unsqueeze(-1))
            h = h + torch.nn.functional.elu(out.mean(dim=1) + out_bias)
        return h
