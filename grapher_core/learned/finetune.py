"""Fine-tuning the shipped GAT on a user's own labelled questions (``grapher train``).

The training graphs are built the way a deployed reranker builds them: the retriever's
candidates, the proximities :class:`~grapher_core.rerank.GraphReranker` detects in their
metadata, rank seeds and the checkpoint's GCS alpha -- so the features a fine-tuned model learns
on are the features it is later fed. Training starts from the shipped weights (a few epochs at a
small learning rate, early stopping on held-out questions of the training part only; epoch 0 is
the shipped model itself, so a fine-tune that never helps on validation returns it unchanged).

Folds are split by question, or by source (a database, a document) so that a fold's sources are
unseen in its training, the case of a user adding a new database.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.errors import ConfigError, InputError
from grapher_core.learned.gat.train import (
    Example,
    ObjectTable,
    TrainConfig,
    TrainingSet,
    pool_example,
)

__all__ = [
    "SEEDS",
    "Recipe",
    "assign_folds",
    "build_training_set",
    "checkpoint_config",
    "fine_tune",
    "inner_split",
    "shipped_config",
]

SEEDS = "rank"
"""The seed feature every model of ``grapher train`` reads: ``1/rank``, as the shipped
checkpoint was trained (the same seeds in every door, whatever the store's score scale)."""


@dataclass(frozen=True)
class Recipe:
    """How a fold's model (and the final one) is fine-tuned from the shipped weights; recorded in
    the checkpoint and in each fold's result, so a resumed run refuses another recipe's folds."""

    epochs: int = 5
    patience: int = 2
    lr: float = 3e-4
    batch_size: int = 16
    loss: str = "bce"  # the shipped checkpoint's own loss
    val_fraction: float = 0.2
    weight_decay: float = 1e-3
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("epochs", "patience", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
        if not (self.lr > 0 and np.isfinite(self.lr)):
            raise ConfigError(f"lr must be a finite number > 0, got {self.lr!r}")

    def loop_config(self, device: str, threads: int | None) -> TrainConfig:
        """The shared loop's settings for this recipe on ``device``."""
        return TrainConfig(
            loss=self.loss,
            epochs=self.epochs,
            patience=self.patience,
            lr=self.lr,
            weight_decay=self.weight_decay,
            batch_size=self.batch_size,
            val_fraction=self.val_fraction,
            seed=self.seed,
            device=device,
            threads=threads,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def build_training_set(
    pools: Sequence[Sequence[Candidate]],
    gold: Sequence[Sequence[str]],
    queries: np.ndarray,
    groups: Sequence[str],
    *,
    alpha: float,
    embedding_model: str,
    question_ids: Sequence[str],
) -> TrainingSet:
    """One candidate graph per question, with the graph a default ``GraphReranker`` builds for
    the pool (proximities detected from the metadata), rank seeds and GCS at ``alpha``; object
    vectors are the candidates' own (each distinct object stored once)."""
    from grapher_core.edges.graph import CandidateGraph
    from grapher_core.ranking.seeds import rank_seeds
    from grapher_core.rerank import GraphReranker

    detector = GraphReranker(None, "gcs", explain=0)
    table = ObjectTable()
    examples: list[Example] = []
    for position, pool in enumerate(pools):
        graph: CandidateGraph = detector.graph(pool)
        examples.append(
            pool_example(
                question_ids[position],
                groups[position],
                position,
                pool,
                gold[position],
                graph,
                rank_seeds(len(pool)),
                alpha,
                table,
            )
        )
    if not table.vectors:
        raise InputError("no candidates to train on: every question's pool is empty")
    return TrainingSet(
        examples,
        np.vstack(table.vectors).astype(np.float32),
        np.asarray(queries, dtype=np.float32),
        embedding_model,
        "grapher train",
        "dense",
        "detected",
        alpha,
        max(len(p) for p in pools),
        SEEDS,
    )


def assign_folds(
    groups: Sequence[str], folds: int, seed: int, *, what: str = "groups"
) -> list[int]:
    """Fold of each question: whole groups per fold (a group is a question for a split by
    question, a source for a split by source), groups shuffled with ``seed`` and dealt, largest
    first, to the fold with the fewest questions so far."""
    members: dict[str, int] = {}
    for group in groups:
        members[group] = members.get(group, 0) + 1
    if len(members) < folds:
        raise InputError(
            f"--folds {folds} needs at least {folds} {what} to split by, got {len(members)}"
        )
    names = sorted(members)
    random.Random(seed).shuffle(names)
    names.sort(key=lambda name: -members[name])  # stable: ties keep the seeded order
    sizes = [0] * folds
    fold_of: dict[str, int] = {}
    for name in names:
        fold = min(range(folds), key=lambda f: (sizes[f], f))
        fold_of[name] = fold
        sizes[fold] += members[name]
    return [fold_of[group] for group in groups]


def inner_split(
    examples: Sequence[Example], indices: Sequence[int], val_fraction: float, seed: int
) -> tuple[list[int], list[int]]:
    """Training and validation questions among ``indices`` (the training folds only): whole
    groups held out when there are five or more, else questions (the loop's own rule)."""
    from grapher_core.learned.loop import split_examples

    train, val = split_examples([examples[i] for i in indices], val_fraction, seed)
    return [indices[i] for i in train], [indices[i] for i in val]


def shipped_config() -> Any:
    """The shipped GAT checkpoint's config (its GCS alpha is the feature's alpha)."""
    from grapher_core.learned.gat.checkpoint import GAT

    return GAT.load(GAT.default_path("gat"))[1]


def fine_tune(
    data: TrainingSet,
    indices: Sequence[int],
    recipe: Recipe,
    *,
    k: int,
    device: str,
    threads: int | None,
    log: Callable[[str], None] | None = None,
) -> Any:
    """The shipped GAT fine-tuned on the questions ``indices`` of ``data`` (a part of them held
    out, early stopping on their PR@``k``: the metric the decision reads); the loop's
    :class:`~grapher_core.learned.loop.FitResult`, its model on ``device``."""
    from grapher_core.learned.gat.checkpoint import GAT
    from grapher_core.learned.gat.train import GATAdapter
    from grapher_core.learned.loop import fit, pr_at_k

    if len(indices) < 2:
        raise InputError(f"fine-tuning needs at least 2 training questions, got {len(indices)}")
    split = inner_split(data.examples, indices, recipe.val_fraction, recipe.seed)
    config = recipe.loop_config(device, threads)
    config.metric = f"PR@{k}"
    return fit(
        lambda: GAT.load(GAT.default_path("gat"))[0],
        GATAdapter(data.objects, data.queries),
        data.examples,
        config,
        metric=lambda examples, scores: pr_at_k(examples, scores, (k,)),
        split=split,
        log=log,
    )


def checkpoint_config(
    result: Any,
    data: TrainingSet,
    recipe: Recipe,
    training: dict[str, Any],
    metrics: dict[str, Any],
) -> Any:
    """The config saved beside a fine-tuned model: the shipped checkpoint's, with what it was
    fine-tuned on (``training``: the recipe added) and what it scored (``metrics``)."""
    from grapher_core.learned.gat.checkpoint import CheckpointConfig

    shipped = shipped_config()
    return CheckpointConfig(
        model=result.model.spec,
        embedding_model=data.embedding_model,
        embedding_dim=int(data.objects.shape[1]),
        alpha=shipped.alpha,
        graph="detected",
        retriever="dense",
        seeds=SEEDS,
        training={
            "fine_tuned_from": shipped.training.get("data", "shipped"),
            **recipe.to_json(),
            "best_epoch": result.best_epoch,
            "epochs_run": len(result.history) - 1,
            "train_queries": result.n_train,
            "val_queries": result.n_val,
            "seconds": round(result.seconds, 1),
            "device": result.device,
            **training,
        },
        metrics=metrics,
    )
