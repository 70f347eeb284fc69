"""``grapher train``: fine-tune the shipped GAT on your own labelled questions, and keep it only
if it wins on questions it never saw.

Reads what ``grapher eval`` reads (``--corpus`` JSONL or ``--database`` URLs pooled, a questions
file ``{"id", "text", "gold": [corpus ids]}`` checked line by line, the packaged MiniLM through
the embedding cache, each question's ``--top-n`` most cosine-similar objects as its candidates)
and needs at least 30 labelled questions. It then runs a k-fold cross-validation (``--folds``,
split by question, or by source -- the database, the document -- with ``--split-by source``):
per fold, the shipped GAT is fine-tuned on the other folds (a few epochs from its weights,
early stopping on a held-out part of those folds only) and the fine-tuned model, the default
GCS and the shipped checkpoint rank the fold's candidates. PR@K and gold@K are pooled over the
held-out folds, with exact paired McNemar tests of the fine-tuned model against GCS and against
the shipped checkpoint.

Only when the fine-tuned model beats both on PR@K (``--for``; wins more held-out questions
than it loses, p < 0.05 against each) -- or with ``--keep``, whatever the verdict -- is a final
model fine-tuned on all the questions and written to ``--out``
(``gat_finetuned.safetensors`` + ``.json``, recording the recipe and the held-out numbers)
with ``grapher_config.json``, which ``GraphReranker.from_config`` and both wrappers'
``from_config`` load (the config names the checkpoint relative to its own folder, so the
folder can be moved or shared whole).
Otherwise it says so, with the numbers and p-values, and writes nothing. A config written by
``--keep`` without a win carries the verdict (``"verdict": {"wins": false, "reason": ...}``) and
warns whenever it is loaded. ``--gold-key KEY`` reads gold as values of a metadata key (a page),
as ``grapher eval`` does: a chunk of a gold page is a positive.

Progress goes to stderr, one line per fold and epoch (``--quiet`` for none). ``--work DIR`` keeps
finished folds (their results as JSON, their models as safetensors): a rerun skips them.
On a CPU with one thread, a few hundred questions at ``--top-n 20`` take a few minutes (see
docs/first_pipeline.md, "Train the GAT on your own questions").

``--out`` and ``--work`` are tried for writing before anything is read (a place that cannot be
written is refused at once, not after the folds). Ctrl-C prints one line saying what was kept.

Exit codes:
  0    trained and evaluated (whether or not the fine-tuned model was written)
  2    bad command line or input (fewer than 30 questions -- said before any model is loaded
       --, a missing file, a questions line without a field, a --work folder of another run,
       an --out that cannot be written, ...), or the gat extra is not installed
  130  interrupted (Ctrl-C): the folds finished so far stay in --work
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from grapher_core.cli.arguments import output_argument
from grapher_core.cli.eval import (
    _parse_for,
    _parse_ks,
    _prepare,
    _read_objects,
    _retrieve,
    add_question_arguments,
    load_questions,
)
from grapher_core.cli.inputs import Question
from grapher_core.cli.rerank import add_embedding_arguments, add_source_arguments
from grapher_core.errors import InputError, MissingDependencyError

__all__ = ["FOLDER_FILES", "MIN_QUESTIONS", "interrupted_line", "register", "run"]

MIN_QUESTIONS = 30
"""Fewer labelled questions than this cannot show a significant win on held-out folds."""
FOLDER_FILES = ("gat_finetuned", "grapher_config.json")
"""What ``--out`` receives when the fine-tuned model wins: the checkpoint stem, the config."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "train",
        help="fine-tune the shipped GAT on your own questions; keep it only if it wins",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_source_arguments(parser)
    add_question_arguments(parser)
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (default: 5)")
    parser.add_argument(
        "--split-by",
        choices=("question", "source"),
        default="question",
        help="fold by question (default) or by source: database / document",
    )
    _add_recipe_arguments(parser)
    output_argument(
        parser,
        "--out",
        folder=True,
        default=Path("grapher_train"),
        metavar="DIR",
        help="where a winning model and its config go (default: grapher_train)",
    )
    output_argument(
        parser,
        "--work",
        folder=True,
        metavar="DIR",
        help="keep finished folds here; a rerun skips them",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where to train (default: auto = cuda when available)",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: 1)")
    parser.add_argument(
        "--min-p",
        type=float,
        default=0.05,
        metavar="P",
        help="the p-value a win must stay under (default: 0.05); for experiments "
        "only, 1 takes any win",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="write the fine-tuned checkpoint and config even when it does not win (the "
        "config records the verdict and warns when loaded): to try it in a wrapper",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_embedding_arguments(parser)
    parser.set_defaults(func=run, limit=None, interrupted=interrupted_line)


def interrupted_line(args: argparse.Namespace) -> str:
    """What Ctrl-C leaves: the finished folds when ``--work`` keeps them."""
    if args.work is None:
        return "interrupted; nothing kept (give --work DIR to keep finished folds for a rerun)"
    return f"interrupted; finished folds are kept in --work {args.work}"


def _add_recipe_arguments(parser: argparse.ArgumentParser) -> None:
    """How each model is fine-tuned (defaults: :class:`~grapher_core.learned.finetune.Recipe`)."""
    parser.add_argument("--epochs", type=int, default=5, help="most epochs per fine-tune (5)")
    parser.add_argument(
        "--patience",
        type=int,
        default=2,
        help="stop after this many epochs without progress (default: 2)",
    )
    parser.add_argument("--lr", type=float, default=3e-4, help="learning rate (default: 3e-4)")
    parser.add_argument("--batch-size", type=int, default=16, help="questions per step (16)")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the folds, the splits and the training (default: 0)",
    )


def gat_extra_installed() -> None:
    """Refuse before any input is read when torch, torch-geometric or safetensors is not
    installed (looked up, not imported: importing them takes seconds)."""
    from importlib.util import find_spec

    missing = [
        name for name in ("torch", "torch_geometric", "safetensors") if find_spec(name) is None
    ]
    if missing:
        raise MissingDependencyError(
            "grapher train fine-tunes the GAT, which needs the gat extra (torch, "
            f"torch-geometric, safetensors): pip install 'grapher-rerank[gat]' (missing: "
            f"{', '.join(missing)})"
        )


def need_gat_extra() -> None:
    """Import the gat extra (after the cheap checks): a broken install is refused here."""
    from grapher_core.learned.pyg import quiet_jit_notice

    try:
        import safetensors  # noqa: F401
        import torch  # noqa: F401

        with quiet_jit_notice():
            import torch_geometric  # noqa: F401
    except ImportError as error:
        raise MissingDependencyError(
            "grapher train fine-tunes the GAT, which needs the gat extra (torch, "
            f"torch-geometric, safetensors): pip install 'grapher-rerank[gat]' ({error})"
        ) from None


def _check(args: argparse.Namespace) -> tuple[list[int], int]:
    """Refuse a bad command line before anything is read or embedded."""
    ks = _parse_ks(args.k)
    for_k = _parse_for(args.for_k, ks)
    ks = sorted({*ks, for_k})
    if args.top_n < ks[-1]:
        raise InputError(f"--top-n ({args.top_n}) must be at least the largest --k ({ks[-1]})")
    if args.folds < 2:
        raise InputError(f"--folds must be >= 2, got {args.folds}")
    if args.threads < 1:
        raise InputError(f"--threads must be >= 1, got {args.threads}")
    if not 0 < args.min_p <= 1:
        raise InputError(f"--min-p must be in (0, 1], got {args.min_p}")
    if args.max_chars < 1:
        raise InputError("--max-chars must be >= 1")
    return ks, for_k


def _check_device(device: str) -> None:
    """``--device cuda`` needs a CUDA device (torch is imported: checked after the questions)."""
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise InputError("--device cuda: torch sees no CUDA device here; use --device cpu")


def _recipe(args: argparse.Namespace) -> Any:
    from grapher_core.learned.finetune import Recipe

    return Recipe(
        epochs=args.epochs,
        patience=args.patience,
        lr=args.lr,
        batch_size=args.batch_size,
        seed=args.seed,
    )


def _enough(questions: Sequence[Question], path: Path) -> None:
    if len(questions) < MIN_QUESTIONS:
        raise InputError(
            f"{path}: {len(questions)} labelled questions; grapher train needs at least "
            f"{MIN_QUESTIONS} (a win on fewer held-out questions cannot be told from chance)"
        )


def _groups(
    args: argparse.Namespace,
    objects: Sequence[Any],
    gold: Sequence[Sequence[str]],
    questions: Sequence[Question],
) -> list[str]:
    """What a fold holds whole: each question, or the source of its gold (the first, sorted,
    when its gold spans several)."""
    if args.split_by == "question":
        return [q.id for q in questions]
    from grapher_core.evaluation.sources import sources_of

    sources = sources_of(objects, gold, databases=bool(args.database), gold_key=args.gold_key)
    if sources is None:
        raise InputError(
            "--split-by source: the corpus objects name no source (metadata db_id, doc_id, "
            "source or title); give one, use --database, or split by question"
        )
    return [sorted(names)[0] for names in sources]


def run(args: argparse.Namespace) -> int:
    gat_extra_installed()
    started = time.perf_counter()
    ks, for_k = _check(args)
    recipe = _recipe(args)
    if args.quiet:
        args.no_progress = True
    objects = _read_objects(args)
    questions = load_questions(args, objects)
    _enough(questions, args.questions)  # before any model is loaded: torch takes seconds
    need_gat_extra()
    _check_device(args.device)
    groups = _groups(args, objects, [q.gold for q in questions], questions)
    from grapher_core.learned.finetune import assign_folds

    fold_of = assign_folds(groups, args.folds, args.seed, what=f"{args.split_by}s")
    objects = _prepare(args, objects)
    retrieval = _retrieve(args, objects, questions)
    cv = _cross_validation(args, retrieval, questions, groups, fold_of, recipe, for_k)
    from grapher_core.cli.train_folds import pooled, run_folds
    from grapher_core.cli.train_verdict import decide, held_out_json, render
    from grapher_core.evaluation.measure import measure_retriever

    rows = {"retriever": measure_retriever(retrieval.pools)}
    rows.update(pooled(run_folds(cv), fold_of))
    verdict = decide(rows, for_k, args.min_p)
    print(
        f"{len(objects):,} objects, {len(questions)} questions, {args.folds} folds by "
        f"{args.split_by}, top {args.top_n} candidates; held-out folds pooled:\n"
    )
    print(render(rows, ks, for_k))
    print(f"\n{verdict.reason()}")
    if not verdict.ships and not args.keep:
        print("nothing written: keep the default (grapher eval chooses among GCS and the rest)")
        _said_time(started)
        return 0
    record = held_out_json(rows, ks, verdict, len(questions))
    _ship(args, cv, record, verdict)
    _said_time(started)
    return 0


def _said_time(started: float) -> None:
    print(f"wall time {time.perf_counter() - started:.0f} s")


def _cross_validation(
    args: argparse.Namespace,
    retrieval: Any,
    questions: Sequence[Question],
    groups: list[str],
    fold_of: list[int],
    recipe: Any,
    for_k: int,
) -> Any:
    """The folds' shared state: training graphs of every question, the device, the work dir."""
    from grapher_core.cli.train_folds import CrossValidation, stderr_say
    from grapher_core.learned.finetune import build_training_set, shipped_config
    from grapher_core.learned.loop import resolve_device

    pools = retrieval.pools
    data = build_training_set(
        pools.candidates,
        _positives(pools),
        pools.queries,
        groups,
        alpha=shipped_config().alpha,
        embedding_model=retrieval.model,
        question_ids=[q.id for q in questions],
    )
    return CrossValidation(
        pools,
        data,
        tuple(fold_of),
        args.folds,
        recipe,
        for_k,
        resolve_device(args.device),
        args.threads,
        retrieval.embedder,
        _work(args, questions, pools, recipe, for_k),
        stderr_say(args.quiet),
        not args.no_progress,
    )


def _positives(pools: Any) -> list[tuple[str, ...]]:
    """What the GAT is trained to lift per question: the gold objects, or with a gold key
    every candidate counting for a gold value (each chunk of a gold page)."""
    if pools.gold_key is None:
        return list(pools.gold)
    from grapher_core.evaluation.gold import members_of

    return [members_of(units, gold) for units, gold in zip(pools.units, pools.gold, strict=True)]


def _work(
    args: argparse.Namespace, questions: Sequence[Question], pools: Any, recipe: Any, for_k: int
) -> Any:
    """The ``--work`` folder for this run's folds, or ``None``; its plan pins the questions and
    their candidates (another corpus, model or ``--top-n`` gives other pools), the folds, the
    recipe and the cut-off."""
    if args.work is None:
        return None
    import hashlib

    from grapher_core.cli.train_work import WorkDir

    digest = hashlib.sha256(
        json.dumps(
            [
                [q.id, q.text, list(q.gold), [c.id for c in pool]]
                for q, pool in zip(questions, pools.candidates, strict=True)
            ]
        ).encode("utf-8")
    ).hexdigest()
    plan = {
        "questions_and_candidates_sha256": digest,
        "questions": len(questions),
        "top_n": args.top_n,
        "folds": args.folds,
        "split_by": args.split_by,
        "gold_key": args.gold_key,
        "k": for_k,
        "recipe": recipe.to_json(),
    }
    return WorkDir(args.work, plan)


def _ship(args: argparse.Namespace, cv: Any, record: Mapping[str, Any], verdict: Any) -> None:
    """The final model, fine-tuned on every question, its checkpoint and the config (which
    records the verdict: a model kept without a win warns whenever its config is loaded)."""
    from grapher_core.learned.finetune import checkpoint_config
    from grapher_core.learned.gat.checkpoint import GAT
    from grapher_core.ranking.config import write_config
    from grapher_core.request.settings import RerankSettings

    everything = list(range(len(cv.fold_of)))
    cv.say(f"final model: fine-tuning the shipped GAT on all {len(everything)} questions")
    result = cv.fine_tune(everything, "final")
    training = {"questions": len(everything), "source": str(args.questions)}
    config = checkpoint_config(result, cv.data, cv.recipe, training, dict(record))
    args.out.mkdir(parents=True, exist_ok=True)
    weights, meta = GAT.save(result.model, config, args.out / FOLDER_FILES[0])
    settings = RerankSettings(
        ranker="gat",
        ranker_options={"checkpoint": weights.name},  # read from the config's folder
        seed_transform="rank",
        top_n=cv.k,
    )
    path = args.out / FOLDER_FILES[1]
    write_config(
        path,
        settings.to_config(
            keep_retriever_order=False,
            fetch_k=args.top_n,
            note=f"written by grapher train: {record['reason']}",
            evaluation=dict(record),
            verdict={"wins": verdict.ships, "reason": verdict.reason()},
        ),
    )
    if not verdict.ships:
        print("kept (--keep) although it does not win: its config says so and warns when loaded")
    print(f"wrote {weights} and {meta}\nwrote {path}: load it with GraphReranker.from_config(path)")
