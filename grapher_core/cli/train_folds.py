"""The cross-validation of ``grapher train``: per fold, the shipped GAT fine-tuned on the other
folds, then the fine-tuned model, the default GCS and the shipped checkpoint ranking the held-out
fold's candidates through the same :class:`~grapher_core.rerank.GraphReranker` call a deployment
runs (:func:`~grapher_core.evaluation.measure.measure_setting`); the folds' gold ranks pooled
into one :class:`~grapher_core.evaluation.measure.Measurement` per ranker."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grapher_core.cli.train_work import RANKERS, FoldResult, WorkDir
from grapher_core.evaluation.grid import DEFAULT, Setting
from grapher_core.evaluation.measure import Measurement, Pools, measure_setting
from grapher_core.evaluation.metrics import GoldRanks
from grapher_core.learned.finetune import SEEDS, Recipe, checkpoint_config, fine_tune
from grapher_core.learned.gat.train import TrainingSet
from grapher_core.utils.progress import Progress

__all__ = ["CrossValidation", "pooled", "run_folds"]

Say = Callable[[str], None]


@dataclass(frozen=True)
class CrossValidation:
    """What every fold shares: the questions' pools and training graphs, their folds, the
    recipe, the cut-off the early stopping reads, the device and threads, the embedder (the
    learned rankers check it is their model), where finished folds go, and how to report."""

    pools: Pools
    data: TrainingSet
    fold_of: tuple[int, ...]
    folds: int
    recipe: Recipe
    k: int
    device: str
    threads: int | None
    embedder: Any
    work: WorkDir | None
    say: Say
    progress: bool

    def members(self, fold: int) -> list[int]:
        return [i for i, f in enumerate(self.fold_of) if f == fold]

    def fine_tune(self, questions: list[int], label: str) -> Any:
        """The shipped GAT fine-tuned on ``questions`` with the recipe, progress as ``label``."""
        return fine_tune(
            self.data,
            questions,
            self.recipe,
            k=self.k,
            device=self.device,
            threads=self.threads,
            log=lambda line: self.say(f"{label}: {line}"),
        )


def run_folds(cv: CrossValidation) -> list[FoldResult]:
    """Every fold's result, finished ones read back from ``cv.work`` (skipped)."""
    if cv.work is not None:
        return [_fold(cv, fold, cv.work.stem(fold)) for fold in range(cv.folds)]
    with tempfile.TemporaryDirectory(prefix="grapher-train-") as scratch:
        return [_fold(cv, fold, Path(scratch) / f"fold-{fold}-model") for fold in range(cv.folds)]


def _fold(cv: CrossValidation, fold: int, stem: Path) -> FoldResult:
    """One fold: fine-tune on the others, save the model, score the held-out questions."""
    import time

    held = cv.members(fold)
    ids = [cv.data.examples[i].query_id for i in held]
    name = f"fold {fold + 1}/{cv.folds}"
    if cv.work is not None:
        done = cv.work.load(fold, ids, [len(cv.pools.gold[i]) for i in held])
        if done is not None:
            cv.say(f"{name}: finished in an earlier run ({cv.work.path}), skipped")
            return done
    started = time.perf_counter()
    train = [i for i, f in enumerate(cv.fold_of) if f != fold]
    cv.say(f"{name}: fine-tuning the shipped GAT on {len(train)} questions, {len(held)} held out")
    result = cv.fine_tune(train, name)
    from grapher_core.learned.gat.checkpoint import GAT

    training = {"questions": len(train), "held_out_fold": fold + 1, "folds": cv.folds}
    GAT.save(result.model, checkpoint_config(result, cv.data, cv.recipe, training, {}), stem)
    ranks = score_rankers(cv, held, stem, label=f"{name}: scoring")
    done = FoldResult(
        fold,
        tuple(ids),
        ranks,
        result.best_epoch,
        len(result.history) - 1,
        round(time.perf_counter() - started, 1),
    )
    if cv.work is not None:
        cv.work.save(done)
    cv.say(f"{name}: done in {done.seconds:.0f} s (best epoch {done.best_epoch})")
    return done


def score_rankers(
    cv: CrossValidation, held: Sequence[int], stem: Path, *, label: str
) -> dict[str, tuple[GoldRanks, ...]]:
    """Gold ranks of the held-out questions under each of :data:`RANKERS`."""
    from grapher_core.learned.gat.ranker import GATRanker

    pools = cv.pools.subset(held)
    options = {"embedder": cv.embedder, "device": cv.device, "threads": cv.threads}
    built = {"shipped": GATRanker(**options), "finetuned": GATRanker(stem, **options)}
    settings = {
        "gcs": DEFAULT,
        "shipped": Setting("shipped", None, SEEDS, "detected"),
        "finetuned": Setting("finetuned", None, SEEDS, "detected"),
    }
    counter = Progress(len(RANKERS) * len(pools), label, enabled=cv.progress)
    out = {
        name: measure_setting(settings[name], built, pools, counter)[0].gold_ranks
        for name in RANKERS
    }
    counter.close()
    return out


def pooled(results: Sequence[FoldResult], fold_of: Sequence[int]) -> dict[str, Measurement]:
    """One measurement per ranker over every question, in the questions' order, each
    question's gold ranks taken from the fold that held it out."""
    position = {fold: 0 for fold in range(len(results))}
    by_fold = {r.fold: r for r in results}
    rows: dict[str, list[GoldRanks]] = {name: [] for name in RANKERS}
    for fold in fold_of:
        for name in RANKERS:
            rows[name].append(by_fold[fold].ranks[name][position[fold]])
        position[fold] += 1
    return {name: Measurement(name, None, tuple(ranks)) for name, ranks in rows.items()}


def stderr_say(quiet: bool) -> Say:
    """A progress line on stderr, or nothing with ``--quiet``."""
    if quiet:
        return lambda line: None
    return lambda line: print(line, file=sys.stderr, flush=True)
