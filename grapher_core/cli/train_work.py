"""``grapher train --work DIR``: finished folds kept on disk, so a rerun skips them.

``DIR/plan.json`` says which run the folds belong to (the questions, the corpus size, the folds,
the split, the recipe, the cut-off); a rerun with anything else refuses the folder rather than
mixing two runs' folds. ``DIR/fold-<i>.json`` holds a finished fold's gold ranks per ranker and
``DIR/fold-<i>-model.safetensors`` + ``.json`` its fine-tuned model. Every file is size-checked
before it is read and validated field by field after: a damaged or foreign file is an
:class:`~grapher_core.errors.InputError` naming the file and the field.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grapher_core.errors import InputError
from grapher_core.evaluation.metrics import GoldRanks
from grapher_core.utils.small_files import read_json_file

__all__ = ["RANKERS", "FoldResult", "WorkDir"]

WORK_FORMAT = 1
MAX_WORK_JSON_BYTES = 64 << 20
"""A fold file holds a few numbers per question; a larger one than this is refused unread."""
RANKERS: tuple[str, ...] = ("gcs", "shipped", "finetuned")
"""The orderings each fold scores on its held-out questions."""


@dataclass(frozen=True)
class FoldResult:
    """One held-out fold: its questions and, per ranker of :data:`RANKERS`, each question's
    gold ranks; how its fine-tune went (best epoch, epochs run, seconds)."""

    fold: int
    question_ids: tuple[str, ...]
    ranks: Mapping[str, tuple[GoldRanks, ...]]
    best_epoch: int
    epochs_run: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "work_format": WORK_FORMAT,
            "fold": self.fold,
            "question_ids": list(self.question_ids),
            "ranks": {name: [list(r) for r in self.ranks[name]] for name in RANKERS},
            "best_epoch": self.best_epoch,
            "epochs_run": self.epochs_run,
            "seconds": self.seconds,
        }


def _read_json(path: Path) -> Any:
    """The JSON of ``path``: a regular file, its size checked first, no key twice."""
    return read_json_file(path, limit=MAX_WORK_JSON_BYTES, what="grapher train work file")


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Written whole or not at all: a run killed mid-write leaves no half file to trip on."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(partial, path)


class WorkDir:
    """The folder of one run's finished folds (see the module docstring)."""

    def __init__(self, path: Path, plan: Mapping[str, Any]) -> None:
        if path.exists() and not path.is_dir():
            raise InputError(f"--work {path} is not a folder")
        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.plan = {"work_format": WORK_FORMAT, **plan}
        self._check_plan()

    def _check_plan(self) -> None:
        """Adopt an empty folder; refuse one holding another run's folds, naming what differs."""
        where = self.path / "plan.json"
        if not where.exists():
            _write_json(where, self.plan)
            return
        found = _read_json(where)
        if not isinstance(found, dict):
            raise InputError(f"{where}: expected a JSON object")
        for key, value in self.plan.items():
            if found.get(key) != value:
                raise InputError(
                    f"{where}: field {key!r} is {_short(found.get(key))}, this run's is "
                    f"{_short(value)}: the folder holds another run's folds; give another "
                    "--work folder or empty this one"
                )

    def stem(self, fold: int) -> Path:
        """Where fold ``fold``'s fine-tuned model is saved (safetensors + JSON)."""
        return self.path / f"fold-{fold}-model"

    def save(self, result: FoldResult) -> None:
        _write_json(self.path / f"fold-{result.fold}.json", result.to_json())

    def load(self, fold: int, ids: Sequence[str], gold_sizes: Sequence[int]) -> FoldResult | None:
        """Fold ``fold``'s finished result, or ``None`` when it has not finished; its questions
        must be ``ids`` (with ``gold_sizes`` gold ids each), in that order."""
        where = self.path / f"fold-{fold}.json"
        if not where.exists():
            return None
        data = _read_json(where)
        if not isinstance(data, dict) or data.get("work_format") != WORK_FORMAT:
            raise InputError(f"{where}: field 'work_format' is not {WORK_FORMAT}")
        if data.get("fold") != fold:
            raise InputError(f"{where}: field 'fold' is {_short(data.get('fold'))}, not {fold}")
        if data.get("question_ids") != list(ids):
            raise InputError(f"{where}: field 'question_ids' differs from this fold's questions")
        ranks = data.get("ranks")
        if not isinstance(ranks, dict) or sorted(ranks) != sorted(RANKERS):
            raise InputError(f"{where}: field 'ranks' must name {', '.join(RANKERS)}")
        checked = {name: _ranks(where, name, ranks[name], gold_sizes) for name in RANKERS}
        numbers = [_number(where, key, data.get(key)) for key in ("best_epoch", "epochs_run")]
        seconds = _number(where, "seconds", data.get("seconds"), whole=False)
        return FoldResult(fold, tuple(ids), checked, int(numbers[0]), int(numbers[1]), seconds)


def _ranks(where: Path, name: str, value: Any, gold_sizes: Sequence[int]) -> tuple[GoldRanks, ...]:
    """One ranker's gold ranks: per question a list of positive ranks or nulls, one per gold id."""
    field = f"ranks.{name}"
    if not isinstance(value, list) or len(value) != len(gold_sizes):
        raise InputError(f"{where}: field {field!r} must list {len(gold_sizes)} questions")
    out: list[GoldRanks] = []
    for position, (row, size) in enumerate(zip(value, gold_sizes, strict=True)):
        ok = isinstance(row, list) and len(row) == size
        ok = ok and all(r is None or (type(r) is int and r >= 1) for r in row)
        if not ok:
            raise InputError(
                f"{where}: field '{field}[{position}]' must be {size} ranks (>= 1 or null), "
                f"got {_short(row)}"
            )
        out.append(tuple(row))
    return tuple(out)


def _number(where: Path, key: str, value: Any, *, whole: bool = True) -> float:
    """A count (``whole``) or a duration: finite and not negative."""
    number = value if isinstance(value, int) or (isinstance(value, float) and not whole) else None
    if isinstance(value, bool) or number is None or not 0 <= number < math.inf:
        raise InputError(f"{where}: field {key!r} must be a number >= 0, got {_short(value)}")
    return float(number)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
