"""``grapher-bench qa-eval``: answer-level evaluation over any OpenAI-compatible endpoint.

Every option is checked, and every ``--data`` folder read, before anything is created: a
refused run (exit code 2, one line naming the option) leaves no cache, folder or file behind,
and no output path may lie inside a ``--data`` folder (the inputs are never written).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from grapher_core.cli.arguments import output_argument
from grapher_core.errors import InputError, InputFileNotFoundError

__all__ = ["register"]

DEFAULT_SYSTEMS = "baseline,gcs,gcs:graph"


def _systems(value: str) -> list[Any]:
    from grapher_bench.qa_eval.systems import parse_system

    try:
        systems = [parse_system(part) for part in value.split(",") if part.strip()]
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if not systems:
        raise argparse.ArgumentTypeError("give at least one system")
    labels = [s.label for s in systems]
    if len(set(labels)) != len(labels):
        raise argparse.ArgumentTypeError(f"a system is listed twice: {value!r}")
    return systems


def _per_set(
    items: list[str], option: str, shape: str, set_names: list[str]
) -> list[tuple[str, str]]:
    """Split SET=VALUE items; a SET that names no --data folder fails (a typo would be ignored)."""
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InputError(f"{option} wants {shape}, got {item!r}")
        if name.strip() not in set_names:
            raise InputError(
                f"{option} names {name.strip()!r}, which is not a --data folder "
                f"(folders: {', '.join(set_names)})"
            )
        pairs.append((name.strip(), value))
    return pairs


def _positive(value: str, what: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise InputError(f"{what} wants a positive integer, got {value!r}") from None
    if number < 1:
        raise InputError(f"{what} wants a positive integer, got {value!r}")
    return number


def _url(value: str, option: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(
            f"{option} wants an http(s) URL such as http://127.0.0.1:8080/v1, got {value!r}"
        )
    return value


def _inside(path: Path, folder: Path) -> bool:
    """True when ``path`` is ``folder`` or lies under it (both resolved)."""
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


_AT_LEAST: tuple[tuple[str, str, int], ...] = (
    ("--k", "k", 1),
    ("--limit", "limit", 1),
    ("--top-n", "top_n", 1),
    ("--concurrency", "concurrency", 1),
    ("--max-retries", "max_retries", 0),
    ("--answer-tokens", "answer_tokens", 1),
    ("--judge-tokens", "judge_tokens", 1),
    ("--block", "block", 1),
)
"""Integer options and their least value: (option, attribute, least)."""


def _api_key(value: str, option: str) -> None:
    """A key no header can carry fails every request, retried: refuse it now."""
    from grapher_core.enrich.llm import check_api_key

    check_api_key(value, option)


def _not_blank(value: str, option: str) -> None:
    if not value.strip():
        raise InputError(f"{option} must not be empty")


def _existing_file(value: Path, option: str) -> None:
    if not value.is_file():
        raise InputFileNotFoundError(f"{option} {value}: no such file")


def _unless_none(check: Callable[[Any, str], object]) -> Callable[[Any, str], None]:
    """``check`` for an optional option: a value left out (``None``) is not checked."""

    def checked(value: Any, option: str) -> None:
        if value is not None:
            check(value, option)

    return checked


_ENDPOINT_CHECKS: tuple[tuple[str, str, Callable[[Any, str], object]], ...] = (
    ("--api-key", "api_key", _unless_none(_api_key)),
    ("--model", "model", _unless_none(_not_blank)),
    ("--judge-model", "judge_model", _unless_none(_not_blank)),
    ("--base-url", "base_url", _url),
    ("--judge-base-url", "judge_base_url", _unless_none(_url)),
    ("--llm-base-url", "llm_base_url", _unless_none(_url)),
    ("--llm-model", "llm_model", _unless_none(_not_blank)),
    ("--model-file", "model_file", _unless_none(_existing_file)),
)
"""The endpoints' options and their validators, checked in this order: (option, attribute,
validator)."""


def check_options(args: argparse.Namespace) -> tuple[list[str], dict[str, Any], dict[str, int]]:
    """Every option checked, nothing created: the set names, ``--systems-for`` and
    ``--limit-for``. Raises ``InputError`` naming the option."""
    _check_numbers(args)
    for option, attribute, check in _ENDPOINT_CHECKS:
        check(getattr(args, attribute), option)
    folders = _data_folders(args.data)
    set_names = [folder.name for folder in folders]
    per_set = {
        name: _systems(value)
        for name, value in _per_set(args.systems_for, "--systems-for", "SET=SYSTEMS", set_names)
    }
    limits = {
        name: _positive(value, f"--limit-for {name}")
        for name, value in _per_set(args.limit_for, "--limit-for", "SET=N", set_names)
    }
    _check_outside_data(_output_paths(args, set_names), folders)
    if args.write_doc is not None and args.write_doc.is_file():
        _check_doc_markers(args.write_doc)
    return set_names, per_set, limits


def _check_numbers(args: argparse.Namespace) -> None:
    """The integer bounds, ``--k`` within what is kept per question and under ``--top-n``,
    and a finite positive ``--timeout``."""
    from grapher_bench.qa_eval.systems import MAX_TOP

    for option, attribute, low in _AT_LEAST:
        value = getattr(args, attribute)
        if value is not None and value < low:
            raise InputError(f"{option} must be an integer >= {low}, got {value}")
    if args.k > MAX_TOP:
        raise InputError(f"--k must be at most {MAX_TOP} (the top kept per question), got {args.k}")
    if args.top_n < args.k:
        raise InputError(f"--top-n ({args.top_n}) must be at least --k ({args.k})")
    if not math.isfinite(args.timeout) or args.timeout <= 0:
        raise InputError(f"--timeout must be a finite number of seconds > 0, got {args.timeout}")


def _data_folders(data: list[str]) -> list[Path]:
    """The ``--data`` folders, each a benchmark folder, no two of the same name (their
    outputs would clash)."""
    folders = [Path(folder) for folder in data]
    set_names = [folder.name for folder in folders]
    twice = sorted({name for name in set_names if set_names.count(name) > 1})
    if twice:
        raise InputError(
            f"--data names two folders called {twice[0]!r} (their outputs would clash)"
        )
    for folder in folders:
        if not folder.is_dir():
            raise InputFileNotFoundError(f"--data {folder}: no such folder")
        for name in ("corpus.jsonl", "queries.jsonl"):
            if not (folder / name).is_file():
                raise InputFileNotFoundError(f"--data {folder}: {name} is missing")
    return folders


def _output_paths(args: argparse.Namespace, set_names: list[str]) -> list[tuple[str, Path]]:
    """Every path the run writes, with the option that names it (each was tried for writing
    before the command started: ``output_argument``)."""
    outputs = [("--out", args.out), *((f"--out {args.out}", args.out / n) for n in set_names)]
    for option, path in (("--cache", args.cache), ("--write-doc", args.write_doc)):
        if path is not None:
            outputs.append((option, path))
    return outputs


def _check_outside_data(outputs: list[tuple[str, Path]], folders: list[Path]) -> None:
    """The inputs are never written: no output may lie inside a ``--data`` folder."""
    for option, path in outputs:
        for folder in folders:
            if _inside(path, folder):
                raise InputError(
                    f"{option} {path} lies inside --data {folder} (inputs are never written)"
                )


def _check_doc_markers(doc: Path) -> None:
    """The ``--write-doc`` file is UTF-8 and its markers are not reversed, the check the
    section writer makes, made before the run."""
    from grapher_bench.qa_eval.report import END, START
    from grapher_bench.sections import _marker

    try:
        text = doc.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"--write-doc {doc} cannot be read as UTF-8 ({error})") from None
    first = _marker(text, START)
    if not (first >= 0 and _marker(text, END, first) >= 0) and START in text and END in text:
        raise InputError(f"--write-doc {doc}: {END} comes before {START}")


def register(subparsers: Any) -> None:
    """Add ``qa-eval``."""
    qa = subparsers.add_parser(
        "qa-eval",
        help="answer-level evaluation: generate (A.1.2), judge (A.1.3), paired tests",
        description="Answer each question from each system's top K with an OpenAI-compatible "
        "model (the paper's A.1.2 prompt), judge the answers (A.1.3), report SQuAD "
        "EM/F1, answer-in-context and exact McNemar tests between systems. Replies "
        "are cached: a re-run or a killed run resumes for free.",
    )
    _add_input_options(qa)
    _add_endpoint_options(qa)
    _add_question_options(qa)
    _add_request_options(qa)
    _add_output_options(qa)
    qa.set_defaults(func=run_qa_eval)


def _add_input_options(qa: argparse.ArgumentParser) -> None:
    """The benchmark folders and the systems compared on them."""
    qa.add_argument(
        "--data",
        action="append",
        required=True,
        metavar="DIR",
        help="a QA benchmark folder (corpus.jsonl + queries.jsonl with 'answer'); repeatable",
    )
    qa.add_argument(
        "--systems",
        type=_systems,
        default=_systems(DEFAULT_SYSTEMS),
        help="comma list of RANKER[:flat|graph|relation], RANKER any bench row label "
        f"(default {DEFAULT_SYSTEMS}); the first is the reference",
    )
    qa.add_argument(
        "--systems-for",
        action="append",
        default=[],
        metavar="SET=SYSTEMS",
        help="systems for one dataset folder name (overrides --systems there)",
    )


def _add_endpoint_options(qa: argparse.ArgumentParser) -> None:
    """The answering, judging and llm-rerank endpoints and models."""
    qa.add_argument(
        "--base-url",
        required=True,
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1",
    )
    qa.add_argument("--model", required=True, help="model name sent to the endpoint")
    qa.add_argument(
        "--judge-model",
        default=None,
        help="judge model (default: --model); 'none' skips the LLM judge",
    )
    qa.add_argument("--judge-base-url", default=None, help="judge endpoint (default --base-url)")
    qa.add_argument(
        "--judge-format",
        default="paper",
        choices=("paper", "decision-line", "json"),
        help="paper: A.1.3 verbatim (default); decision-line / json: A.1.3 verbatim plus a "
        "separate, versioned reminder of where the decision goes (recorded in qa_meta.json)",
    )
    qa.add_argument(
        "--model-file",
        type=Path,
        default=None,
        metavar="GGUF",
        help="the local model file the server runs: its sha256 goes into qa_meta.json",
    )
    qa.add_argument(
        "--llm-base-url",
        default=None,
        help="endpoint of the llm-rerank systems (default $GRAPHER_LLM_BASE_URL, else --base-url)",
    )
    qa.add_argument(
        "--llm-model",
        default=None,
        help="model of the llm-rerank systems (default $GRAPHER_LLM_MODEL, else --model)",
    )
    qa.add_argument("--api-key", default=None, help="default $OPENAI_API_KEY (none for local)")


def _add_question_options(qa: argparse.ArgumentParser) -> None:
    """Context size, how many questions, the retriever and its candidates."""
    qa.add_argument("--k", type=int, default=10, help="objects in the context (10)")
    qa.add_argument("--limit", type=int, default=None, help="first N questions per set")
    qa.add_argument(
        "--limit-for",
        action="append",
        default=[],
        metavar="SET=N",
        help="first N questions of one dataset folder name (overrides --limit "
        "there), e.g. to report sets resumed to different depths",
    )
    qa.add_argument("--retriever", default="hybrid", choices=("bm25", "dense", "hybrid"))
    qa.add_argument("--top-n", type=int, default=200, help="candidates reranked (200)")


def _add_request_options(qa: argparse.ArgumentParser) -> None:
    """Concurrency, deadlines, retries, token caps and the block size."""
    qa.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="requests in flight (1: a local one-thread server)",
    )
    qa.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="deadline in seconds for each whole request, every read included (300)",
    )
    qa.add_argument("--max-retries", type=int, default=4)
    qa.add_argument("--answer-tokens", type=int, default=96, help="max answer tokens (96)")
    qa.add_argument("--judge-tokens", type=int, default=160, help="max judge tokens (160)")
    qa.add_argument(
        "--block",
        type=int,
        default=25,
        help="questions answered and judged together (25); a stopped run keeps "
        "every finished block",
    )


def _add_output_options(qa: argparse.ArgumentParser) -> None:
    """The reply cache, the output folder, the doc section and progress."""
    output_argument(
        qa,
        "--cache",
        default=None,
        help="SQLite reply cache (default <grapher cache>/qa-eval.sqlite)",
    )
    output_argument(qa, "--out", folder=True, default=Path("qa_out"), help="output folder")
    output_argument(
        qa,
        "--write-doc",
        default=None,
        metavar="MD",
        help="rewrite the qa-eval section of this markdown file",
    )
    qa.add_argument("--no-progress", action="store_true")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _llm_endpoint(args: argparse.Namespace, systems: list[Any], cache: Path) -> Any:
    """The llm-rerank systems' endpoint: options, then the environment, then the reader's."""
    from grapher_bench.peers.llm_rerank import LLMEndpoint, endpoint_from, is_llm_ranker

    if not any(is_llm_ranker(s.ranker) for s in systems):
        return None
    options: dict[str, Any] = {
        "api_key": args.api_key,
        "cache": cache,
        "concurrency": args.concurrency,
        "timeout": args.timeout,
        "max_retries": args.max_retries,
    }
    endpoint = endpoint_from(args.llm_base_url, args.llm_model, **options)
    return endpoint or LLMEndpoint(args.base_url, args.model, **options)


def _jsonable(value: Any) -> Any:
    """Options as JSON: paths as text, systems as their specs."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "spec_text"):
        return value.spec_text
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    hidden = {"func", "api_key", "command"}
    return {k: _jsonable(v) for k, v in sorted(vars(args).items()) if k not in hidden}


def run_qa_eval(args: argparse.Namespace) -> int:
    from grapher_bench.cache import cache_root
    from grapher_bench.data import load_dataset
    from grapher_bench.qa_eval.meta import probe_server, utc_now
    from grapher_bench.qa_eval.report import markdown, write_doc_section

    set_names, per_set, limits = check_options(args)
    cache_path = args.cache or cache_root(create=False) / "qa-eval.sqlite"  # made when used
    all_systems = [s for systems in (args.systems, *per_set.values()) for s in systems]
    llm = _llm_endpoint(args, all_systems, cache_path)
    # every set read before anything is written: a malformed line refuses the run whole
    datasets = [
        load_dataset(folder, limit=limits.get(name, args.limit))
        for folder, name in zip(args.data, set_names, strict=True)
    ]
    started_at = utc_now()
    model_file = _model_file_record(args.model_file)
    servers = {"answer": probe_server(args.base_url, api_key=args.api_key)}
    answerer, judge = _completers(args)
    if judge is not None and args.judge_base_url not in (None, args.base_url):
        servers["judge"] = probe_server(args.judge_base_url, api_key=args.api_key)
    if llm is not None and llm.base_url not in (args.base_url, args.judge_base_url):
        servers["llm-rerank"] = probe_server(llm.base_url, api_key=llm.api_key)
    started = time.perf_counter()
    runs, sets = _run_sets(args, datasets, set_names, per_set, (answerer, judge), cache_path, llm)
    elapsed = time.perf_counter() - started
    table = markdown(
        runs, args.model, judge.model if judge else None, args.k, judge_format=args.judge_format
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "table.md").write_text(table, encoding="utf-8")
    meta = {
        "started": started_at,
        "finished": utc_now(),
        "seconds": round(elapsed, 1),
        **_run_meta(args, model_file, servers, judge, llm),
        "limit_for": limits,
        "sets": sets,
    }
    _write_meta(args.out, sets, meta)
    print(table)
    if args.write_doc is not None:
        write_doc_section(args.write_doc, table)
        _log(f"updated {args.write_doc}")
    _log(f"wrote {args.out} in {elapsed:.0f}s")
    return 0


def _model_file_record(path: Path | None) -> dict[str, Any] | None:
    """The local model file's path, size and sha256 for qa_meta.json (``None`` without one)."""
    from grapher_bench.qa_eval.meta import file_sha256

    if path is None:
        return None
    _log(f"hashing {path} ...")
    return {
        "path": str(path.resolve()),
        "bytes": path.stat().st_size,
        "sha256": file_sha256(path),
    }


def _judge_model(args: argparse.Namespace) -> str:
    """``--judge-model``, else ``--model``; ``none`` means no LLM judge."""
    return args.model if args.judge_model is None else args.judge_model


def _completers(args: argparse.Namespace) -> tuple[Any, Any]:
    """The answering model (A.1.2) and the judge (A.1.3, ``None`` for ``--judge-model none``),
    both at temperature 0 with the run's request limits."""
    from grapher_bench.qa_eval.prompts import ANSWER_VERSION, judge_version
    from grapher_core.enrich.completion import OpenAITextCompleter

    common: dict[str, Any] = {
        "api_key": args.api_key,
        "concurrency": args.concurrency,
        "timeout": args.timeout,
        "max_retries": args.max_retries,
        "temperature": 0.0,
    }
    answerer = OpenAITextCompleter(
        args.model,
        base_url=args.base_url,
        version=ANSWER_VERSION,
        max_output_tokens=args.answer_tokens,
        **common,
    )
    judge_model = _judge_model(args)
    if judge_model.lower() == "none":
        return answerer, None
    judge = OpenAITextCompleter(
        judge_model,
        base_url=args.judge_base_url or args.base_url,
        version=judge_version(args.judge_format),
        max_output_tokens=args.judge_tokens,
        **common,
    )
    return answerer, judge


def _run_sets(
    args: argparse.Namespace,
    datasets: list[Any],
    set_names: list[str],
    per_set: dict[str, Any],
    completers: tuple[Any, Any],
    cache_path: Path,
    llm: Any,
) -> tuple[list[Any], dict[str, Any]]:
    """Each set answered and judged (through the reply cache), its outputs written; the runs
    and what qa_meta.json records of each set."""
    from grapher_bench.peers.llm_rerank import using_llm
    from grapher_core.enrich.cache import EntityCache

    runs = []
    sets: dict[str, Any] = {}
    with EntityCache(cache_path) as cache, using_llm(llm):
        for dataset, name in zip(datasets, set_names, strict=True):
            systems = per_set.get(name, args.systems)
            run, notes = _run_set(args, dataset, systems, completers, cache)
            runs.append(run)
            sets[dataset.name] = {
                "n_queries": len(dataset.queries),
                "systems": [s.spec_text for s in systems],
                "notes": notes,
            }
    return runs, sets


def _run_set(
    args: argparse.Namespace,
    dataset: Any,
    systems: list[Any],
    completers: tuple[Any, Any],
    cache: Any,
) -> tuple[Any, list[str]]:
    """One set: retrieve each system's top K, answer, judge, write its outputs; the run and
    the retrieval's notes."""
    from grapher_bench.qa_eval.pipeline import run_qa
    from grapher_bench.qa_eval.report import write_outputs
    from grapher_bench.qa_eval.systems import retrieve

    _log(
        f"{dataset.name}: {len(dataset.queries)} questions, systems "
        f"{', '.join(s.spec_text for s in systems)}"
    )
    retrieved = retrieve(
        dataset,
        systems,
        k=args.k,
        retriever=args.retriever,
        top_n=args.top_n,
        progress=not args.no_progress,
        log=_log,
    )
    for note in [n for n in retrieved.notes if n.startswith("llm-rerank")]:
        _log(f"{dataset.name}: {note}")
    answerer, judge = completers
    run = run_qa(
        dataset,
        systems,
        retrieved,
        answerer,
        judge,
        cache,
        progress=not args.no_progress,
        block=args.block,
        judge_suffix=args.judge_format,
    )
    _log(
        f"{dataset.name}: answers {run.n_answer_calls} new / {run.n_answer_cached} "
        f"cached; judge {run.n_judge_calls} new / {run.n_judge_cached} cached"
    )
    write_outputs(run, args.out / dataset.name, notes=retrieved.notes)
    return run, retrieved.notes


def _run_meta(
    args: argparse.Namespace,
    model_file: dict[str, Any] | None,
    servers: dict[str, Any],
    judge: Any,
    llm: Any,
) -> dict[str, Any]:
    """What qa_meta.json records of the run's setup: command, options, models, servers,
    prompt versions, the llm-rerank endpoint and the question selection."""
    from grapher_bench.qa_eval.meta import command_line

    return {
        "command": command_line(),
        "options": _options(args),
        "model": args.model,
        "model_file": model_file,
        "judge_model": _judge_model(args),
        "base_url": args.base_url,
        "servers": servers,
        "prompts": _prompt_versions(args, judge, llm),
        "llm_rerank": None
        if llm is None
        else {
            "base_url": llm.base_url,
            "model": llm.model,
            "window": llm.window,
            "batch": llm.batch,
        },
        "k": args.k,
        "retriever": args.retriever,
        "limit": args.limit,
    }


def _prompt_versions(args: argparse.Namespace, judge: Any, llm: Any) -> dict[str, Any]:
    """The versions of the prompts the run used (part of every cache key)."""
    from grapher_bench.qa_eval.prompts import (
        ANSWER_VERSION,
        CHOICE_SELECT_VERSION,
        JUDGE_SUFFIXES,
        PROMPT_VERSIONS,
        judge_version,
    )

    return {
        "answer": ANSWER_VERSION,
        "judge": judge_version(args.judge_format) if judge else None,
        "judge_format": args.judge_format,
        "judge_suffix_text": JUDGE_SUFFIXES[args.judge_format][1] or None,
        "llm_rerank": CHOICE_SELECT_VERSION if llm is not None else None,
        "versions": PROMPT_VERSIONS,
    }


def _write_meta(out: Path, sets: dict[str, Any], meta: dict[str, Any]) -> None:
    """qa_meta.json in ``out`` and next to each set's per-query rows, so they never lose
    their context."""
    text = json.dumps(meta, indent=2, ensure_ascii=False) + "\n"
    (out / "qa_meta.json").write_text(text, encoding="utf-8")
    for name in sets:
        (out / name / "qa_meta.json").write_text(text, encoding="utf-8")
