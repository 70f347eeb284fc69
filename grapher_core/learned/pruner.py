"""Learned soft pruning of fetched objects: ``alpha = sigmoid(MLP(|z_node - z_query|))``.

GRAG's form (GRAG paper Eq. 7, element-wise distance between the node and query embeddings). GRAG
trains it end to end through the LLM's answer loss; here it is trained on a *retrieval* label
instead -- 1 when a fetched object is gold for the query, 0 otherwise -- with binary
cross-entropy through the shared loop (:func:`grapher_core.learned.loop.fit`). The result is a
:class:`~grapher_core.expand.pruning.SoftPruner`: expansion multiplies fetched objects' scores
by ``alpha`` and drops those below ``drop_below``.

Checkpoints are safetensors weights plus a JSON config (no pickle); loading validates the
config and compares its sizes with the weights' header before the MLP is built
(:mod:`grapher_core.learned.weights`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.diagnostics import GraphERWarning
from grapher_core.errors import (
    CheckpointError,
    ConfigError,
    InputError,
    InputFileNotFoundError,
    InputTypeError,
)
from grapher_core.learned.caveats import LEARNED_PRUNER_LOSES
from grapher_core.learned.weights import MAX_SIZE, Rule
from grapher_core.utils.callsite import warn_once

__all__ = [
    "LearnedPruner",
    "PrunerAdapter",
    "PruningExample",
    "build_pruner",
    "default_pruner_path",
    "train_pruner",
]


def default_pruner_path() -> Path:
    """Stem of the pruner checkpoint shipped for MiniLM (``.safetensors`` + ``.json``)."""
    return Path(__file__).resolve().parent.parent / "data" / "pruner_minilm"


@dataclass(frozen=True)
class PruningExample:
    """One query's fetched objects: ``features`` (n x d) = ``|z_node - z_query|``, labels."""

    query_id: str
    group: str
    features: np.ndarray
    labels: np.ndarray
    n_gold: int


def features(query: np.ndarray, objects: np.ndarray) -> np.ndarray:
    """``|z_node - z_query|`` on unit vectors (GRAG's element-wise distance)."""
    from grapher_core.expand.pruning import unit_rows

    q = unit_rows(np.asarray(query, dtype=np.float64).reshape(1, -1))
    return np.abs(unit_rows(np.asarray(objects, dtype=np.float64)) - q).astype(np.float32)


def build_pruner(dim: int, hidden: int = 64) -> Any:
    """The MLP: d -> hidden -> 1 logit (sigmoid applied by :class:`LearnedPruner`)."""
    import torch

    return torch.nn.Sequential(
        torch.nn.Linear(dim, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)
    )


class PrunerAdapter:
    """Plugs the MLP into the shared loop: a batch is the stacked features of its queries."""

    def collate(self, examples: Sequence[PruningExample], device: str) -> Any:
        from grapher_core.learned.inputs import to_device

        return to_device(np.vstack([e.features for e in examples]), device)

    def forward(self, model: Any, batch: Any) -> Any:
        return model(batch).squeeze(-1)


def _metric(examples: Sequence[PruningExample], scores: Sequence[np.ndarray]) -> dict[str, float]:
    """Validation: ``neg_bce`` (minus the mean log loss: calibration matters, ``alpha`` is
    compared with ``drop_below``), how often the best-scored fetched object is gold ("hit@1",
    over queries with a gold fetched object), and the mean per-query ranking AUC."""
    hits, aucs = [], []
    logits = (
        np.concatenate([np.asarray(s, dtype=np.float64) for s in scores]) if scores else np.zeros(0)
    )
    labels_all = np.concatenate([e.labels for e in examples]) if examples else np.zeros(0)
    # log(1 + e^-x) for gold, log(1 + e^x) otherwise, computed stably
    losses = np.logaddexp(0.0, np.where(labels_all > 0, -logits, logits))
    for example, score in zip(examples, scores, strict=True):
        labels = example.labels > 0
        if not labels.any():
            continue
        hits.append(float(labels[int(np.argmax(score))]))
        if (~labels).any():
            pos, neg = score[labels], score[~labels]
            aucs.append(
                float(
                    (pos[:, None] > neg[None, :]).mean()
                    + 0.5 * (pos[:, None] == neg[None, :]).mean()
                )
            )
    return {
        "neg_bce": -float(losses.mean()) if losses.size else 0.0,
        "hit@1": float(np.mean(hits)) if hits else 0.0,
        "auc": float(np.mean(aucs)) if aucs else 0.5,
    }


def train_pruner(
    examples: Sequence[PruningExample],
    *,
    epochs: int = 30,
    hidden: int = 64,
    lr: float = 3e-3,
    batch_size: int = 16,
    seed: int = 0,
    device: str = "auto",
    log: Any = None,
) -> tuple[LearnedPruner, dict[str, float]]:
    """Fit the MLP on fetched objects' gold labels (BCE) with the shared training loop;
    early stopping on the validation log loss. Returns the pruner (on ``device``: "auto" is
    CUDA when there is one) and the best validation metrics."""
    from grapher_core.learned.loop import LoopConfig, fit

    usable = [e for e in examples if len(e.labels)]
    if len(usable) < 2:
        raise InputError("training the pruner needs at least two queries with fetched objects")
    dim = int(usable[0].features.shape[1])
    config = LoopConfig(
        loss="bce",
        epochs=epochs,
        patience=5,
        lr=lr,
        batch_size=batch_size,
        seed=seed,
        device=device,
        metric="neg_bce",
    )
    result = fit(
        lambda: build_pruner(dim, hidden), PrunerAdapter(), usable, config, metric=_metric, log=log
    )
    return LearnedPruner.from_model(result.model, hidden), dict(result.best_metrics)


PRUNER_FORMAT = "grapher-pruner/1"
#: What every config field the pruner reads must be (the rest is free-form training info).
RULES: dict[str, Rule] = {
    **dict.fromkeys(("dim", "hidden"), Rule("int", 1, MAX_SIZE)),
    **dict.fromkeys(("format", "embedding_model"), Rule("str")),
}


class LearnedPruner:
    """``alphas(query, objects)`` from a trained MLP (a :class:`SoftPruner`).

    The checkpoint is read, validated and its sizes compared with the weights' header when
    the pruner is built; ``alphas`` refuses vectors of another dimension, naming both."""

    def __init__(self, checkpoint: str | Path | None = None) -> None:
        if checkpoint is not None and not isinstance(checkpoint, (str, Path)):
            raise InputTypeError(
                f"checkpoint must be a path (str or Path) or None, got {type(checkpoint).__name__}"
            )
        self._model: Any = None
        self.hidden = 64
        self.dim = 0
        if checkpoint is not None or default_pruner_path().with_suffix(".json").exists():
            self._load(Path(checkpoint) if checkpoint is not None else default_pruner_path())
            warn_once(LEARNED_PRUNER_LOSES, GraphERWarning, logger=__name__)
        else:
            raise InputFileNotFoundError(
                "no pruner checkpoint given and none shipped; train one "
                "with `grapher-bench train-pruner`"
            )

    @classmethod
    def from_model(cls, model: Any, hidden: int) -> LearnedPruner:
        """A pruner around a :func:`build_pruner` MLP (what :func:`train_pruner` returns)."""
        layers = list(model) if hasattr(model, "__iter__") else []
        if len(layers) != 3 or not hasattr(layers[0], "in_features"):
            raise InputTypeError("from_model expects the MLP build_pruner() makes")
        if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 1:
            raise ConfigError(f"hidden must be a positive integer, got {hidden!r}")
        if int(layers[0].out_features) != hidden:
            raise ConfigError(f"hidden = {hidden} but the MLP is {layers[0].out_features} wide")
        pruner = cls.__new__(cls)
        pruner._model = model.eval()
        pruner.hidden = hidden
        pruner.dim = int(layers[0].in_features)
        return pruner

    def _load(self, stem: Path) -> None:
        from grapher_core.learned.weights import (
            check_config,
            check_sizes,
            load_state,
            load_tensors,
            open_checkpoint,
        )

        checkpoint = open_checkpoint(stem)
        meta, where = checkpoint.config, str(checkpoint.meta)
        if meta.get("format") != PRUNER_FORMAT:
            raise CheckpointError(
                f"{where}: not a pruner checkpoint (format {meta.get('format')!r}, "
                f"expected {PRUNER_FORMAT!r})"
            )
        for name in ("dim", "hidden"):
            if name not in meta:
                raise CheckpointError(f"{where}: malformed pruner config (no {name!r})")
        check_config(where, meta, RULES)
        dim, hidden = int(meta["dim"]), int(meta["hidden"])
        check_sizes(
            checkpoint.shapes,
            {"0.weight": ((hidden, dim), "hidden, dim"), "2.weight": ((1, hidden), "hidden")},
            f"{where} does not match {checkpoint.weights}",
        )
        self.dim, self.hidden = dim, hidden
        model = build_pruner(self.dim, self.hidden)
        load_state(
            model,
            load_tensors(checkpoint),
            f"{checkpoint.weights} does not match {checkpoint.meta}",
        )
        self._model = model.eval()
        self.meta = meta

    def save(self, stem: str | Path, **info: Any) -> None:
        """Weights as safetensors, config (and ``info``: training data, metrics) as JSON."""
        from grapher_core.learned.weights import write_weights

        write_weights(
            self._model.state_dict(),
            {"format": "grapher-pruner/1", "dim": self.dim, "hidden": self.hidden, **info},
            stem,
        )

    @property
    def device(self) -> str:
        """Where the MLP's weights are (a pruner trained on CUDA stays there)."""
        return str(next(self._model.parameters()).device.type)

    def alphas(self, query: np.ndarray, objects: np.ndarray) -> np.ndarray:
        import torch

        from grapher_core.learned.inputs import as_matrix, as_vector, to_device

        q = as_vector(query, self.dim, "the pruner's query vector")
        rows = as_matrix(objects, self.dim, "the pruner's object vectors")
        x = to_device(features(q, rows), self.device)
        with torch.inference_mode():
            logits = self._model(x).squeeze(-1)
        return torch.sigmoid(logits).cpu().numpy().astype(np.float64)
