"""``grapher eval --synthesize N --write-questions FILE``: questions written by an LLM from the
corpus, saved where the user can read and edit them, then evaluated like hand-written ones.

The model is any OpenAI-compatible server (``--llm-base-url``, ``--llm-model``; the ``llm``
extra's client). Its answers are kept in the enrichment reply cache (``entities.sqlite`` in the
cache folder; ``--no-cache`` skips it), so a run stopped halfway resumes and a rerun asks
nothing. ``FILE`` is never overwritten: edit it and evaluate it with ``--questions FILE``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from grapher_core.candidates import CorpusObject
from grapher_core.cli.arguments import output_argument
from grapher_core.errors import InputError

__all__ = ["add_synthesis_arguments", "print_kinds", "synthesize_if_asked"]


def add_synthesis_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of synthesis; ``--questions`` is then needed only without them."""
    for action in parser._actions:  # argparse has no public way to relax a required option
        if "--questions" in action.option_strings:
            action.required = False
            action.help = f"{action.help} (or --synthesize N --write-questions FILE)"
    group = parser.add_argument_group("questions when you have none")
    group.add_argument(
        "--synthesize",
        type=int,
        metavar="N",
        help="have an LLM write N questions from the corpus (two thirds about linked objects, "
        "a third about one object as controls), write them to --write-questions, evaluate them",
    )
    output_argument(  # tried for writing before the command starts, as every output
        parser, "--write-questions", metavar="JSONL", help="where --synthesize writes them"
    )
    group.add_argument("--llm-model", help="chat model name on the server")
    group.add_argument(
        "--llm-base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1"
    )
    group.add_argument("--llm-api-key", help="API key (default: $OPENAI_API_KEY)")
    group.add_argument(
        "--llm-timeout", type=float, default=120.0, help="seconds per request (%(default)s)"
    )
    group.add_argument(
        "--llm-concurrency", type=int, default=2, help="requests in flight (%(default)s)"
    )
    group.add_argument(
        "--pair-share",
        type=float,
        default=2 / 3,
        help="share of questions about two linked objects (default: two thirds)",
    )
    group.add_argument("--seed", type=int, default=0, help="which objects are drawn (0)")


def _check(args: argparse.Namespace) -> None:
    """Refuse a bad synthesis command line before anything is asked."""
    if args.synthesize is None:
        if args.questions is None:
            raise InputError("give --questions FILE, or --synthesize N --write-questions FILE")
        return
    if args.questions is not None:
        raise InputError("--questions and --synthesize exclude each other: give one")
    if args.synthesize < 1:
        raise InputError(f"--synthesize must be >= 1, got {args.synthesize}")
    if args.write_questions is None:
        raise InputError("--synthesize needs --write-questions FILE (where the questions go)")
    if not args.llm_model:
        raise InputError("--synthesize needs --llm-model (and --llm-base-url for a local server)")
    if args.write_questions.exists():
        raise InputError(
            f"--write-questions {args.write_questions} exists and is never overwritten: "
            f"evaluate it with --questions {args.write_questions}, or choose another file"
        )


def synthesize_if_asked(args: argparse.Namespace, objects: Sequence[CorpusObject]) -> None:
    """With ``--synthesize``: write the questions and point ``args.questions`` at them, so the
    evaluation that follows reads them as it reads a user's file."""
    _check(args)
    if args.synthesize is None:
        return
    from grapher_core.cli.enrich import default_cache_path
    from grapher_core.enrich.cache import EntityCache
    from grapher_core.evaluation.synthesize import (
        synthesis_client,
        synthesize_questions,
        write_questions,
    )

    client = synthesis_client(
        args.llm_model,
        base_url=args.llm_base_url,
        api_key=args.llm_api_key,
        timeout=args.llm_timeout,
        concurrency=args.llm_concurrency,
    )
    cache = None if args.no_cache else EntityCache(default_cache_path())
    try:
        synthesis = synthesize_questions(
            objects,
            client,
            args.synthesize,
            pair_share=args.pair_share,
            seed=args.seed,
            cache=cache,
            progress=not args.no_progress,
        )
    finally:
        if cache is not None:
            cache.close()
    write_questions(args.write_questions, synthesis.questions)
    print(f"synthesised: {synthesis.summary()}")
    print(f"wrote {args.write_questions}: read and edit it, evaluate it again with --questions")
    args.questions = args.write_questions


def print_kinds(
    args: argparse.Namespace, rows: Sequence[Any], ids: Sequence[str], choice: Any
) -> None:
    """PR@K and gold@K by ``kind`` of question, when the questions file gives kinds: the
    retriever, the default and the chosen configuration."""
    from grapher_core.evaluation.kinds import by_kind, kinds_table, read_kinds

    kinds = read_kinds(args.questions)
    if not kinds:
        return
    shown = list(
        {id(r): r for r in (rows[0], choice.default, choice.row) if r is not None}.values()
    )
    print()
    print(kinds_table(by_kind(shown, ids, kinds, choice.k), shown, choice.k))
