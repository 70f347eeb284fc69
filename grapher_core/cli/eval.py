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
all their gold in the top K), MRR, the rerank call's median and p95 latency, and exact paired
tests against the retriever's order (McNemar on per-question PR@K, a sign test on per-question
gold@K; two-sided). The best configuration is chosen by PR@<largest K>, then gold@<smallest
K>, then MRR -- but only when it is nowhere below the retriever on gold@<smallest K>,
PR@<smallest K> and PR@<largest K>; otherwise the advice is to keep the retriever's order.
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
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate, CorpusObject
from grapher_core.cli.inputs import Question, clean_text, embed_texts, read_questions
from grapher_core.cli.rerank import (
    add_embedding_arguments,
    add_source_arguments,
    embedding_store,
    load_objects,
    retrieve,
)
from grapher_core.errors import GraphERError, InputError
from grapher_core.utils.progress import Progress
from grapher_core.utils.stats import mcnemar_exact

__all__ = ["ALPHAS", "Setting", "choose", "register", "run"]

ALPHAS: dict[str, tuple[float | None, ...]] = {"gcs": (0.1, 0.3, 0.5), "ppr": (0.3, 0.8)}
"""Alphas tried per ranker (the first of each is its tuned default); other rankers: theirs."""
SEEDS = {"rank": "rank", "score": "auto"}
"""Seed policies tried: the table's name -> ``seed_transform``."""
MAX_CONFIGS = 16


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="measure GraphER against your retriever on your own questions; pick a config",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_source_arguments(parser)
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
        help="cut-offs of gold@K and PR@K, comma-separated (default: %(default)s); the choice "
        "reads the smallest and the largest",
    )
    parser.add_argument(
        "--mentions",
        action="store_true",
        help="first link objects to the objects whose titles they name (corpora without links)",
    )
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


# -- the grid ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One configuration of the grid: what ``--write-config`` would save for it."""

    ranker: str
    alpha: float | None
    seeds: str  # "rank" or "score"
    graph: str  # "detected" or a description of the one proximity used
    proximities: tuple[Any, ...] | None = field(default=None, compare=False)  # None: detect
    # the ranker's keyword options beyond alpha (values may be dicts: kept out of hash and ==)
    options: tuple[tuple[str, Any], ...] = field(default=(), compare=False)

    @property
    def seed_transform(self) -> str:
        return SEEDS[self.seeds]

    @property
    def label(self) -> str:
        alpha = "default" if self.alpha is None else f"{self.alpha:g}"
        return f"{self.ranker} alpha={alpha} seeds={self.seeds} graph={self.graph}"


FULL_CHUNK_ORDER: tuple[tuple[str, Any], ...] = (("alone_weights", {}),)
"""GCS options that let chunk order pass its whole share where it is a pool's only evidence."""


def build_grid(
    rankers: Sequence[str], detected: Sequence[Any], available: dict[str, str | None]
) -> list[Setting]:
    """The configurations tried: each ranker at its alphas x both seed policies over the
    detected graph, GCS with chunk order at full share when chunk order is detected, then (with
    several detected) GCS over each graph alone; at most :data:`MAX_CONFIGS`. ``available``:
    ranker -> ``None``, or why it is skipped."""
    from grapher_core.edges.detect import describe

    grid = [
        Setting(ranker, alpha, seeds, "detected")
        for ranker in rankers
        if available.get(ranker) is None
        for alpha in ALPHAS.get(ranker, (None,))
        for seeds in SEEDS
    ]
    if "gcs" in rankers and any(getattr(p, "kind", None) == "contextual" for p in detected):
        grid.append(
            Setting(
                "gcs",
                ALPHAS["gcs"][0],
                "rank",
                "detected, chunk order full",
                None,
                FULL_CHUNK_ORDER,
            )
        )
    if len(detected) > 1 and "gcs" in rankers:
        grid += [Setting("gcs", ALPHAS["gcs"][0], "rank", describe([p]), (p,)) for p in detected]
    return grid[:MAX_CONFIGS]


def _availability(rankers: Sequence[str], embedder: Any) -> tuple[dict[str, str | None], dict]:
    """Per ranker: ``None`` (usable) or the reason it is skipped; and the learned rankers
    built once (their checkpoint loads once, not per configuration)."""
    from grapher_core.ranking.registry import make_ranker

    reasons: dict[str, str | None] = {}
    built: dict[str, Any] = {}
    for name in rankers:
        if name in ALPHAS or name == "baseline":
            reasons[name] = None
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch-geometric's import-time deprecations
                try:  # a learned ranker checks that the vectors are those it was trained on
                    ranker = make_ranker(name, embedder=embedder)
                except TypeError:  # a ranker that takes no embedder
                    ranker = make_ranker(name)
        except (GraphERError, ImportError, OSError, TypeError) as error:
            reasons[name] = " ".join(str(error).split()) or type(error).__name__
            continue
        reasons[name] = None
        built[name] = ranker
    return reasons, built


# -- statistics -------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the table: an ordering's per-question gold ranks and what they give."""

    name: str
    setting: Setting | None
    gold_ranks: list[list[int | None]]  # per question, per gold id: 1-based rank or None
    latency_ms: list[float] = field(default_factory=list)

    def hits(self, k: int) -> np.ndarray:
        return np.array(
            [sum(1 for r in ranks if r is not None and r <= k) for ranks in self.gold_ranks]
        )

    def perfect(self, k: int) -> np.ndarray:
        return np.array(
            [all(r is not None and r <= k for r in ranks) for ranks in self.gold_ranks], dtype=int
        )

    def reciprocal(self) -> np.ndarray:
        return np.array(
            [
                max((1.0 / r for r in ranks if r is not None), default=0.0)
                for ranks in self.gold_ranks
            ]
        )

    def metrics(self, ks: Sequence[int], total_gold: int) -> dict[str, float]:
        out: dict[str, float] = {}
        for k in ks:
            out[f"gold@{k}"] = float(self.hits(k).sum() / total_gold)
        for k in ks:
            out[f"PR@{k}"] = float(self.perfect(k).mean())
        out["MRR"] = float(self.reciprocal().mean())
        return out

    def latency(self) -> dict[str, float] | None:
        if not self.latency_ms:
            return None
        values = np.asarray(self.latency_ms)
        return {"median": float(np.median(values)), "p95": float(np.percentile(values, 95))}

    def versus(self, base: Row, ks: Sequence[int]) -> dict[str, dict[str, float]]:
        """Paired tests against ``base``: wins, losses and the exact two-sided p."""
        out: dict[str, dict[str, float]] = {}
        for k in ks:
            for name, mine, theirs in (
                (f"PR@{k}", self.perfect(k), base.perfect(k)),
                (f"gold@{k}", self.hits(k), base.hits(k)),
            ):
                wins, losses = int((mine > theirs).sum()), int((mine < theirs).sum())
                out[name] = {"wins": wins, "losses": losses, "p": mcnemar_exact(wins, losses)}
        return out


def _ranks(order: Sequence[str], gold: Sequence[str]) -> list[int | None]:
    position = {object_id: rank for rank, object_id in enumerate(order, start=1)}
    return [position.get(g) for g in gold]


def choose(rows: Sequence[Row], ks: Sequence[int]) -> Row | None:
    """The best configuration by PR@<largest K>, then gold@<smallest K>, then MRR -- only
    among those nowhere below the retriever (``rows[0]``) on gold@<smallest K>,
    PR@<smallest K> and PR@<largest K>, and above it on that order; ``None``: keep the
    retriever's order."""
    small, large = min(ks), max(ks)
    base = rows[0]

    def key(row: Row) -> tuple[int, int, float]:
        return (
            int(row.perfect(large).sum()),
            int(row.hits(small).sum()),
            float(row.reciprocal().sum()),
        )

    def safe(row: Row) -> bool:
        return (
            row.hits(small).sum() >= base.hits(small).sum()
            and row.perfect(small).sum() >= base.perfect(small).sum()
            and row.perfect(large).sum() >= base.perfect(large).sum()
        )

    eligible = [row for row in rows[1:] if safe(row) and key(row) > key(base)]
    return max(eligible, key=key) if eligible else None  # max keeps the first of equals


# -- the command ------------------------------------------------------------------------------


def _parse_ks(value: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError:
        raise InputError(f"--k must be integers separated by commas, got {value!r}") from None
    if not ks or ks[0] < 1:
        raise InputError(f"--k values must be >= 1, got {value!r}")
    return ks


def _check(args: argparse.Namespace) -> tuple[list[int], list[str]]:
    """Refuse a bad command line before anything is read or embedded."""
    from grapher_core.ranking.registry import available_rankers

    ks = _parse_ks(args.k)
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
    return ks, rankers


def run(args: argparse.Namespace) -> int:
    from grapher_core.edges.detect import describe, detect_proximities
    from grapher_core.embeddings import default_embedder

    ks, rankers = _check(args)
    objects = load_objects(args)
    if not objects:
        raise InputError("no objects to rank (empty database or corpus)")
    questions = read_questions(args.questions, {o.id for o in objects}, need_gold=True)
    if args.mentions:
        from grapher_core.enrich.mentions import add_mentions

        metadata = add_mentions(objects)
        objects = [CorpusObject(o.id, o.text, m) for o, m in zip(objects, metadata, strict=True)]
    objects = [CorpusObject(o.id, clean_text(o.text, args.max_chars), o.metadata) for o in objects]
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
    pools = [retrieve(objects, vectors, query, args.top_n) for query in queries]
    embed_s = time.perf_counter() - started

    detected = detect_proximities([Candidate(o.id, "", None, o.metadata) for o in objects])
    available, built = _availability(rankers, embedder)
    grid = build_grid(rankers, detected, available)
    total_gold = sum(len(q.gold) for q in questions)
    model = str(getattr(embedder, "name", type(embedder).__name__))
    print(
        f"{len(objects):,} objects, {len(questions):,} questions ({total_gold:,} gold ids); "
        f"retriever: cosine similarity ({model}), top {args.top_n} "
        f"({embed_s:.1f} s{f', {cached:,} vectors from the cache' if cached else ''})"
    )
    print(f"graph detected in the metadata: {describe(detected)}")
    if not detected:
        print(
            "note: no graph in the metadata (foreign_keys, links, mentions, entities or "
            "doc_id + chunk_index): GCS and PPR can only keep the retriever's order"
        )
    for name, reason in available.items():
        if reason is not None:
            print(f"skipped: {name}: {reason}")
    print(f"grid: {len(grid)} configurations")
    for setting in grid:
        print(f"  {setting.label}")

    base = Row(
        "retriever",
        None,
        [_ranks([c.id for c in pool], q.gold) for q, pool in zip(questions, pools, strict=True)],
    )
    rows = [base]
    notes: dict[str, int] = {}
    counter = Progress(len(grid) * len(questions), "reranking", enabled=progress)
    failed: dict[str, str] = {}
    for setting in grid:
        try:
            rows.append(_evaluate(setting, built, questions, texts, queries, pools, notes, counter))
        except GraphERError as error:  # a ranker refusing these inputs: said, not fatal
            failed[setting.label] = " ".join(str(error).split()) or type(error).__name__
    counter.close()
    for label, reason in failed.items():
        print(f"skipped: {label}: {reason}")
        available[label] = reason

    choice = choose(rows, ks)
    print()
    print(render_table(rows, ks, choice))
    print(
        f"\ngold among the {args.top_n} candidates: "
        f"{base.hits(args.top_n).sum() / total_gold:.1%} (no reranking goes above it)"
    )
    for message, count in notes.items():
        print(f"note ({count} configuration{'s' if count > 1 else ''}): {message}")
    config = _config(choice, args, ks, rows, questions, len(objects))
    if choice is None:
        print("\nkeep the retriever's order: no configuration beat it on these questions")
    else:
        print(f"\nbest: {choice.name} ({_gain(choice, base, ks, total_gold)})")
        if not _significant(choice, base, ks):
            print(
                f"caution: not significant on {len(questions)} questions (p >= 0.05 for "
                f"PR@{max(ks)} and gold@{min(ks)}): the gain may be chance; more questions "
                "would tell"
            )
    if args.write_config is not None:
        from grapher_core.ranking.config import write_config

        write_config(args.write_config, config)
        print(f"wrote {args.write_config}: load it with GraphReranker.from_config(path)")
    if args.json is not None:
        report = _report(rows, ks, total_gold, questions, args, config, detected, available, model)
        report["chosen"] = None if choice is None else choice.name
        _write_json(args.json, report)
        print(f"wrote {args.json}")
    return 0


def _evaluate(
    setting: Setting,
    built: dict[str, Any],
    questions: Sequence[Question],
    texts: Sequence[str],
    queries: np.ndarray,
    pools: Sequence[list[Candidate]],
    notes: dict[str, int],
    counter: Progress,
) -> Row:
    """One configuration over every question: its gold ranks and rerank latencies; what the
    reranker warned about is counted in ``notes`` (said once per configuration)."""
    from grapher_core.rerank import GraphReranker

    reranker = GraphReranker(
        None if setting.proximities is None else list(setting.proximities),
        built.get(setting.ranker, setting.ranker),
        setting.alpha if setting.ranker not in built else None,
        seed_transform=setting.seed_transform,
        explain=0,
        **dict(setting.options),
    )
    row = Row(setting.label, setting, [])
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        # one untimed call first: a learned ranker's first call loads torch's kernels
        reranker.run(pools[0], query=texts[0], query_embedding=queries[0])
        for question, text, query, pool in zip(questions, texts, queries, pools, strict=True):
            start = time.perf_counter()
            result = reranker.run(pool, query=text, query_embedding=query)
            row.latency_ms.append((time.perf_counter() - start) * 1000)
            row.gold_ranks.append(_ranks([r.id for r in result.ranked], question.gold))
            counter.update()
    for message in dict.fromkeys(str(w.message) for w in said):
        notes[message] = notes.get(message, 0) + 1
    return row


# -- output -----------------------------------------------------------------------------------


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def render_table(rows: Sequence[Row], ks: Sequence[int], choice: Row | None) -> str:
    """The table a person reads at a glance: the retriever first, one row per configuration,
    metrics in percent (MRR as a fraction), latency in ms, and the paired tests of
    PR@<largest K> and gold@<smallest K> against the retriever (``+wins/-losses p``)."""
    small, large = min(ks), max(ks)
    base = rows[0]
    total = sum(len(r) for r in base.gold_ranks)
    header = ["ranker", "alpha", "seeds", "graph"]
    header += [f"gold@{k}" for k in ks] + [f"PR@{k}" for k in ks] + ["MRR", "ms p50", "ms p95"]
    header += [f"PR@{large} vs retr.", f"gold@{small} vs retr.", ""]
    lines = []
    for row in rows:
        setting = row.setting
        if setting is None:
            cells = ["retriever", "-", "-", "-"]
        else:
            alpha = "default" if setting.alpha is None else f"{setting.alpha:g}"
            cells = [setting.ranker, alpha, setting.seeds, setting.graph]
        metrics = row.metrics(ks, total)
        cells += [_pct(metrics[f"gold@{k}"]) for k in ks] + [_pct(metrics[f"PR@{k}"]) for k in ks]
        cells.append(f"{metrics['MRR']:.3f}")
        latency = row.latency()
        cells += (
            ["-", "-"] if latency is None else [f"{latency['median']:.2f}", f"{latency['p95']:.2f}"]
        )
        if setting is None:
            cells += ["-", "-", ""]
        else:
            tests = row.versus(base, ks)
            cells += [_test(tests[f"PR@{large}"]), _test(tests[f"gold@{small}"])]
            cells.append("<- best" if row is choice else "")
        lines.append(cells)
    widths = [max(len(header[i]), *(len(line[i]) for line in lines)) for i in range(len(header))]
    text_columns = 4

    def fmt(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(width) if i < text_columns or i == len(cells) - 1 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths[:-1])
    return "\n".join([fmt(header), rule, *(fmt(line) for line in lines)])


def _test(result: dict[str, float]) -> str:
    p = result["p"]
    mark = "*" if p < 0.05 else " "
    return f"+{int(result['wins'])}/-{int(result['losses'])} p={p:.2g}{mark}"


def _gain(row: Row, base: Row, ks: Sequence[int], total_gold: int) -> str:
    small, large = min(ks), max(ks)
    mine, theirs = row.metrics(ks, total_gold), base.metrics(ks, total_gold)
    p = row.versus(base, ks)[f"PR@{large}"]["p"]
    return (
        f"PR@{large} {_pct(theirs[f'PR@{large}'])} -> {_pct(mine[f'PR@{large}'])} "
        f"(McNemar p={p:.2g}), gold@{small} {_pct(theirs[f'gold@{small}'])} -> "
        f"{_pct(mine[f'gold@{small}'])}, MRR {theirs['MRR']:.3f} -> {mine['MRR']:.3f}"
    )


def _significant(row: Row, base: Row, ks: Sequence[int]) -> bool:
    """Whether the paired tests of PR@<largest K> or gold@<smallest K> reach p < 0.05."""
    tests = row.versus(base, ks)
    return min(tests[f"PR@{max(ks)}"]["p"], tests[f"gold@{min(ks)}"]["p"]) < 0.05


def _summary(row: Row, ks: Sequence[int], total_gold: int) -> dict[str, Any]:
    return {"metrics": row.metrics(ks, total_gold), "latency_ms": row.latency()}


def _config(
    choice: Row | None,
    args: argparse.Namespace,
    ks: Sequence[int],
    rows: Sequence[Row],
    questions: Sequence[Question],
    n_objects: int,
) -> dict[str, Any]:
    """The configuration ``--write-config`` saves (validated by the core's loader)."""
    from grapher_core.ranking.config import CONFIG_VERSION, retriever_order_config

    total_gold = sum(len(q.gold) for q in questions)
    evaluation = {
        "questions_file": str(args.questions),
        "questions": len(questions),
        "corpus_objects": n_objects,
        "k": list(ks),
        "retriever": _summary(rows[0], ks, total_gold),
    }
    common = {"top_n": max(ks), "fetch_k": args.top_n}
    if choice is None or choice.setting is None:
        return retriever_order_config(
            **common,
            note="keep the retriever's order: no configuration beat it on these questions",
            evaluation=evaluation,
        )
    setting = choice.setting
    from grapher_core.edges.serialise import proximity_to_dict

    proximities = (
        None if setting.proximities is None else [proximity_to_dict(p) for p in setting.proximities]
    )
    evaluation["chosen"] = _summary(choice, ks, total_gold)
    return {
        "grapher_config": CONFIG_VERSION,
        "keep_retriever_order": False,
        "ranker": setting.ranker,
        "alpha": setting.alpha,
        "seed_transform": setting.seed_transform,
        **({"ranker_options": dict(setting.options)} if setting.options else {}),
        **common,
        "proximities": proximities,
        "note": f"chosen by grapher eval: {_gain(choice, rows[0], ks, total_gold)}"
        + ("" if _significant(choice, rows[0], ks) else "; not significant (p >= 0.05)"),
        "evaluation": evaluation,
    }


def _report(
    rows: Sequence[Row],
    ks: Sequence[int],
    total_gold: int,
    questions: Sequence[Question],
    args: argparse.Namespace,
    config: dict[str, Any],
    detected: Sequence[Any],
    available: dict[str, str | None],
    model: str,
) -> dict[str, Any]:
    """The machine report of ``--json``: every row's metrics, latency, tests and gold ranks."""
    from grapher_core.edges.detect import describe

    base = rows[0]
    out_rows = []
    for row in rows:
        setting = row.setting
        out_rows.append(
            {
                "name": row.name,
                "config": None
                if setting is None
                else {
                    "ranker": setting.ranker,
                    "alpha": setting.alpha,
                    "seed_transform": setting.seed_transform,
                    "graph": setting.graph,
                    "ranker_options": dict(setting.options),
                },
                **_summary(row, ks, total_gold),
                "vs_retriever": None if setting is None else row.versus(base, ks),
                "gold_ranks": row.gold_ranks,
            }
        )
    return {
        "questions_file": str(args.questions),
        "question_ids": [q.id for q in questions],
        "questions": len(questions),
        "gold_ids": total_gold,
        "top_n": args.top_n,
        "k": list(ks),
        "embedding_model": model,
        "graph_detected": describe(detected),
        "skipped": {name: reason for name, reason in available.items() if reason is not None},
        "gold_among_candidates": float(base.hits(args.top_n).sum() / total_gold),
        "rows": out_rows,
        "choice": config,
    }


def _write_json(path: Path, report: dict[str, Any]) -> None:
    try:
        path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as error:
        raise InputError(f"--json {path}: cannot write ({error.strerror or error})") from None
