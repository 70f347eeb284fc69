"""``grapher enrich``: add entities (or title mentions) to every object of a corpus JSONL file.

Reads the benchmark/corpus format (one ``{"id", "text", "metadata"}`` object per line; other
names with ``--id-field`` / ``--text-field``), writes
the same format with ``metadata[<key>]`` set to the entity list, and keeps every other field as
it was. Results go through the resumable cache, so a killed run is resumed by running the same
command again; objects that failed are listed (and written to ``--failed`` when given) and a
re-run retries only them. ``--extractor mentions`` instead writes the titles each object's
text names (titles from ``metadata[--title-field]`` or the first line; a corpus-level pass, no
cache needed) for ``ForeignKeys("mentions", target_field="title")``.

Exit codes:
  0  every object was enriched
  1  some objects failed; the output is still complete (failed objects are written without the
     key) and re-running the same command retries only them
  2  bad command line or input (a message names the file and line)
  3  the cache file is unusable (not SQLite, another program's or schema's, damaged pages):
     re-running will not help; move the file away or pass another --cache
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from grapher_core.cli.arguments import output_argument
from grapher_core.enrich.base import EntityExtractor
from grapher_core.enrich.cache import CacheError, EntityCache
from grapher_core.enrich.runner import run_extraction
from grapher_core.enrich.spacy_extractor import DEFAULT_SPACY_LABELS, DEFAULT_SPACY_MODEL
from grapher_core.errors import InputError
from grapher_core.utils.jsonl import read_jsonl
from grapher_core.utils.paths import cache_root


def default_cache_path() -> Path:
    """``entities.sqlite`` in the cache folder (:func:`grapher_core.utils.paths.cache_root`)."""
    return cache_root(create=False) / "entities.sqlite"


def register(subparsers: Any) -> None:
    """Add the ``enrich`` subcommand."""
    parser = subparsers.add_parser(
        "enrich",
        help="add named entities (spaCy or an OpenAI-compatible LLM) or title mentions to a "
        "corpus JSONL file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_corpus_options(parser)
    _add_run_options(parser)
    _add_spacy_options(parser.add_argument_group("spaCy extractor"))
    llm = parser.add_argument_group("OpenAI-compatible extractor")
    _add_llm_server_options(llm)
    _add_llm_request_options(llm)
    _add_llm_cost_options(llm)
    parser.set_defaults(func=run)


def _add_corpus_options(parser: argparse.ArgumentParser) -> None:
    """What is read and written: the files, the extractor, the key and the JSON fields."""
    parser.add_argument("--input", required=True, type=Path, help="corpus JSONL to read")
    output_argument(parser, "--output", required=True, help="enriched JSONL to write")
    parser.add_argument(
        "--extractor",
        choices=("spacy", "openai", "mentions", "concepts"),
        default="spacy",
        help="spacy (offline NER, default), openai (an OpenAI-compatible chat "
        "model), mentions (titles named in the text) or concepts (G-RAG "
        "concept graphs from spaCy's dependency parse, for ranker='g-rag')",
    )
    parser.add_argument(
        "--key",
        default=None,
        help="metadata key written (default: entities; mentions for "
        "--extractor mentions; concepts for --extractor concepts)",
    )
    parser.add_argument("--id-field", default="id", help="JSON key of the object id (default: id)")
    parser.add_argument(
        "--text-field", default="text", help="JSON key of the object text (default: text)"
    )
    parser.add_argument(
        "--title-field",
        default="title",
        help="mentions: metadata key of an object's title (default: title; "
        "absent = the text's first line)",
    )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """The cache that makes a run resumable, failures, limit and progress."""
    output_argument(
        parser, "--cache", default=None, help=f"SQLite cache (default: {default_cache_path()})"
    )
    parser.add_argument("--no-cache", action="store_true", help="do not read or write a cache")
    parser.add_argument(
        "--no-retry-failed",
        action="store_true",
        help="reuse cached failures instead of retrying them",
    )
    output_argument(parser, "--failed", help="write the ids that failed here, one a line")
    parser.add_argument("--limit", type=int, help="only the first N objects")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _add_spacy_options(group: argparse._ArgumentGroup) -> None:
    """The offline spaCy extractor: pipeline, labels kept, batch size."""
    group.add_argument(
        "--spacy-model",
        default=DEFAULT_SPACY_MODEL,
        help="spaCy pipeline name (default: %(default)s)",
    )
    group.add_argument(
        "--labels",
        default=",".join(DEFAULT_SPACY_LABELS),
        help="comma-separated entity labels to keep (default: %(default)s)",
    )
    group.add_argument(
        "--batch-size", type=int, default=256, help="texts per spaCy batch (default: %(default)s)"
    )


def _add_llm_server_options(llm: argparse._ArgumentGroup) -> None:
    """Which OpenAI-compatible server and model, and how it is prompted."""
    llm.add_argument("--model", help="chat model name (required with --extractor openai)")
    llm.add_argument("--base-url", help="server URL, e.g. http://127.0.0.1:8080/v1")
    llm.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY)")
    llm.add_argument("--prompt-version", default="a11", help="a11 (paper) or a11-chat")
    llm.add_argument(
        "--response-format",
        choices=("none", "json_schema", "json_object"),
        default="none",
        help="structured output the server supports (default: none, parse the text)",
    )


def _add_llm_request_options(llm: argparse._ArgumentGroup) -> None:
    """Limits on the LLM's requests: concurrency, retries, deadline, tokens per object."""
    llm.add_argument(
        "--concurrency", type=int, default=8, help="requests in flight (default: %(default)s)"
    )
    llm.add_argument(
        "--max-retries",
        type=int,
        default=6,
        help="retries per request on 429/5xx/timeouts (default: %(default)s)",
    )
    llm.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="deadline in seconds for each whole request, connect and every read included "
        "(default: %(default)s)",
    )
    llm.add_argument(
        "--max-tokens-per-object",
        type=int,
        default=2000,
        help="longer texts are truncated to this many tokens (default: %(default)s)",
    )


def _add_llm_cost_options(llm: argparse._ArgumentGroup) -> None:
    """The cost estimate that can be printed before paying for a run."""
    llm.add_argument(
        "--estimate-only",
        action="store_true",
        help="print token counts and cost for the objects not cached yet, then stop",
    )
    llm.add_argument("--price-input", type=float, help="$ per million input tokens")
    llm.add_argument("--price-output", type=float, help="$ per million output tokens")


def read_corpus_lines(
    path: Path, limit: int | None = None, *, id_field: str = "id", text_field: str = "text"
) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of each object of a corpus JSONL file, checked; the id and
    text are read from ``id_field`` / ``text_field`` (an integer id is accepted as its
    string)."""
    records: list[tuple[int, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    for number, record in read_jsonl(path, what="input file"):
        if limit is not None and len(records) >= limit:
            break
        object_id = record.get(id_field)
        if isinstance(object_id, int) and not isinstance(object_id, bool):
            object_id = str(object_id)
        if not isinstance(object_id, str) or not isinstance(record.get(text_field), str):
            keys = ", ".join(repr(k) for k in list(record)[:8])
            raise InputError(
                f"{path}:{number}: object needs a string {id_field!r} and "
                f"{text_field!r} (keys found: {keys}; see --id-field / "
                "--text-field)"
            )
        metadata = record.get("metadata", {})
        if metadata is not None and not isinstance(metadata, dict):
            raise InputError(f"{path}:{number}: 'metadata' must be an object")
        if object_id in seen:
            raise InputError(
                f"{path}:{number}: duplicate id {object_id!r} (first on line {seen[object_id]})"
            )
        seen[object_id] = number
        records.append((number, record))
    return records


def build_extractor(args: argparse.Namespace) -> EntityExtractor:
    """The extractor the command line asks for."""
    if args.extractor == "concepts":
        from grapher_core.enrich.concepts import SpacyConceptParser

        return SpacyConceptParser(model=args.spacy_model)
    if args.extractor == "spacy":
        from grapher_core.enrich.spacy_extractor import SpacyEntityExtractor

        labels = [label.strip() for label in args.labels.split(",") if label.strip()]
        return SpacyEntityExtractor(labels, batch_size=args.batch_size, model=args.spacy_model)
    from grapher_core.enrich.llm import OpenAIEntityExtractor

    if not args.model:
        raise InputError("--model is required with --extractor openai")
    return OpenAIEntityExtractor(
        args.model,
        base_url=args.base_url,
        api_key=args.api_key,
        prompt_version=args.prompt_version,
        concurrency=args.concurrency,
        max_retries=args.max_retries,
        timeout=args.timeout,
        max_tokens_per_object=args.max_tokens_per_object,
        response_format=None if args.response_format == "none" else args.response_format,
    )


def jsonl_line(record: dict[str, Any]) -> bytes:
    """One UTF-8 JSON line; a record holding lone surrogates is written ASCII-escaped
    (``"\\ud800"``, exactly as it can be read back) instead of failing the whole output."""
    line = json.dumps(record, ensure_ascii=False) + "\n"
    try:
        return line.encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record) + "\n").encode("ascii")


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    """Write atomically (temporary file + rename): a killed run never leaves half an output."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A name of its own per run: two runs writing the same --output never share a temporary.
    descriptor, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    temporary = Path(name)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            for record in records:
                handle.write(jsonl_line(record))
        # mkstemp makes the file private (0600): give it the usual mode of a written file
        os.chmod(temporary, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


#: Exit code of ``grapher enrich`` when the cache file cannot be used (see the module doc).
EXIT_CACHE_UNUSABLE = 3


def run(args: argparse.Namespace) -> int:
    """Entry point of ``grapher enrich``; an unusable cache exits with ``EXIT_CACHE_UNUSABLE``."""
    try:
        return _run(args)
    except CacheError as error:
        print(f"grapher enrich: error: {error}", file=sys.stderr)
        return EXIT_CACHE_UNUSABLE


def _run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise InputError("--limit must be >= 1")
    if args.api_key is not None:  # before the corpus is read: a bad key would fail every call
        from grapher_core.enrich.llm import check_api_key

        check_api_key(args.api_key, "--api-key")
    if args.input.resolve() == args.output.resolve():
        raise InputError("--output must differ from --input (the input is never overwritten)")
    lines = read_corpus_lines(
        args.input, args.limit, id_field=args.id_field, text_field=args.text_field
    )
    records = [record for _, record in lines]
    if args.extractor == "mentions":
        return _run_mentions(args, records)
    key = args.key or ("concepts" if args.extractor == "concepts" else "entities")
    extractor = build_extractor(args)
    cache = None if args.no_cache else EntityCache(args.cache or default_cache_path())
    try:
        texts = [record[args.text_field] for record in records]
        if args.estimate_only:
            return _estimate(args, extractor, texts, cache)
        started = time.perf_counter()
        outcome = run_extraction(
            texts,
            extractor,
            cache=cache,
            progress=not args.no_progress,
            retry_failed=not args.no_retry_failed,
            names=[f"{record[args.id_field]!r} (line {number})" for number, record in lines],
        )
        elapsed = time.perf_counter() - started
    finally:
        if cache is not None:
            cache.close()
    output: list[dict[str, Any]] = []
    failed: list[tuple[str, str]] = []
    for record, result in zip(records, outcome.results, strict=True):
        new = dict(record)
        metadata = dict(record.get("metadata") or {})
        if result.entities is None:
            failed.append((str(record[args.id_field]), result.error or "extraction failed"))
        else:
            metadata[key] = result.entities
        new["metadata"] = metadata
        output.append(new)
    write_jsonl(args.output, output)
    if args.failed is not None:
        args.failed.parent.mkdir(parents=True, exist_ok=True)
        args.failed.write_text(
            "".join(f"{object_id}\n" for object_id, _ in failed),
            encoding="utf-8",
            errors="backslashreplace",  # an id with a lone surrogate is written as \\ud800
        )
    rate = len(records) / elapsed if elapsed > 0 else float("inf")
    print(
        f"enriched {len(records) - len(failed)}/{len(records)} objects in {elapsed:.2f} s "
        f"({rate:,.0f} objects/s; {outcome.n_cached} unique texts from cache, "
        f"{outcome.n_computed} extracted) -> {args.output}",
        file=sys.stderr,
    )
    if failed:
        print(
            f"{len(failed)} objects failed (re-run the same command to retry them):",
            file=sys.stderr,
        )
        for object_id, error in failed[:20]:
            print(f"  {object_id}: {error}", file=sys.stderr)
        if len(failed) > 20:
            print(f"  ... and {len(failed) - 20} more", file=sys.stderr)
        return 1
    return 0


def _run_mentions(args: argparse.Namespace, records: list[dict[str, Any]]) -> int:
    """``--extractor mentions``: one corpus-level pass, every object gets the key."""
    from grapher_core.candidates import CorpusObject
    from grapher_core.enrich.mentions import find_mentions, title_of

    key = args.key or "mentions"
    started = time.perf_counter()
    corpus = [
        CorpusObject(str(r[args.id_field]), r[args.text_field], r.get("metadata") or {})
        for r in records
    ]
    lists = find_mentions(corpus, title_field=args.title_field)
    output = []
    for record, obj, mentions in zip(records, corpus, lists, strict=True):
        metadata = dict(record.get("metadata") or {})
        metadata.setdefault(args.title_field, title_of(obj, args.title_field))
        metadata[key] = mentions
        output.append({**record, "metadata": metadata})
    write_jsonl(args.output, output)
    linked = sum(1 for mentions in lists if mentions)
    print(
        f"{linked}/{len(records)} objects mention another object's title "
        f"({sum(map(len, lists))} mentions) in {time.perf_counter() - started:.2f} s -> "
        f"{args.output}; rerank with ForeignKeys({key!r}, target_field={args.title_field!r})",
        file=sys.stderr,
    )
    return 0


def _estimate(
    args: argparse.Namespace,
    extractor: EntityExtractor,
    texts: list[str],
    cache: EntityCache | None,
) -> int:
    estimate = getattr(extractor, "estimate", None)
    if estimate is None:
        print("the spaCy extractor runs locally: no tokens, no cost", file=sys.stderr)
        return 0
    from grapher_core.enrich.cache import content_hash
    from grapher_core.enrich.runner import cache_key

    todo = list(dict.fromkeys(texts))
    if cache is not None:
        known = cache.get_many(cache_key(extractor), [content_hash(t) for t in todo])
        todo = [
            t
            for t in todo
            if content_hash(t) not in known or known[content_hash(t)].entities is None
        ]
    result = estimate(
        todo,
        price_input_per_million=args.price_input,
        price_output_per_million=args.price_output,
    )
    print(result.describe())
    return 0
