"""``grapher eval``: what GraphER does on your own questions, before you deploy it, no code.

Reads a corpus (``--corpus`` JSONL, or ``--database`` URLs pooled as one corpus, ids
``"<db name>.<table>"``, foreign keys as links) and a questions file (``{"id", "text", "gold":
[corpus ids]}`` per line, every line checked before anything is embedded). The corpus is
embedded once with the packaged MiniLM (kept in the embedding cache, ``--no-cache`` to skip
it); each question's ``--top-n`` most cosine-similar objects are its candidates -- the
retriever -- and a small grid of GraphER configurations reranks the same candidates: GCS and
PPR at two or three alphas, the learned GAT when its extra is installed, rank or score seeds,
over the graph detected from the metadata (and each detected graph alone when there are
several); when chunk order is detected, GCS also with chunk order at its full share (the default
damps it where it is a pool's only evidence; full share suits answers that span consecutive
chunks).

Per configuration: gold@K (gold objects in the top K / all gold objects), PR@K (questions with
all their gold in the top K), MRR, the rerank call's median latency with the vectors at hand and
what a wrapper pays re-embedding the candidates when its store does not hand them back, and
exact paired tests on the K of ``--for`` (default: the smallest ``--k``) against the retriever
and the default. The choice reads PR@K (gold@K breaking ties): it keeps the default (GCS at its
defaults, rank seeds, the detected graph) unless another configuration beats the default with
McNemar p < 0.05 and is not below the retriever; a configuration whose ranker warned that it
does not fit is never chosen; when the default is below the retriever (or changes nothing) the
advice is to keep the retriever's order. PR@K by source names any source where it loses.
``--write-config`` saves the choice for ``GraphReranker.from_config`` and both wrappers'
``from_config``; ``--json`` writes the whole report.

Exit codes:
  0  evaluated and printed
  2  bad command line or input (a questions line without a field, a gold id not in the
     corpus, an empty gold list, a duplicate question id, ...): one line naming file, line,
     field and value
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grapher_core.candidates import Candidate, CorpusObject
from grapher_core.cli.inputs import Question, clean_text, embed_texts, read_questions
from grapher_core.cli.rerank import (
    add_embedding_arguments,
    add_source_arguments,
    embedding_store,
    load_objects,
    retrieve,
)
from grapher_core.errors import InputError
from grapher_core.evaluation.choice import Choice, choose, config_for, unfit_configurations
from grapher_core.evaluation.grid import Setting, build_grid, rankers_available
from grapher_core.evaluation.measure import (
    EvaluationScope,
    GridResult,
    Pools,
    ReembedCost,
    measure_grid,
    needs_vectors,
    reembedding_ms,
)
from grapher_core.evaluation.metrics import pct
from grapher_core.evaluation.report import gain_text, render_table, report_json
from grapher_core.evaluation.sources import SourceResult, by_source, losing, sources_of

__all__ = ["add_question_arguments", "register", "run"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="measure GraphER against your retriever on your own questions; pick a config",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_source_arguments(parser)
    add_question_arguments(parser)
    from grapher_core.cli.synthesize import add_synthesis_arguments

    add_synthesis_arguments(parser)
    parser.add_argument(
        "--rankers",
        default="gcs,ppr,gat",
        help="rankers of the grid, comma-separated registry names (default: %(default)s)",
    )
    parser.add_argument(
        "--write-config",
        type=Path,
        metavar="JSON",
        help="write the chosen configuration here (GraphReranker.from_config and the "
        "wrappers' from_config load it)",
    )
    parser.add_argument("--json", type=Path, metavar="JSON", help="write the full report here")
    add_embedding_arguments(parser)
    parser.set_defaults(func=run, limit=None)


def add_question_arguments(parser: argparse.ArgumentParser) -> None:
    """The labelled questions and what is measured on them: ``grapher eval`` and ``grapher
    train`` read the same ones."""
    parser.add_argument(
        "--questions",
        type=Path,
        metavar="JSONL",
        required=True,
        help='questions file, {"id", "text", "gold": [corpus ids]} per line',
    )
    parser.add_argument(
        "--top-n",
        type=int,
        default=20,
        help="candidates the retriever hands over per question (default: %(default)s)",
    )
    parser.add_argument(
        "--k",
        default="5,10",
        help="cut-offs of gold@K and PR@K, comma-separated (default: %(default)s)",
    )
    parser.add_argument(
        "--for",
        dest="for_k",
        metavar="topK",
        help="the K you feed downstream (top5, top10, ...): the choice reads PR@K, gold@K "
        "breaking ties (default: the smallest --k)",
    )
    parser.add_argument(
        "--mentions",
        action="store_true",
        help="first link objects to the objects whose titles they name (corpora without links)",
    )


def _parse_ks(value: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError:
        raise InputError(f"--k must be integers separated by commas, got {value!r}") from None
    if not ks or ks[0] < 1:
        raise InputError(f"--k values must be >= 1, got {value!r}")
    return ks


def _parse_for(value: str | None, ks: list[int]) -> int:
    """``--for top5`` (or ``5``): the cut-off the choice reads; the smallest K without it."""
    if value is None:
        return ks[0]
    text = value.strip().lower().removeprefix("top").lstrip("-_ ")
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"--for must be topK with K >= 1 (top5, top10, ...), got {value!r}")
    return int(text)


def _check(args: argparse.Namespace) -> tuple[list[int], int, list[str]]:
    """Refuse a bad command line before anything is read or embedded."""
    from grapher_core.ranking.registry import available_rankers

    ks = _parse_ks(args.k)
    for_k = _parse_for(args.for_k, ks)
    ks = sorted({*ks, for_k})
    if args.top_n < 1:
        raise InputError("--top-n must be >= 1")
    if args.top_n < ks[-1]:
        raise InputError(f"--top-n ({args.top_n}) must be at least the largest --k ({ks[-1]})")
    if args.max_chars < 1:
        raise InputError("--max-chars must be >= 1")
    rankers = list(dict.fromkeys(r.strip().lower() for r in args.rankers.split(",") if r.strip()))
    known = available_rankers()
    unknown = [r for r in rankers if r not in known]
    if not rankers or unknown:
        raise InputError(
            f"--rankers: unknown ranker {(unknown or [args.rankers])[0]!r}; choose from "
            f"{', '.join(known)}"
        )
    for option in ("write_config", "json"):
        path = getattr(args, option)
        if path is not None and path.is_dir():
            raise InputError(f"--{option.replace('_', '-')} {path} is a directory")
        if path is not None and not path.resolve().parent.is_dir():
            raise InputError(f"--{option.replace('_', '-')} {path}: no folder {path.parent}")
    return ks, for_k, rankers


@dataclass(frozen=True)
class _Retrieval:
    """The retriever's side of an evaluation: the pools and how they were made."""

    pools: Pools
    embedder: Any
    seconds: float
    cached: int

    @property
    def model(self) -> str:
        return str(getattr(self.embedder, "name", type(self.embedder).__name__))


def run(args: argparse.Namespace) -> int:
    from grapher_core.edges.detect import describe, detect_proximities

    ks, for_k, rankers = _check(args)
    objects = _read_objects(args)
    from grapher_core.cli.synthesize import print_kinds, synthesize_if_asked

    synthesize_if_asked(args, objects)  # --synthesize: writes them, sets args.questions
    questions = read_questions(args.questions, {o.id for o in objects}, need_gold=True)
    objects = _prepare(args, objects)
    retrieval = _retrieve(args, objects, questions)
    detected = detect_proximities([Candidate(o.id, "", None, o.metadata) for o in objects])
    loaded: dict[str, tuple[str, ...]] = {}
    skipped, built = rankers_available(rankers, retrieval.embedder, loaded)
    grid = build_grid(rankers, detected, skipped)
    _print_setup(args, len(objects), retrieval, detected, skipped, grid)
    measured = measure_grid(grid, built, retrieval.pools, progress=not args.no_progress)
    for label, reason in measured.failed.items():
        print(f"skipped: {label}: {reason}")
    skipped.update(measured.failed)
    scope = EvaluationScope(
        str(args.questions), tuple(q.id for q in questions), len(objects), args.top_n, tuple(ks)
    )
    excluded = unfit_configurations(measured.rows, measured.messages, loaded)
    choice = choose(measured.rows, for_k, excluded)
    cost = _reembed_cost(measured, built, detected, retrieval)
    sources = sources_of(objects, retrieval.pools.gold, databases=bool(args.database))
    results = _print_outcome(measured, scope, choice, cost, sources)
    print_kinds(args, measured.rows, scope.question_ids, choice)
    config = config_for(choice, measured.rows, scope)
    if args.write_config is not None:
        from grapher_core.ranking.config import write_config

        write_config(args.write_config, config)
        print(f"wrote {args.write_config}: load it with GraphReranker.from_config(path)")
    if args.json is not None:
        reasons = {name: reason for name, reason in skipped.items() if reason is not None}
        report = report_json(
            measured.rows,
            scope,
            config=config,
            choice=choice,
            model=retrieval.model,
            graph=describe(detected),
            skipped=reasons,
            cost=cost,
            sources=None if results is None else [r.to_dict() for r in results],
        )
        _write_json(args.json, report)
        print(f"wrote {args.json}")
    return 0


def _reembed_cost(
    measured: GridResult, built: dict[str, Any], detected: Sequence[Any], retrieval: _Retrieval
) -> ReembedCost:
    """Which configurations read vectors, and (only then) what embedding one pool costs with
    the evaluation's own model."""
    labels = frozenset(
        row.name
        for row in measured.rows
        if row.setting is not None and needs_vectors(row.setting, built, detected)
    )
    ms = reembedding_ms(retrieval.embedder, retrieval.pools) if labels else 0.0
    return ReembedCost(ms, labels)


def _read_objects(args: argparse.Namespace) -> list[CorpusObject]:
    objects = load_objects(args)
    if not objects:
        raise InputError("no objects to rank (empty database or corpus)")
    return objects


def _prepare(args: argparse.Namespace, objects: list[CorpusObject]) -> list[CorpusObject]:
    """The objects as the retriever sees them: linked by the titles they name when asked,
    texts cleaned and cut to ``--max-chars``."""
    if args.mentions:
        from grapher_core.enrich.mentions import add_mentions

        metadata = add_mentions(objects)
        objects = [CorpusObject(o.id, o.text, m) for o, m in zip(objects, metadata, strict=True)]
    return [CorpusObject(o.id, clean_text(o.text, args.max_chars), o.metadata) for o in objects]


def _retrieve(
    args: argparse.Namespace, objects: Sequence[CorpusObject], questions: Sequence[Question]
) -> _Retrieval:
    """Embed the corpus and the questions once (through the cache) and hand each question
    its ``--top-n`` most cosine-similar objects."""
    from grapher_core.embeddings import default_embedder

    started = time.perf_counter()
    embedder = default_embedder()
    store = embedding_store(args)
    progress = not args.no_progress
    vectors, cached = embed_texts(
        embedder,
        [o.text for o in objects],
        store=store,
        label="embedding the corpus",
        progress=progress,
    )
    texts = [clean_text(q.text, args.max_chars) for q in questions]
    queries, _ = embed_texts(
        embedder, texts, store=store, label="embedding the questions", progress=progress
    )
    candidates = tuple(retrieve(objects, vectors, query, args.top_n) for query in queries)
    pools = Pools(tuple(q.gold for q in questions), tuple(texts), queries, candidates)
    return _Retrieval(pools, embedder, time.perf_counter() - started, cached)


def _print_setup(
    args: argparse.Namespace,
    n_objects: int,
    retrieval: _Retrieval,
    detected: Sequence[Any],
    skipped: dict[str, str | None],
    grid: Sequence[Setting],
) -> None:
    """What is evaluated: the corpus, the retriever, the graph, the grid."""
    from grapher_core.edges.detect import describe

    gold = retrieval.pools.gold
    cached = f", {retrieval.cached:,} vectors from the cache" if retrieval.cached else ""
    print(
        f"{n_objects:,} objects, {len(gold):,} questions ({sum(map(len, gold)):,} gold ids); "
        f"retriever: cosine similarity ({retrieval.model}), top {args.top_n} "
        f"({retrieval.seconds:.1f} s{cached})"
    )
    print(f"graph detected in the metadata: {describe(detected)}")
    if not detected:
        print(
            "note: no graph in the metadata (foreign_keys, links, mentions, entities or "
            "doc_id + chunk_index): GCS and PPR can only keep the retriever's order"
        )
    for name, reason in skipped.items():
        if reason is not None:
            print(f"skipped: {name}: {reason}")
    print(f"grid: {len(grid)} configurations")
    for setting in grid:
        print(f"  {setting.label}")


def _print_outcome(
    measured: GridResult,
    scope: EvaluationScope,
    choice: Choice,
    cost: ReembedCost,
    sources: Sequence[Sequence[str]] | None,
) -> list[SourceResult] | None:
    """The table, what a wrapper pays, the ceiling the candidates set, the rerankers' notes,
    the choice with its reason, and PR@K by source (returned for the report)."""
    rows, ks = measured.rows, scope.ks
    base = rows[0]
    print()
    print(render_table(rows, ks, choice, cost))
    _print_latency(cost, scope)
    print(
        f"\ngold among the {scope.top_n} candidates: "
        f"{base.gold_at(scope.top_n):.1%} (no reranking goes above it)"
    )
    for message, count in measured.notes.items():
        print(f"note ({count} configuration{'s' if count > 1 else ''}): {message}")
    for label, warning in choice.excluded.items():
        print(f"not chosen: {label}: its ranker warned that it does not fit: {_first(warning)}")
    print(f"\nchoice on PR@{choice.k}: {choice.reason}")
    if choice.hint is not None:
        print(f"more questions: {choice.hint}")
    if choice.row is not None:
        print(f"best: {choice.row.name} ({gain_text(choice.row, base, ks, choice.k)})")
    return _print_sources(choice, base, sources)


def _first(message: str) -> str:
    """A warning's first sentence, for a one-line mention."""
    return message.split(". ")[0].rstrip(".") + "."


def _print_latency(cost: ReembedCost, scope: EvaluationScope) -> None:
    """What the two latency columns mean, and how a wrapper avoids re-embedding."""
    print(
        "\nms p50: the median rerank call with the candidates' vectors at hand; ms re-embed: "
        "what a wrapper pays per query when its store does not hand the vectors back"
    )
    if not cost.labels:
        print("(no configuration reads vectors: the two are the same)")
        return
    print(
        f"re-embedding the {scope.top_n} candidates' texts costs {cost.ms:,.0f} ms per query "
        f"with the evaluation's model, for {len(cost.labels)} configuration"
        f"{'s' if len(cost.labels) > 1 else ''} whose ranker or graph reads vectors"
    )
    print(
        "to avoid it, hand the store's vectors back: LangChain: GraphERRetriever over an "
        "InMemoryVectorStore or Chroma store embedded with the reranker's model; LlamaIndex: "
        "GraphERPostprocessor(vector_store=index.vector_store)"
    )


SOURCE_TABLE_MAX = 25
"""More sources than this: only those below the retriever are listed."""


def _print_sources(
    choice: Choice, base: Any, sources: Sequence[Sequence[str]] | None
) -> list[SourceResult] | None:
    """PR@K by source for the recommended row (the default when the advice is to keep the
    retriever's order), naming every source where it is below the retriever."""
    row = choice.row if choice.row is not None else choice.default
    if sources is None or row is None:
        return None
    k = choice.k
    results = by_source(row, base, sources, k)
    who = "chosen" if row is choice.row else "default"
    if len(results) <= SOURCE_TABLE_MAX:
        print(
            f"\nPR@{k} by source (retriever -> {who}; a question counts in each source of "
            "its gold):"
        )
        width = max(len(r.source) for r in results)
        for r in results:
            print(
                f"  {r.source.ljust(width)}  {r.questions:>5} q  {pct(r.retriever):>5} -> "
                f"{pct(r.row):>5}  +{r.wins}/-{r.losses}"
            )
    below = losing(results)
    if not below:
        print(f"no source where the {who} configuration is below the retriever on PR@{k}")
        return results
    named = ", ".join(
        f"{r.source} ({pct(r.retriever)} -> {pct(r.row)}, -{r.losses}/+{r.wins} of {r.questions})"
        for r in below[:10]
    )
    more = f" and {len(below) - 10} more" if len(below) > 10 else ""
    print(f"below the retriever on PR@{k} ({who}): {named}{more}")
    return results


def _write_json(path: Path, report: dict[str, Any]) -> None:
    try:
        path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as error:
        raise InputError(f"--json {path}: cannot write ({error.strerror or error})") from None
