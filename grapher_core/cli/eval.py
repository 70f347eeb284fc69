"""``grapher eval``: what GraphER does on your own questions, before you deploy it, no code.

Reads a corpus (``--corpus`` JSONL, or ``--database`` URLs pooled as one corpus, ids
``"<db name>.<table>"``, foreign keys as links) and a questions file (``{"id", "text", "gold":
[corpus ids]}`` per line, every line checked before anything is embedded). With ``--gold-key
KEY`` gold names values of that metadata key (a page: ``source``, ``doc_id``, ``file_path``, a
URL, a table name) and an object counts for its value: a page's rank is its best chunk's, PR@K
needs a chunk of every gold page in the top K, and further chunks of a found page take places
without counting again. The corpus is
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
what a wrapper pays re-embedding the candidates when its store does not hand them back (each
the median of ``--repeats`` passes, the load printed beside them), and
exact paired tests on the K of ``--for`` (default: the smallest ``--k``) against the retriever
and the default. The choice reads PR@K (gold@K breaking ties): it keeps the default (GCS at its
defaults, rank seeds, the detected graph) unless another configuration beats the default with
McNemar p < 0.05, is not below the retriever and costs at most ``--cost-budget`` per query
(default 5x the default's cost; one set aside for its cost is named); a configuration whose
ranker warned that it does not fit (``RankerUnfitWarning``) is never chosen; when the default
is below the retriever (or changes nothing) the advice is to keep the retriever's order.
PR@K by source names any source where it loses and any without an edge. The same evaluation
runs on a user's own retriever from Python:
``langchain_grapher.evaluate_retriever`` and ``llama_index_grapher.evaluate_retriever``.
``--write-config`` saves the choice for ``GraphReranker.from_config`` and both wrappers'
``from_config``; ``--json`` writes the whole report.

Exit codes:
  0  evaluated and printed
  2  bad command line or input (a questions line without a field, a gold id not in the
     corpus, an empty gold list, a duplicate question id, a --write-config that cannot be
     written, ...): one line naming file, line, field and value; or every ranker of --rankers
     was skipped (the line names the extra to install, or the reason)
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
from grapher_core.cli.arguments import output_argument
from grapher_core.cli.inputs import Question, clean_text, embed_texts, read_questions
from grapher_core.cli.rerank import (
    add_embedding_arguments,
    add_source_arguments,
    embedding_store,
    load_objects,
    retrieve,
)
from grapher_core.errors import InputError
from grapher_core.evaluation.cost import CostBudget
from grapher_core.evaluation.grid import missing_extras
from grapher_core.evaluation.measure import EvaluationScope, Pools

__all__ = ["add_question_arguments", "load_questions", "register", "run"]


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
    output_argument(
        parser,
        "--write-config",
        metavar="JSON",
        help="write the chosen configuration here (GraphReranker.from_config and the "
        "wrappers' from_config load it)",
    )
    output_argument(parser, "--json", metavar="JSON", help="write the full report here")
    parser.add_argument(
        "--cost-budget",
        default="5x",
        metavar="BUDGET",
        help="the most a chosen configuration may cost per query: a multiple of the "
        "default's measured cost ('5x', the default), milliseconds ('200ms') or 'none'",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="timing passes; each latency is their median (default: %(default)s)",
    )
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
        "--gold-key",
        metavar="KEY",
        help="gold names values of this metadata key (a page: 'source', 'doc_id', "
        "'file_path', a URL, a table name) instead of object ids; an object counts for its "
        "value (PR@K: every gold value has an object in the top K)",
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
    if args.repeats < 1:
        raise InputError(f"--repeats must be >= 1, got {args.repeats}")
    rankers = list(dict.fromkeys(r.strip().lower() for r in args.rankers.split(",") if r.strip()))
    known = available_rankers()
    unknown = [r for r in rankers if r not in known]
    if not rankers or unknown:
        raise InputError(
            f"--rankers: unknown ranker {(unknown or [args.rankers])[0]!r}; choose from "
            f"{', '.join(known)}"
        )
    return ks, for_k, rankers  # --write-config and --json were tried first (output_argument)


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
    from grapher_core.edges.detect import detect_proximities
    from grapher_core.evaluation.run import evaluate, plan_evaluation

    ks, for_k, rankers = _check(args)
    missing_extras(rankers)  # every ranker missing its extra: exit 2 before any input
    budget = CostBudget.parse(args.cost_budget)
    objects = _read_objects(args)
    from grapher_core.cli.synthesize import print_kinds, synthesize_if_asked

    synthesize_if_asked(args, objects)  # --synthesize: writes them, sets args.questions
    questions = load_questions(args, objects)
    objects = _prepare(args, objects)
    retrieval = _retrieve(args, objects, questions)
    detected = detect_proximities([Candidate(o.id, "", None, o.metadata) for o in objects])
    plan = plan_evaluation(rankers, detected, retrieval.embedder)
    _print_setup(args, len(objects), retrieval)
    print("\n".join(plan.setup_lines()))
    scope = EvaluationScope(
        str(args.questions), tuple(q.id for q in questions), len(objects), args.top_n, tuple(ks)
    )
    result = evaluate(
        plan,
        retrieval.pools,
        scope,
        for_k=for_k,
        budget=budget,
        repeats=args.repeats,
        objects=objects,
        databases=bool(args.database),
        embedder=retrieval.embedder,
        retriever=f"cosine similarity ({retrieval.model}), top {args.top_n}",
        model=retrieval.model,
        progress=not args.no_progress,
    )
    for label, reason in result.skipped.items():
        if label not in plan.skipped:
            print(f"skipped: {label}: {reason}")
    print("\n".join(result.lines()))
    print_kinds(args, result.rows, scope.question_ids, result.choice)
    if args.write_config is not None:
        result.write_config(args.write_config)
        print(f"wrote {args.write_config}: load it with GraphReranker.from_config(path)")
    if args.json is not None:
        _write_json(args.json, result.to_dict())
        print(f"wrote {args.json}")
    return 0


def load_questions(args: argparse.Namespace, objects: Sequence[CorpusObject]) -> list[Question]:
    """The questions evaluated: the one place they come from (a ``--questions`` file, checked
    against the corpus -- its ids, or its ``--gold-key`` values -- before anything is
    embedded)."""
    from grapher_core.evaluation.gold import gold_values

    known = gold_values(((o.id, o.metadata) for o in objects), args.gold_key)
    return read_questions(args.questions, known, need_gold=True, gold_key=args.gold_key)


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
    pools = Pools(
        tuple(q.gold for q in questions), tuple(texts), queries, candidates, args.gold_key
    )
    return _Retrieval(pools, embedder, time.perf_counter() - started, cached)


def _print_setup(args: argparse.Namespace, n_objects: int, retrieval: _Retrieval) -> None:
    """What is evaluated: the corpus and the retriever."""
    gold = retrieval.pools.gold
    cached = f", {retrieval.cached:,} vectors from the cache" if retrieval.cached else ""
    level = "" if args.gold_key is None else f" of metadata key {args.gold_key!r}"
    print(
        f"{n_objects:,} objects, {len(gold):,} questions ({sum(map(len, gold)):,} gold ids"
        f"{level}); retriever: cosine similarity ({retrieval.model}), top {args.top_n} "
        f"({retrieval.seconds:.1f} s{cached})"
    )


def _write_json(path: Path, report: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # tried at the start
        path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as error:
        raise InputError(f"--json {path}: cannot write ({error.strerror or error})") from None
