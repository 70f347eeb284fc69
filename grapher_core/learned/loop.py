"""The training loop every learned ranker shares (GAT/MLP, G-RAG's GCN, the query-aware GNN).

A model plugs in through a small :class:`Adapter`; the loop knows nothing of its features.
Examples are one query's candidate graph each; all the loop reads of them is the
:class:`GraphExample` protocol (``group``, ``labels``, ``n_gold``). Everything else is the
adapter's business.

API
---
``GraphExample``
    ``group: str`` (queries of one group are held out together, e.g. a Spider database),
    ``labels: np.ndarray`` of shape ``(n,)`` (1.0 for gold candidates, 0.0 otherwise),
    ``n_gold: int`` (gold objects of the query, including those missing from the candidates).
``Adapter``
    ``collate(examples, device) -> batch`` builds one batch (any object) of several graphs;
    ``forward(model, batch) -> logits`` returns a 1-D tensor of one score per candidate, the
    graphs concatenated in the order of ``examples``.
``fit(build, adapter, examples, config, ...) -> FitResult``
    seeds everything (:func:`seed_everything`), sets torch's CPU threads, splits train/validation
    by group (:func:`split_examples`, or pass ``split=``), calls ``build()`` for the model, trains
    with AdamW on ``config.loss`` and stops early on a validation metric (``metric=``: a function
    ``(examples, scores) -> dict``, default :func:`pr_at_k`; ``config.metric`` names the key to
    maximise, default ``PR@10>1`` when validation has multi-object queries, else ``PR@10``).
    The best epoch's weights are restored and the model returned in eval mode.
``LOSSES`` / :func:`ranking_loss`
    ``bce`` (node-level binary cross-entropy); ``pairwise`` (G-RAG's margin loss
    ``max(0, 1 - (s_pos - s_neg))``, averaged over the gold/non-gold pairs of each query, then over
    queries); ``listwise`` (softmax cross-entropy over each query's candidates, G-RAG eq. 9:
    ``-sum_i y_i log softmax(s)_i``, averaged over queries). :func:`targets_for` builds what they
    need from the examples' labels.
:func:`predict`
    scores per example (numpy) from a model through its adapter, in inference mode.
Devices: every collate, target and loss moves its arrays with
:func:`grapher_core.learned.inputs.to_device` (embedding tables once per device,
:class:`~grapher_core.learned.inputs.DeviceTables`), so nothing is left on the CPU when the
model is on CUDA; the model ``fit`` returns stays on its device (``FitResult.device``).

Checkpoint files (safetensors tensors + a JSON config) are :mod:`grapher_core.learned.weights`.
Torch is imported lazily: importing this module is cheap.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from grapher_core.errors import ConfigError, InputError, StateError
from grapher_core.learned.inputs import to_device

__all__ = [
    "LOSSES",
    "Adapter",
    "FitResult",
    "GraphExample",
    "Log",
    "LoopConfig",
    "LossFn",
    "Metric",
    "Targets",
    "fit",
    "pr_at_k",
    "predict",
    "ranking_loss",
    "resolve_device",
    "seed_everything",
    "set_threads",
    "split_examples",
    "targets_for",
]

LOSSES: tuple[str, ...] = ("bce", "pairwise", "listwise")
Log = Callable[[str], None]
Metric = Callable[[Sequence[Any], Sequence[np.ndarray]], dict[str, float]]
LossFn = Callable[[Any, Sequence[Any], str], Any]


class GraphExample(Protocol):
    """What the loop reads of an example; models add their own fields."""

    @property
    def group(self) -> str: ...

    @property
    def labels(self) -> np.ndarray: ...

    @property
    def n_gold(self) -> int: ...


class Adapter(Protocol):
    """How one model family turns examples into a batch and a batch into scores."""

    def collate(self, examples: Sequence[Any], device: str) -> Any: ...

    def forward(self, model: Any, batch: Any) -> Any: ...


@dataclass
class LoopConfig:
    """Settings of the loop itself; a model's config subclasses it and adds its own."""

    loss: str = "pairwise"
    epochs: int = 15
    patience: int = 4
    lr: float = 5e-4
    weight_decay: float = 1e-3
    batch_size: int = 32
    val_fraction: float = 0.2
    seed: int = 0
    device: str = "auto"
    threads: int | None = 1  # CPU threads for torch; None = torch's default (see docs/gat.md)
    metric: str | None = None  # validation key to maximise; None = PR@10>1 (or PR@10)

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ConfigError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if not 0.0 < self.val_fraction < 1.0:
            raise ConfigError(f"val_fraction must be in (0, 1), got {self.val_fraction!r}")
        for name in ("epochs", "patience", "batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if self.lr <= 0 or self.weight_decay < 0:
            raise ConfigError("lr must be > 0 and weight_decay >= 0")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"threads must be >= 1 or None, got {self.threads!r}")


@dataclass
class FitResult:
    model: Any  # in eval mode, with the best epoch's weights, on ``device``
    best_epoch: int  # 0: no trained epoch beat the untrained model, which is returned
    best_metrics: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0
    n_train: int = 0
    n_val: int = 0
    device: str = "cpu"
    reference: dict[str, dict[str, float]] = field(default_factory=dict)
    train_indices: list[int] = field(default_factory=list)
    val_indices: list[int] = field(default_factory=list)


def split_examples(
    examples: Sequence[GraphExample], val_fraction: float, seed: int
) -> tuple[list[int], list[int]]:
    """Hold out whole groups (databases) when there are enough of them, else queries."""
    groups = sorted({e.group for e in examples})
    rng = random.Random(seed)
    if len(groups) >= 5 and len(groups) < len(examples):
        held = set(rng.sample(groups, max(1, round(val_fraction * len(groups)))))
        val = [i for i, e in enumerate(examples) if e.group in held]
    else:
        if len(examples) < 2:
            raise InputError(
                f"need at least 2 queries to split train/validation, got {len(examples)}"
            )
        val = sorted(rng.sample(range(len(examples)), max(1, round(val_fraction * len(examples)))))
    chosen = set(val)
    train = [i for i in range(len(examples)) if i not in chosen]
    if not train or not val:
        raise InputError(f"need at least 2 queries to split train/validation, got {len(examples)}")
    return train, val


@dataclass
class Targets:
    """What the losses need, built from the examples' labels (see :func:`targets_for`)."""

    labels: Any  # (N,) float, the graphs concatenated
    sizes: list[int]  # candidates per graph
    pairs: Any  # (2, P) node positions: gold, non-gold
    pair_weight: Any  # (P,) 1 / pairs of the query, so every query weighs the same


def targets_for(examples: Sequence[GraphExample], device: str) -> Targets:
    """Labels, graph sizes and gold/non-gold pairs of a batch, as tensors on ``device``."""
    sizes = [len(e.labels) for e in examples]
    offsets = np.cumsum([0, *sizes])
    pairs: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    for k, e in enumerate(examples):
        pos = np.flatnonzero(e.labels > 0) + offsets[k]
        neg = np.flatnonzero(e.labels == 0) + offsets[k]
        if pos.size and neg.size:
            grid = np.stack(np.meshgrid(pos, neg, indexing="ij")).reshape(2, -1)
            pairs.append(grid)
            weights.append(np.full(grid.shape[1], 1.0 / grid.shape[1], dtype=np.float32))
    pair_array = np.concatenate(pairs, axis=1) if pairs else np.zeros((2, 0), dtype=np.int64)
    weight_array = np.concatenate(weights) if weights else np.zeros(0, dtype=np.float32)
    labels = np.concatenate([np.asarray(e.labels, dtype=np.float32) for e in examples])
    return Targets(
        to_device(labels, device), sizes, to_device(pair_array, device),
        to_device(weight_array, device),
    )  # fmt: skip


def ranking_loss(kind: str, logits: Any, targets: Targets) -> Any:
    """One of :data:`LOSSES` over a batch of graphs (every query weighs the same)."""
    import torch
    import torch.nn.functional as F

    n_graphs = len(targets.sizes)
    if logits.dim() != 1 or logits.shape[0] != sum(targets.sizes):
        raise InputError(
            f"expected 1-D logits for {sum(targets.sizes)} candidates, "
            f"got shape {tuple(logits.shape)}"
        )
    if kind == "bce":
        return F.binary_cross_entropy_with_logits(logits, targets.labels)
    if kind == "pairwise":
        if targets.pairs.shape[1] == 0:
            return logits.sum() * 0.0
        margins = F.relu(1.0 - (logits[targets.pairs[0]] - logits[targets.pairs[1]]))
        return (margins * targets.pair_weight).sum() / n_graphs
    if kind == "listwise":
        padded = torch.nn.utils.rnn.pad_sequence(
            list(logits.split(targets.sizes)), batch_first=True, padding_value=-math.inf
        )
        labels = torch.nn.utils.rnn.pad_sequence(
            list(targets.labels.split(targets.sizes)), batch_first=True, padding_value=0.0
        )
        log_p = torch.log_softmax(padded, dim=1)
        # padded positions have label 0: mask them so -inf * 0 does not become nan
        terms = torch.where(labels > 0, labels * log_p, torch.zeros_like(log_p))
        return -terms.sum() / n_graphs
    raise InputError(f"loss must be one of {LOSSES}, got {kind!r}")


def pr_at_k(
    examples: Sequence[GraphExample], scores: Sequence[np.ndarray], ks: Sequence[int] = (5, 10)
) -> dict[str, float]:
    """PR@K over all and over multi-object queries (a gold object outside the candidates
    counts as missed), ties broken by candidate order, as the bench computes it."""
    hits: dict[str, list[float]] = {f"PR@{k}": [] for k in ks}
    multi_hits: dict[str, list[float]] = {f"PR@{k}>1": [] for k in ks}
    for e, values in zip(examples, scores, strict=True):
        values = np.asarray(values)
        order = np.lexsort((np.arange(values.size), -values))
        for k in ks:
            found = float(e.labels[order[:k]].sum() >= e.n_gold)
            hits[f"PR@{k}"].append(found)
            if e.n_gold > 1:
                multi_hits[f"PR@{k}>1"].append(found)
    return {key: float(np.mean(v)) if v else math.nan for key, v in {**hits, **multi_hits}.items()}


def predict(
    model: Any, adapter: Adapter, examples: Sequence[Any], device: str, batch_size: int = 64
) -> list[np.ndarray]:
    """One score array per example, in eval and inference mode."""
    import torch

    model.eval()
    scores: list[np.ndarray] = []
    with torch.inference_mode():
        for start in range(0, len(examples), batch_size):
            chunk = examples[start : start + batch_size]
            logits = adapter.forward(model, adapter.collate(chunk, device)).float().cpu().numpy()
            scores += np.split(logits, np.cumsum([len(e.labels) for e in chunk])[:-1])
    return scores


def resolve_device(choice: str) -> str:
    """``"auto"`` -> ``"cuda"`` when available, else ``"cpu"``; anything else unchanged."""
    import torch

    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return choice


def set_threads(device: str, threads: int | None) -> None:
    """Torch's CPU threads. One by default: small sparse ops gain little from two, and on a
    shared CPU OpenMP threads waiting on each other made a training step 20x slower."""
    import torch

    if device == "cpu" and threads is not None:
        torch.set_num_threads(threads)


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch, so a run with the same seed gives the same weights."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _default_key(examples: Sequence[GraphExample], val_idx: Sequence[int]) -> str:
    return "PR@10>1" if any(examples[i].n_gold > 1 for i in val_idx) else "PR@10"


def fit(
    build: Callable[[], Any],
    adapter: Adapter,
    examples: Sequence[GraphExample],
    config: LoopConfig,
    *,
    metric: Metric | None = None,
    split: tuple[list[int], list[int]] | None = None,
    reference: dict[str, dict[str, float]] | None = None,
    log: Log | None = None,
    loss_fn: LossFn | None = None,
) -> FitResult:
    """Train the model ``build()`` returns; early-stop on the validation metric.

    ``build`` is called after seeding, so the initial weights follow ``config.seed``.
    ``reference``: metrics of other rankers on the same validation queries, only logged and
    returned (e.g. the base retriever's order). ``loss_fn(logits, examples, device)`` replaces
    ``config.loss`` for objectives the named losses do not cover (the query-aware GNN's
    triplet + BCE on hard negatives, its link reconstruction).
    """
    started = time.perf_counter()
    device = resolve_device(config.device)
    set_threads(device, config.threads)
    seed_everything(config.seed)
    train_idx, val_idx = split or split_examples(examples, config.val_fraction, config.seed)
    if not train_idx or not val_idx:
        raise InputError("split needs at least one training and one validation query")
    trainer = _Trainer.start(build, adapter, config, device, loss_fn)
    key = config.metric or _default_key(examples, val_idx)
    reference = reference or {}
    if log:
        log(_split_line(len(train_idx), len(val_idx), reference, key))
    val_examples = [examples[i] for i in val_idx]
    measure = metric or pr_at_k

    def validate() -> dict[str, float]:
        return measure(val_examples, predict(trainer.model, adapter, val_examples, device))

    keeper = _BestEpoch(key, config.patience)
    history = [_untrained_row(validate(), keeper, trainer.model, log)]
    for epoch in range(1, config.epochs + 1):
        tick = time.perf_counter()
        loss = trainer.epoch(examples, train_idx)
        metrics = validate()
        row = {
            "epoch": float(epoch),
            "loss": loss,
            "seconds": time.perf_counter() - tick,
            **metrics,
        }
        history.append(row)
        if log:
            log(_epoch_line(epoch, row, metrics, key))
        if keeper.stop_after(trainer.model, epoch, metrics):
            break
    best = keeper.restore(trainer.model)
    return FitResult(
        trainer.model,
        best.epoch,
        best.metrics,
        history,
        time.perf_counter() - started,
        len(train_idx),
        len(val_idx),
        device,
        reference,
        list(train_idx),
        list(val_idx),
    )


@dataclass
class _Trainer:
    """The model with its optimiser and the generator that shuffles the training queries (one
    ``randperm`` per epoch, so runs with the same seed draw the same orders)."""

    model: Any
    adapter: Adapter
    config: LoopConfig
    device: str
    loss_fn: LossFn | None
    optimiser: Any
    generator: Any

    @classmethod
    def start(
        cls,
        build: Callable[[], Any],
        adapter: Adapter,
        config: LoopConfig,
        device: str,
        loss_fn: LossFn | None,
    ) -> _Trainer:
        """``build()`` after seeding, then AdamW and the shuffling generator, in that order."""
        import torch

        model = build().to(device)
        optimiser = torch.optim.AdamW(
            model.parameters(), lr=config.lr, weight_decay=config.weight_decay
        )
        generator = torch.Generator().manual_seed(config.seed)
        return cls(model, adapter, config, device, loss_fn, optimiser, generator)

    def epoch(self, examples: Sequence[GraphExample], train_idx: Sequence[int]) -> float:
        """One pass over the training queries in a fresh order; the mean loss per query."""
        import torch

        self.model.train()
        order = [train_idx[i] for i in torch.randperm(len(train_idx), generator=self.generator)]
        total = 0.0
        for start in range(0, len(order), self.config.batch_size):
            items = [examples[i] for i in order[start : start + self.config.batch_size]]
            loss = self._loss(items)
            self.optimiser.zero_grad()
            loss.backward()
            self.optimiser.step()
            total += float(loss.detach()) * len(items)
        return total / len(order)

    def _loss(self, items: Sequence[GraphExample]) -> Any:
        """The batch's loss: the caller's ``loss_fn`` when given, else ``config.loss``."""
        logits = self.adapter.forward(self.model, self.adapter.collate(items, self.device))
        if self.loss_fn is not None:
            return self.loss_fn(logits, items, self.device)
        return ranking_loss(self.config.loss, logits, targets_for(items, self.device))


@dataclass
class _Kept:
    """The best epoch so far: its score, number, metrics and a copy of its weights."""

    score: float
    epoch: int
    metrics: dict[str, float]
    state: dict[str, Any]


class _BestEpoch:
    """Early stopping: keeps the best epoch's weights and counts epochs without progress."""

    def __init__(self, key: str, patience: int) -> None:
        self.key = key
        self.patience = patience
        self.kept: _Kept | None = None
        self.stale = 0

    def keep(self, model: Any, epoch: int, metrics: dict[str, float]) -> None:
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.kept = _Kept(metrics[self.key], epoch, metrics, state)

    def stop_after(self, model: Any, epoch: int, metrics: dict[str, float]) -> bool:
        """Keep the epoch when it beats the best (NaN never does); ``True`` once
        ``patience`` epochs in a row have not."""
        if self.kept is None or metrics[self.key] > self.kept.score + 1e-9:
            self.keep(model, epoch, metrics)
            self.stale = 0
            return False
        self.stale += 1
        return self.stale >= self.patience

    def restore(self, model: Any) -> _Kept:
        """Load the best epoch's weights into ``model`` and leave it in eval mode."""
        if self.kept is None:  # epochs >= 1 is checked by LoopConfig; NaN never compares better
            raise StateError("training produced no epoch to keep")
        model.load_state_dict(self.kept.state)
        model.eval()
        return self.kept


def _untrained_row(
    untrained: dict[str, float], keeper: _BestEpoch, model: Any, log: Log | None
) -> dict[str, float]:
    """Epoch 0 is the model before any step (a residual identity starts at the retriever's
    order): the incumbent a trained epoch must beat, so training never ships something worse
    than where it started."""
    key = keeper.key
    if key not in untrained:
        raise InputError(f"validation metric {key!r} not among {sorted(untrained)}")
    if math.isfinite(untrained[key]):
        keeper.keep(model, 0, untrained)
    if log:
        log(f"epoch   0  (untrained)  val {key} {untrained[key]:.3f}")
    return {"epoch": 0.0, "loss": float("nan"), "seconds": 0.0, **untrained}


def _split_line(n_train: int, n_val: int, reference: dict[str, dict[str, float]], key: str) -> str:
    """The split's sizes, with the reference rankers' validation scores when given."""
    return (
        f"{n_train} training / {n_val} validation queries"
        + ("; on validation " if reference else "")
        + "; ".join(
            f"{name} " + "  ".join(f"{k} {v:.3f}" for k, v in m.items() if k in (key, "PR@10"))
            for name, m in reference.items()
        )
    )


def _epoch_line(epoch: int, row: dict[str, float], metrics: dict[str, float], key: str) -> str:
    """One epoch's progress line; a metric no validation question can have (``PR@5>1``
    without a multi-gold question: NaN) is left out rather than printed as ``nan``."""
    shown = "  ".join(f"{k} {v:.3f}" for k, v in metrics.items() if k != key and v == v)
    return (
        f"epoch {epoch:3d}  loss {row['loss']:.4f}  val {key} {metrics[key]:.3f}  "
        f"{shown}  ({row['seconds']:.1f}s)"
    )
