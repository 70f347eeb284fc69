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

from dataclasses import asdict, dataclass
from typing import Any, Literal, cast

import numpy as np
import torch
from torch import nn

from grapher_core.errors import ConfigError, InputError, InputTypeError, StateError
from grapher_core.learned.graphed import (
    GraphedKernel,
    PathChoice,
    PathChooser,
    Run,
    Tensors,
    calibration_bucket,
    check_edge_index,
    size_bucket,
)

__all__ = [
    "ARCHITECTURES",
    "INFERENCE_PATHS",
    "GraphERNet",
    "InferencePath",
    "InferencePlan",
    "ModelSpec",
    "inference_path",
    "path_choice",
]

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
    from grapher_core.learned.pyg import quiet_jit_notice

    with quiet_jit_notice():  # torch-geometric's import-time torch.jit.script notice
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


InferencePath = Literal["plan", "plan-scatter", "plan-graph", "forward"]
INFERENCE_PATHS: tuple[InferencePath, ...] = ("plan", "plan-scatter", "plan-graph", "forward")
EDGE_CHUNK = 2048
"""Edges per step of the plan's CPU attention logits: a step's (EDGE_CHUNK, heads * hidden)
rows (1 MiB at the shipped width) must come back from the allocator warm. One step over 87k
edges allocated 44 MiB tensors that page-faulted on every op; and 4096-edge steps (2 MiB),
fastest in a process that ran nothing else, page-faulted 800-900 times a call inside a real
rerank, where other allocations had moved glibc's mmap threshold (a 200-candidate entity
pool: the network 6.3 ms CPU with 4096, 4.4 with 2048, 4.4 with 1024, 5.1 with 512, in the
same interleaved loop with the GAT and GCS reranks; 2048 faulted about once a call)."""


def _bag_sum(
    table: torch.Tensor,
    rows: torch.Tensor,
    offsets: torch.Tensor,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """``embedding_bag(mode="sum")`` called as the ATen op: the functional wrapper's checks
    and reshapes cost more than the bag itself on a 200-node graph (15 bags per call)."""
    return torch.embedding_bag(table, rows, offsets, False, 0, False, weights, False, None)[0]


CPU_RULE = (
    "shipped rule for CPU: plan, the CSR-segment kernel, measured fastest at every size and "
    "density tried (table and entity graphs of 200 and 2,000 nodes: 2-24x faster than "
    "forward, 2-23x than plan-scatter; docs/speed.md); not re-measured per process, since "
    "timing forward costs up to a second per call at 2,000 entity nodes"
)
OTHER_RULE = (
    "shipped rule for devices without a CSR kernel: forward (segment_reduce, the plan's "
    "softmax, has CPU and CUDA kernels only)"
)
CUDA_UNMEASURED = (
    "not measured yet on this device and size: plan-scatter, the unpadded kernel, until the "
    "first call measures the paths"
)


_CPU_CHOICE = PathChoice("plan", CPU_RULE)
_OTHER_CHOICE = PathChoice("forward", OTHER_RULE)
_CUDA_UNMEASURED_CHOICE = PathChoice("plan-scatter", CUDA_UNMEASURED)


def _cuda_candidates(n_nodes: int, n_edges: int) -> tuple[InferencePath, ...]:
    graph: tuple[InferencePath, ...] = (
        ("plan-graph",) if size_bucket(n_nodes, n_edges) is not None else ()
    )
    return (*graph, "plan-scatter", "plan", "forward")


def path_choice(
    device: str | torch.device,
    n_nodes: int,
    n_edges: int,
    chooser: PathChooser | None = None,
    run: Run | None = None,
) -> PathChoice:
    """How a ranker runs the network on ``device`` for a graph of this size, and why; the
    one place that chooses.

    On CUDA the choice is measured (:class:`~grapher_core.learned.graphed.PathChooser`): on
    the first call of a device and size class (:func:`calibration_bucket`) with ``run``, the
    paths that may win there (``plan-graph`` for graphs that fit a CUDA-graph bucket,
    ``plan-scatter``, ``plan``, ``forward``) run on that call's inputs, the ones unequal to
    forward are left out and the fastest of the rest is kept by ``chooser`` for the process
    (the CUDA-graph replay lost to the unpadded kernel at 87k edges on an H200, so no rule
    about it held). Without a measurement yet: ``plan-scatter``. On CPU a shipped rule:
    ``plan`` (measured fastest everywhere, :data:`CPU_RULE`); other devices: ``forward``.
    """
    calibration_bucket(n_nodes, n_edges)  # refuses negative sizes, on every device
    target = torch.device(device)
    if target.type == "cpu":
        return _CPU_CHOICE
    if target.type != "cuda":
        return _OTHER_CHOICE
    fallback = _CUDA_UNMEASURED_CHOICE
    if chooser is None:
        return fallback
    if target.index is None:
        target = torch.device("cuda", torch.cuda.current_device())
    key = (str(target), calibration_bucket(n_nodes, n_edges))
    return chooser.choose(
        key,
        _cuda_candidates(n_nodes, n_edges),
        run,
        fallback,
        sync=lambda: torch.cuda.synchronize(target),
    )


def inference_path(
    device: str | torch.device,
    n_nodes: int,
    n_edges: int,
    chooser: PathChooser | None = None,
    run: Run | None = None,
) -> InferencePath:
    """The path of :func:`path_choice` (its reason left out)."""
    path = path_choice(device, n_nodes, n_edges, chooser, run).path
    if path not in INFERENCE_PATHS:  # pragma: no cover - a chooser only picks candidates
        raise StateError(f"path choice gave {path!r}, not one of {INFERENCE_PATHS}")
    return cast(InferencePath, path)


@dataclass(frozen=True)
class _Layer:
    """One GATv2 layer's weights packed for the plan."""

    weight: torch.Tensor  # (hidden, 2 * heads * hidden): lin_l and lin_r side by side
    bias: torch.Tensor
    att: torch.Tensor  # (1, heads * hidden)
    out_bias: torch.Tensor
    edge_weight: torch.Tensor  # (edge_dim, heads * hidden)


@dataclass(frozen=True)
class _Edges:
    """A graph's edges sorted by target once per call and shared by every layer and
    head. Per layer the node projections ``[x_l | x_r]`` (n, 2 * width) and the projections of
    the graph's distinct edge-feature rows ``C W_e^T`` (u, width) are stacked into one table of
    rows ``2j = x_l[j]``, ``2j + 1 = x_r[j]``, ``2n + c = W_e C[c]``; edge ``j -> i``'s attention
    input ``x_l[j] + x_r[i] + W_e e_ij`` is then one bag of three of that table's rows (``2j``,
    ``2i + 1`` and ``2n`` + its feature row's number), summed by ``embedding_bag`` in a single
    pass instead of two gathers and adds. Edge features are a handful of distinct rows (a
    weight, kind flags, a self flag), so the bag reads three rows per edge where one row per
    used feature, weighted, read five on an entity pool. Softmax over a node's incoming edges is
    a contiguous segment, and aggregation one bag per target node of rows
    ``j * 2 * heads + head`` of the same table viewed as ``(n * 2 * heads, hidden)`` (``x_l``,
    no copy) weighted by the row-major attention weights: the CSR product summed over heads,
    without a sparse tensor."""

    target: torch.Tensor
    bag_rows: torch.Tensor  # (E * 3,): rows 2j, 2i + 1, 2n + c of the table, edge by edge
    bag_starts: torch.Tensor  # (EDGE_CHUNK,): 0, 3, 6, ...: a step's bag offsets
    feature_rows: torch.Tensor  # (u, edge_dim): the distinct edge-feature rows C
    offsets: torch.Tensor  # (n + 1,) segment starts per target
    crow: torch.Tensor  # (n,) bag starts of the aggregation: offsets[:-1] * heads
    columns: torch.Tensor  # (E * heads,) rows of x_l, per target, edge after edge


def _distinct_rows(attr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, inverse)`` with ``attr == rows[inverse]`` exactly: rows grouped by a random
    projection (one sort of E numbers, where ``np.unique(axis=0)`` took 6 ms on 4k edges),
    the grouping checked, and every edge its own row if two different rows ever collide."""
    if attr.shape[0] == 0:
        return attr, np.zeros(0, dtype=np.int64)
    if attr.shape[1] > _ROW_KEY.size:  # wider than any checkpoint's features: no grouping
        return attr, np.arange(attr.shape[0], dtype=np.int64)
    # multiply and add, not ``@``: a BLAS product wakes numpy's BLAS threads, which spin on
    # the other cores after it (a 2,000-candidate call used two cores on one torch thread)
    keys = np.multiply(attr, _ROW_KEY[: attr.shape[1]], dtype=np.float64).sum(axis=1)
    order = np.argsort(keys, kind="stable")
    ordered = keys.take(order)
    starts = np.empty(ordered.size, dtype=bool)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    inverse = np.empty(ordered.size, dtype=np.int64)
    np.put(inverse, order, np.cumsum(starts) - 1)
    rows = attr.take(order.compress(starts), axis=0)
    if not np.array_equal(rows.take(inverse, axis=0), attr):  # a collision: no grouping
        return attr, np.arange(attr.shape[0], dtype=np.int64)
    return rows, inverse


_ROW_KEY = np.random.default_rng(20261128).uniform(1.0, 2.0, size=64)


def _sorted_edges(edge_index: torch.Tensor, edge_attr: torch.Tensor, n: int, heads: int) -> _Edges:
    """Edges sorted by target (checked to lie within the graph by the caller), prepared on the
    host with numpy: a dozen small array operations cost a few microseconds each there, and
    tens as torch ops (the preparation took 0.4 ms of a 4 ms entity-pool call)."""
    index = edge_index.detach().cpu().numpy()
    feature_rows, kind_of = _distinct_rows(edge_attr.detach().cpu().numpy())
    source, target = index[0].astype(np.int64), index[1].astype(np.int64)
    if target.size > 1 and bool((target[1:] < target[:-1]).any()):  # the ranker's self-loops
        order = np.argsort(target, kind="stable")
        source, target, kind_of = source.take(order), target.take(order), kind_of.take(order)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(target, minlength=n), out=offsets[1:])
    columns = np.empty((source.size, heads), dtype=np.int64)
    np.multiply(source[:, None], 2 * heads, out=columns)
    columns += np.arange(heads)
    rows = np.stack([2 * source, 2 * target + 1, 2 * n + kind_of], axis=1)
    starts = np.arange(0, min(source.size, EDGE_CHUNK) * 3, 3, dtype=np.int64)
    device = edge_index.device

    def on(array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(device)

    return _Edges(
        target=on(target),
        bag_rows=on(rows.reshape(-1)),
        bag_starts=on(starts),
        feature_rows=on(feature_rows),
        offsets=on(offsets),
        crow=on(offsets[:-1] * heads),
        columns=on(columns.reshape(-1)),
    )


SHIFT_SPREAD = 60.0
"""Softmax subtracts one maximum for every segment when the call's logits span less than this:
``exp`` of the lowest is then at least ``e**-60`` (1e-26, well inside float32), so no segment
sums to zero, and the result equals the per-segment shift's (softmax is shift-invariant) while
it saves a segment reduction and a gather per layer. Wider spreads shift per segment."""


def _segment_softmax(logits: torch.Tensor, edges: _Edges) -> torch.Tensor:
    """``(E, heads)`` softmax weights over each target's segment of incoming edges, in place of
    ``logits``, each divided by the number of heads (the layer's mean over heads)."""
    if logits.numel() == 0:
        return logits
    low, high = torch.aminmax(logits)
    if float(high) - float(low) < SHIFT_SPREAD:  # a host read: free on CPU, a sync on CUDA
        weights = logits.sub_(high).exp_()
    else:
        top = torch.segment_reduce(logits, "max", offsets=edges.offsets, axis=0)
        weights = logits.sub_(top.index_select(0, edges.target)).exp_()
    total = torch.segment_reduce(weights, "sum", offsets=edges.offsets, axis=0)
    return weights.div_(total.mul_(logits.shape[1]).index_select(0, edges.target))


class InferencePlan:
    """The same function as ``GraphERNet.forward`` in eval mode for *one* query, with less
    dispatch and memory traffic. torch-geometric's ``GATv2Conv`` spends a 200-node forward
    in Python, and at 87k edges in allocating and page-faulting edge-sized tensors; here the
    math is plain tensor ops with the query's encoder terms computed once and the weights
    packed when the plan is made (for a trained, frozen model: make a new plan after changing
    it). ``path`` (see :func:`inference_path`): ``"plan"``, the CSR-segment kernel (CPU);
    ``"plan-scatter"``, the scatter kernel (CUDA); ``"plan-graph"``, the scatter kernel in
    padded buffers, replayed as a CUDA graph per size bucket on CUDA (run eagerly elsewhere,
    :mod:`~grapher_core.learned.graphed`);
    ``"forward"``, the model itself. Equality of the four is tested.
    """

    def __init__(self, model: GraphERNet) -> None:
        if model.training:
            raise ConfigError("InferencePlan needs a model in eval mode (dropout off)")
        self.model = model
        self.message_passing = model.message_passing
        self.heads = model.spec.heads if self.message_passing else 1
        self.hidden = model.spec.hidden
        with torch.no_grad():
            self.encode_query = (
                torch.cat([model.enc_query.weight, model.match_query.weight]).t().contiguous()
            )
            self.encode_object = (
                torch.cat([model.enc_object.weight, model.match_object.weight]).t().contiguous()
            )
            convs: list[Any] = list(model.convs) if self.message_passing else []
            self.layers = [self._pack(conv) for conv in convs]
        self.negative_slope = float(convs[0].negative_slope) if convs else 0.2
        self.edge_weight = (
            torch.cat([layer.edge_weight for layer in self.layers], dim=1) if self.layers else None
        )
        self.graphed = GraphedKernel(self._graph_kernel, name=model.spec.architecture)
        self.chooser = PathChooser()

    def choose(
        self,
        scalars: torch.Tensor,
        objects: torch.Tensor,
        query: torch.Tensor,
        edge_index: torch.Tensor | None,
        edge_attr: torch.Tensor | None,
        edges_checked: bool = False,
    ) -> PathChoice:
        """The path for this call's device and size (:func:`path_choice`), measured on these
        inputs when this plan has not measured the size class yet; a CUDA-graph bucket whose
        replay lost keeps no buffers."""
        n = objects.shape[0]
        n_edges = 0 if edge_index is None else int(edge_index.shape[1])

        def run(path: str) -> torch.Tensor:
            return self(
                scalars, objects, query, edge_index, edge_attr, cast(Any, path), edges_checked
            )

        choice = path_choice(objects.device, n, n_edges, self.chooser, run)
        bucket = size_bucket(n, n_edges)
        if choice.measured and choice.path != "plan-graph" and bucket is not None:
            self.graphed.release(bucket)  # no-op once released
        return choice

    def run(
        self,
        scalars: torch.Tensor,
        objects: torch.Tensor,
        query: torch.Tensor,
        edge_index: torch.Tensor | None,
        edge_attr: torch.Tensor | None,
        edges_checked: bool = False,
    ) -> torch.Tensor:
        """``(n,)`` logits by the path :meth:`choose` gives (``edges_checked``: as in
        ``__call__``)."""
        choice = self.choose(scalars, objects, query, edge_index, edge_attr, edges_checked)
        path = cast(Any, choice.path)
        return self(scalars, objects, query, edge_index, edge_attr, path, edges_checked)

    @staticmethod
    def _pack(conv: Any) -> _Layer:  # GATv2Conv: torch-geometric is untyped
        if not isinstance(conv.att, torch.Tensor):
            raise InputTypeError(
                f"GATv2 layer without an attention tensor: {type(conv.att).__name__}"
            )
        if conv.res is not None or conv.concat or conv.dropout or conv.share_weights:
            raise ConfigError(
                "InferencePlan supports the GATv2Conv settings "
                "GraphERNet uses (concat=False, no residual, no dropout)"
            )
        lin_l, lin_r = conv.lin_l, conv.lin_r
        return _Layer(
            weight=torch.cat([lin_l.weight, lin_r.weight]).t().contiguous(),
            bias=torch.cat([lin_l.bias, lin_r.bias]).clone(),
            att=conv.att.detach().reshape(1, -1).clone(),
            out_bias=conv.bias.detach().clone(),
            edge_weight=conv.lin_edge.weight.detach().t().contiguous(),
        )

    @torch.no_grad()  # an inference plan: out= buffers and in-place ops, no autograd
    def __call__(
        self,
        scalars: torch.Tensor,
        objects: torch.Tensor,
        query: torch.Tensor,
        edge_index: torch.Tensor | None,
        edge_attr: torch.Tensor | None,
        path: InferencePath = "plan",
        edges_checked: bool = False,
    ) -> torch.Tensor:
        """``(n,)`` logits; ``query`` is one ``(d,)`` vector, the rest as in ``forward``.
        ``edges_checked``: the caller made the edges within the graph (the ranker builds them
        from its csr graph), so the plan skips its check, a device sync on a GPU."""
        model = self.model
        d = model.spec.embedding_dim
        if objects.dim() != 2 or objects.shape[1] != d or query.numel() != d:
            raise InputError(
                f"expected {d}-d embeddings, got objects {tuple(objects.shape)} "
                f"and query {tuple(query.shape)}"
            )
        if path not in INFERENCE_PATHS:
            raise ConfigError(f"path must be one of {INFERENCE_PATHS}, got {path!r}")
        if path == "forward":
            n = objects.shape[0]
            index = torch.arange(n, device=objects.device)
            zeros = torch.zeros(n, dtype=torch.long, device=objects.device)
            return model(scalars, objects, index, query.reshape(1, d), zeros, edge_index, edge_attr)
        edges = None if edge_index is None or edge_attr is None else (edge_index, edge_attr)
        if self.message_passing and edges is None:
            raise InputError("the GAT needs edge_index and edge_attr (self-loops included)")
        if edges is not None and path == "plan-graph":
            nodes, shared = (scalars, objects), (query.reshape(-1),)
            return self.graphed(nodes, shared, edges[0], (edges[1],), edges_checked)
        if edges is not None and path == "plan":
            h = self._encode(scalars, objects, query.reshape(1, d))
            if self.message_passing:
                h = self._segments(h, *edges, edges_checked)
            return self._head(scalars, h)
        return self._scatter_call(scalars, objects, query, edges)

    def _scatter_call(
        self,
        scalars: torch.Tensor,
        objects: torch.Tensor,
        query: torch.Tensor,
        edges: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> torch.Tensor:
        """The whole call with the scatter kernel (``edges``: index and features): no host
        sync and fixed shapes throughout, which is what lets ``plan-graph`` capture it as a
        CUDA graph."""
        h = self._encode(scalars, objects, query.reshape(1, -1))
        if self.message_passing:
            assert edges is not None  # checked by the caller
            h = self._scatter(h, *edges)
        return self._head(scalars, h)

    def _graph_kernel(
        self, nodes: Tensors, shared: Tensors, edge_index: torch.Tensor, edges: Tensors
    ) -> torch.Tensor:
        """``_scatter_call`` in the shape :class:`GraphedKernel` replays."""
        return self._scatter_call(nodes[0], nodes[1], shared[0], (edge_index, edges[0]))

    def _head(self, scalars: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """Per node: residual linear layers when there is no message passing (the MLP), then
        the two fully connected layers and the GCS prior."""
        model = self.model
        if not self.message_passing:
            for layer in model.convs:
                h = h + torch.nn.functional.elu(layer(h))
        h = torch.nn.functional.elu(model.fc1(h))
        return model.fc2(h).squeeze(-1) + scalars @ model.prior

    def _encode(
        self, scalars: torch.Tensor, objects: torch.Tensor, query: torch.Tensor
    ) -> torch.Tensor:
        """The node encoder: one product for both object terms, the query's folded in a bias."""
        model, hidden = self.model, self.hidden
        q = query @ self.encode_query
        o = objects @ self.encode_object
        h = torch.addmm(
            model.enc_scalars.bias + q[:, :hidden], scalars, model.enc_scalars.weight.t()
        )
        h += o[:, :hidden]
        h.addcmul_(o[:, hidden:], q[:, hidden:])
        return torch.nn.functional.elu(h)

    def _segments(
        self,
        h: torch.Tensor,
        edge_index: torch.Tensor,
        edge_attr: torch.Tensor,
        edges_checked: bool = False,
    ) -> torch.Tensor:
        """Message passing over sorted CSR segments; the CPU kernel (see :class:`_Edges`)."""
        n, heads, hidden = h.shape[0], self.heads, self.hidden
        width = heads * hidden
        if not edges_checked:
            check_edge_index(edge_index, n)
        edges = _sorted_edges(edge_index, edge_attr, n, heads)
        feature_rows = edges.feature_rows.to(h.dtype)
        table = h.new_empty(2 * n + feature_rows.shape[0], width)
        for layer in self.layers:
            torch.addmm(layer.bias, h, layer.weight, out=table[: 2 * n].view(n, 2 * width))
            torch.mm(feature_rows, layer.edge_weight, out=table[2 * n :])
            weights = _segment_softmax(self._logits(table, edges, layer), edges)
            out = _bag_sum(  # x_l summed over heads and neighbours, the mean's 1/heads folded in
                table[: 2 * n].view(2 * n * heads, hidden), edges.columns, edges.crow,
                weights.view(-1),
            )  # fmt: skip
            h = h + torch.nn.functional.elu(out.add_(layer.out_bias))
        return h

    def _logits(self, table: torch.Tensor, edges: _Edges, layer: _Layer) -> torch.Tensor:
        """``(E, heads)`` attention logits ``att . leaky_relu(x_l[j] + x_r[i] + W_e e_ij)``,
        EDGE_CHUNK edges at a time (edge-sized tensors of 44 MiB page-faulted on every op);
        the per-head dot products as one in-place product and one sum per step."""
        heads, hidden = self.heads, self.hidden
        n_edges = edges.target.numel()
        logits = table.new_empty(n_edges, heads)
        att = layer.att.view(1, heads, hidden)
        for first in range(0, n_edges, EDGE_CHUNK):
            last = min(first + EDGE_CHUNK, n_edges)
            z = _bag_sum(
                table, edges.bag_rows[first * 3 : last * 3], edges.bag_starts[: last - first]
            )
            torch.nn.functional.leaky_relu_(z, self.negative_slope)
            torch.sum(z.view(-1, heads, hidden).mul_(att), -1, out=logits[first:last])
        return logits

    def _scatter(
        self, h: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor
    ) -> torch.Tensor:
        """Message passing with scatter ops over unsorted edges: the kernel measured on CUDA."""
        n, heads, hidden = h.shape[0], self.heads, self.hidden
        source, target = edge_index[0], edge_index[1]
        if self.edge_weight is None:
            raise StateError("message passing asked for on a plan built without edge weights")
        edges = (edge_attr @ self.edge_weight).view(-1, len(self.layers), heads, hidden)
        target_heads = target.unsqueeze(-1).expand(-1, heads)
        target_features = target.view(-1, 1, 1).expand(-1, heads, hidden)
        width = heads * hidden
        for k, layer in enumerate(self.layers):
            both = torch.addmm(layer.bias, h, layer.weight)
            x_l = both[:, :width].view(n, heads, hidden)
            x_r = both[:, width:].view(n, heads, hidden)
            x_j = x_l[source]
            x = x_j + x_r[target] + edges[:, k]
            x = torch.nn.functional.leaky_relu(x, self.negative_slope)
            logits = (x * layer.att.view(1, heads, hidden)).sum(dim=-1)  # (E, heads)
            top = torch.full((n, heads), float("-inf"), dtype=logits.dtype, device=h.device)
            top.scatter_reduce_(0, target_heads, logits, "amax")
            weights = (logits - top[target]).exp()
            total = torch.zeros((n, heads), dtype=logits.dtype, device=h.device)
            total.index_add_(0, target, weights)
            weights = weights / (total[target] + 1e-16)
            out = torch.zeros((n, heads, hidden), dtype=h.dtype, device=h.device)
            out.scatter_add_(0, target_features, x_j * weights.unsqueeze(-1))
            h = h + torch.nn.functional.elu(out.mean(dim=1) + layer.out_bias)
        return h
