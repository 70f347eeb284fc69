"""``grapher-bench grag-study`` and ``grag-latency``: the G-RAG measurements of docs/grag.md."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from grapher_bench.cli import non_negative_int, positive_int
from grapher_core.cli.arguments import output_argument

__all__ = ["register"]

SETS = ("hotpotqa", "2wikimultihopqa", "musique", "squad_chunks")
#: variant -> (node text, graph, loss, GRAGSpec variant)
VARIANTS: dict[str, tuple[str, str, str, str]] = {
    "MLP": ("plain", "question", "listwise", "mlp"),
    "GCN": ("plain", "question", "listwise", "gcn"),
    "G-RAG": ("concept", "question", "listwise", "gcn"),
    "G-RAG-RL": ("concept", "question", "pairwise", "gcn"),
    "G-RAG-RL (question-free graph)": ("concept", "documents", "pairwise", "gcn"),
}
#: where each test set's model is trained (transfer between sets)
TRAIN_ON = {
    "hotpotqa": "2wikimultihopqa",
    "2wikimultihopqa": "hotpotqa",
    "musique": "hotpotqa",
    "squad_chunks": "hotpotqa",
}
METRICS = ("PR@5", "PR@10", "MRR", "MHits@10", "MTRR", "TMHits@10")
#: the untrained network's score on the concept features: ``x_L = x_0`` (residual, zero second
#: layer), so ``s_i = y . x_i`` -- the starting point every G-RAG row is trained from
UNTRAINED = "G-RAG untrained (y·x)"


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def register(subparsers: Any) -> None:
    """Add ``grag-study``, ``grag-compare`` and ``grag-latency``."""
    _add_study_parser(subparsers)
    _add_compare_parser(subparsers)
    _add_latency_parser(subparsers)


def _add_study_parser(subparsers: Any) -> None:
    """``grag-study``: what is trained on which questions, and where the tables go."""
    study = subparsers.add_parser(
        "grag-study",
        help="train and evaluate G-RAG's variants "
        "(transfer between sets, both label modes, significance)",
    )
    _add_question_options(study)
    _add_training_options(study)
    _add_output_options(study)
    study.add_argument(
        "--in-domain",
        type=float,
        default=None,
        metavar="FRACTION",
        help="instead of transfer: train on this fraction of each set's own "
        "questions (seeded shuffle) and evaluate on the rest",
    )
    study.add_argument(
        "--markers", default="grag", help="write between <!-- NAME:start --> and <!-- NAME:end -->"
    )
    study.set_defaults(func=run_study)


def _add_question_options(study: argparse.ArgumentParser) -> None:
    """The sets, how many questions and candidates, and the nodes' concept text."""
    study.add_argument("--benchmarks", type=Path, default=None)
    study.add_argument("--sets", default=",".join(SETS))
    study.add_argument("--top-n", type=positive_int, default=20)
    study.add_argument("--limit-squad", type=positive_int, default=150)
    study.add_argument(
        "--limit-multihop",
        type=positive_int,
        default=200,
        help="questions of hotpotqa and 2wikimultihopqa (musique has 192)",
    )
    study.add_argument(
        "--concept-text",
        choices=("fast", "concepts"),
        default="fast",
        help="G-RAG node text: fast (document vector + mean concept vector; "
        "default, what the shipped checkpoint uses) or concepts (encode "
        "document + path text for every candidate: the paper's, slow)",
    )
    study.add_argument(
        "--path-concepts",
        choices=("all", "document"),
        default="all",
        help="a_i = all concepts of the paths (the paper's) or only the "
        "document's (the question's own concepts left out)",
    )
    study.add_argument(
        "--limit", type=positive_int, default=None, help="questions per set (smoke runs)"
    )


def _add_training_options(study: argparse.ArgumentParser) -> None:
    """Epochs, the hyper-parameters (or their grid) and the label modes."""
    study.add_argument("--epochs", type=positive_int, default=20)
    study.add_argument("--grid", action="store_true", help="run the hidden x lr grid first")
    study.add_argument("--hidden", type=positive_int, default=64)
    study.add_argument("--lr", type=float, default=5e-4)
    study.add_argument("--dropout", type=float, default=0.1)
    study.add_argument("--labels", default="gold,has_answer")


def _add_output_options(study: argparse.ArgumentParser) -> None:
    """The output folder, the docs written, the shipped checkpoint and re-rendering."""
    output_argument(study, "--out", folder=True, type=Path, default=Path("bench_out/grag"))
    study.add_argument(
        "--docs",
        type=Path,
        default=None,
        help="write the tables between the grag markers of these files (docs/grag_study.md)",
    )
    study.add_argument(
        "--bench-doc",
        type=Path,
        default=None,
        help="write the summary table between the grag markers of this file (docs/benchmarks.md)",
    )
    study.add_argument(
        "--ship",
        type=Path,
        default=None,
        help="also train G-RAG-RL on all of hotpotqa (gold) and save it here",
    )
    study.add_argument(
        "--report-from",
        type=Path,
        default=None,
        help="only re-render a saved grag_study.json into --docs/--bench-doc",
    )
    study.add_argument(
        "--summary-extra",
        type=Path,
        nargs="*",
        default=[],
        help="with --report-from: other runs' grag_study.json (e.g. another "
        "concept text) whose G-RAG rows join the --bench-doc summary",
    )


def _add_compare_parser(subparsers: Any) -> None:
    """``grag-compare``: paired tests between the same rows of two runs."""
    compare = subparsers.add_parser(
        "grag-compare",
        help="paired tests between the same rows "
        "of two grag-study runs (e.g. concept text vs fast)",
    )
    compare.add_argument("a", type=Path, help="grag_per_query.json of the first run")
    compare.add_argument("b", type=Path, help="grag_per_query.json of the second run")
    compare.add_argument("--names", default="a,b", help="what the two runs are, e.g. concepts,fast")
    compare.add_argument("--rows", default="G-RAG,G-RAG-RL")
    compare.add_argument("--docs", type=Path, default=None)
    compare.add_argument("--markers", default="grag-compare")
    compare.set_defaults(func=run_compare)


def _add_latency_parser(subparsers: Any) -> None:
    """``grag-latency``: rerank time per text mode and candidate count."""
    latency = subparsers.add_parser(
        "grag-latency",
        help="g-rag rerank latency (concept text vs fast vs plain) at 100 and 200 candidates",
    )
    latency.add_argument("--benchmarks", type=Path, default=None)
    latency.add_argument("--dataset", default="hotpotqa")
    latency.add_argument("--sizes", default="100,200")
    latency.add_argument("--queries", type=positive_int, default=10)
    latency.add_argument(
        "--queries-concepts",
        type=non_negative_int,
        default=3,
        help="questions for text=concepts (n encodings per call: slow)",
    )
    latency.set_defaults(func=run_latency)


def _loop_config(
    loss: str, args: argparse.Namespace, lr: float | None = None, patience: int = 5
) -> Any:
    from grapher_core.learned.loop import LoopConfig

    return LoopConfig(
        loss=loss,
        epochs=args.epochs,
        patience=patience,
        lr=lr or args.lr,
        weight_decay=1e-4,
        batch_size=16,
        metric="MRR",
    )


def run_study(args: argparse.Namespace) -> int:
    from grapher_bench.grag.bench import mcnemar, paired_bootstrap, save_json

    if args.report_from:
        return _rerender(args)
    names = [s for s in args.sets.split(",") if s]
    study = _Study(args, names, _load_sets(args, names))
    if args.grid:
        study.hidden, study.lr = _grid_choice(args, study.sets, names, study.report)
    report = study.report
    report["chosen"] = {"hidden": study.hidden, "lr": study.lr, "dropout": args.dropout}
    for mode in [m for m in args.labels.split(",") if m]:
        study.run_mode(mode)
        report["tests"][mode] = _orderings(study.per_query.get(mode, {}), paired_bootstrap, mcnemar)
    save_json(args.out / "grag_study.json", report)
    save_json(args.out / "grag_per_query.json", study.per_query)
    _publish(report, args, lambda: [])
    if args.ship:
        _ship(study.sets.get("hotpotqa") or study.sets[names[0]], args, study.hidden, study.lr)
    return 0


def _rerender(args: argparse.Namespace) -> int:
    """``--report-from``: the tables of a saved grag_study.json, nothing trained."""
    import json

    saved = json.loads(args.report_from.read_text())
    _publish(saved, args, lambda: [json.loads(p.read_text()) for p in args.summary_extra])
    return 0


def _publish(
    report: dict[str, Any], args: argparse.Namespace, extra: Callable[[], list[dict[str, Any]]]
) -> None:
    """Print the tables, then write them into ``--docs`` and the summary (with the ``extra``
    runs' concept rows, read only then) into ``--bench-doc``."""
    text = render(report)
    print(text)
    if args.docs:
        _write_markers(args.docs, text, args.markers)
    if args.bench_doc:
        _write_markers(args.bench_doc, render_summary(report, extra()))


def _load_sets(args: argparse.Namespace, names: list[str]) -> dict[str, Any]:
    """Each set's questions, candidates and features, ``--limit-squad`` and
    ``--limit-multihop`` capping their sets under ``--limit``."""
    from grapher_bench.cache import CachedEmbedder, EmbeddingCache
    from grapher_bench.data import default_benchmarks_root
    from grapher_bench.grag.bench import load_question_sets
    from grapher_core.embeddings import default_embedder

    root = args.benchmarks or default_benchmarks_root()
    embedder = CachedEmbedder(default_embedder(), EmbeddingCache(), progress=False)
    limits = {name: args.limit for name in names} if args.limit else {}
    limits["squad_chunks"] = min(args.limit_squad, args.limit or args.limit_squad)
    for name in ("hotpotqa", "2wikimultihopqa"):
        limits[name] = min(args.limit_multihop, args.limit or args.limit_multihop)
    return load_question_sets(
        names,
        root,
        args.top_n,
        limits,
        embedder,
        args.concept_text,
        log=_log,
        paths=args.path_concepts,
    )


def _new_report(args: argparse.Namespace) -> dict[str, Any]:
    """The report's skeleton, with the options as the protocol (paths as text)."""
    report: dict[str, Any] = {
        "protocol": vars(args) | {"out": str(args.out)},
        "grid": [],
        "runs": {},
        "training": {},
        "tests": {},
    }
    report["protocol"].pop("func", None)
    for name in ("benchmarks", "docs", "ship"):
        report["protocol"][name] = str(report["protocol"][name])
    return report


def _grid_choice(
    args: argparse.Namespace, sets: dict[str, Any], names: list[str], report: dict[str, Any]
) -> tuple[int, float]:
    """``--grid``: G-RAG-RL for each hidden size x learning rate on one split of hotpotqa (or
    the first set); the best validation MRR's pair, every row added to ``report["grid"]``."""
    from grapher_bench.grag.bench import examples_for
    from grapher_core.learned.grag.model import GRAGSpec
    from grapher_core.learned.grag.train import train_grag
    from grapher_core.learned.loop import split_examples

    source = "hotpotqa" if "hotpotqa" in sets else names[0]
    examples = examples_for(sets[source], args.concept_text, "question", "gold")
    split = split_examples(examples, 0.2, 0)
    best = None
    for h in (8, 64, 128):
        for rate in (1e-4, 5e-4):
            spec = GRAGSpec(hidden=h, dropout=args.dropout)
            result = train_grag(examples, spec, _loop_config("pairwise", args, rate), split=split)
            row = {
                "hidden": h,
                "lr": rate,
                "val_MRR": result.best_metrics["MRR"],
                "epoch": result.best_epoch,
                "seconds": result.seconds,
            }
            report["grid"].append(row)
            _log(f"grid {row}")
            if best is None or row["val_MRR"] > best["val_MRR"]:
                best = row
    if best is None:
        raise ValueError("grag-study --grid: the grid is empty (no hidden size or learning rate)")
    hidden, lr = int(best["hidden"]), float(best["lr"])
    _log(f"grid choice: hidden {hidden}, lr {lr}")
    return hidden, lr


class _Study:
    """One grag-study run: the sets, the chosen hyper-parameters, the report being filled and
    the per-question rows the paired tests read."""

    def __init__(self, args: argparse.Namespace, names: list[str], sets: dict[str, Any]) -> None:
        self.args = args
        self.names = names
        self.sets = sets
        self.hidden: int = args.hidden
        self.lr: float = args.lr
        self.report = _new_report(args)
        self.per_query: dict[str, dict[str, dict[str, list[dict[str, float]]]]] = {}

    def run_mode(self, mode: str) -> None:
        """Every set under one label mode; a model trained on a source set serves every test
        set that transfers from it."""
        models: dict[tuple[str, str], Any] = {}
        for test in self.names:
            source = self._transfer_source(test)
            held = (
                None
                if self.args.in_domain is None
                else held_out(self.sets[test].query_ids, self.args.in_domain)
            )
            if held is not None:
                source = test  # in-domain: trained on the set's own training side
            rows = self._baseline_rows(mode, test, held)
            for variant in VARIANTS:
                rows[variant] = self._variant_rows(mode, variant, test, source, held, models)
            self.per_query.setdefault(mode, {})[test] = rows
            self._summarise(mode, test, source, rows)

    def _transfer_source(self, test: str) -> str:
        """Where ``test``'s models are trained (:data:`TRAIN_ON`); on smoke runs with fewer
        sets, any other set."""
        source = TRAIN_ON[test]
        if source not in self.sets:
            source = next((s for s in self.names if s != test), test)
        return source

    def _baseline_rows(
        self, mode: str, test: str, held: set[str] | None
    ) -> dict[str, list[dict[str, float]]]:
        """The rows nothing is trained for: the retriever's order, GCS over the concept graph
        and the untrained network (``y . x``)."""
        from grapher_bench.grag.bench import examples_for, query_metrics

        qs = self.sets[test]
        rows: dict[str, list[dict[str, float]]] = {}
        base_examples = _kept(examples_for(qs, "plain", "documents", mode), held)
        retriever_scores = [
            np.asarray([c.score for c in qs.candidates[qs.query_ids.index(e.query_id)]])
            for e in base_examples
        ]
        rows["w/o reranker"] = query_metrics(qs, base_examples, retriever_scores)
        rows["GCS (concept graph)"] = _gcs_rows(qs, base_examples)
        concept = _kept(examples_for(qs, self.args.concept_text, "question", mode), held)
        rows[UNTRAINED] = query_metrics(qs, concept, [e.x @ e.query for e in concept])
        return rows

    def _variant_rows(
        self,
        mode: str,
        variant: str,
        test: str,
        source: str,
        held: set[str] | None,
        models: dict[tuple[str, str], Any],
    ) -> list[dict[str, float]]:
        """One variant's per-question metrics on ``test``, its model trained on ``source``
        the first time it is needed."""
        from grapher_bench.grag.bench import examples_for, query_metrics
        from grapher_core.learned.grag.train import GRAGAdapter
        from grapher_core.learned.loop import predict

        text, graph, _, _ = self._variant_inputs(variant)
        key = (variant, source)
        if key not in models:
            models[key] = self._train(mode, variant, source, held)
        examples = _kept(examples_for(self.sets[test], text, graph, mode), held)
        scores = predict(models[key], GRAGAdapter(), examples, "cpu")
        return query_metrics(self.sets[test], examples, scores)

    def _variant_inputs(self, variant: str) -> tuple[str, str, str, str]:
        """The variant's (node text, graph, loss, architecture), ``concept`` text resolved to
        ``--concept-text``."""
        text, graph, loss, arch = VARIANTS[variant]
        return (self.args.concept_text if text == "concept" else text), graph, loss, arch

    def _train(self, mode: str, variant: str, source: str, held: set[str] | None) -> Any:
        """Train ``variant`` on ``source`` (its training side when in-domain) and record
        the run under ``report["training"]``."""
        from grapher_bench.grag.bench import examples_for
        from grapher_core.learned.grag.model import GRAGSpec
        from grapher_core.learned.grag.train import train_grag

        text, graph, loss, arch = self._variant_inputs(variant)
        train = _kept(examples_for(self.sets[source], text, graph, mode), held, False)
        spec = GRAGSpec(variant=arch, hidden=self.hidden, dropout=self.args.dropout)
        started = time.perf_counter()
        result = train_grag(train, spec, _loop_config(loss, self.args, self.lr))
        self.report["training"][f"{mode}/{variant}/{source}"] = {
            "seconds": time.perf_counter() - started,
            "best_epoch": result.best_epoch,
            "val": result.best_metrics,
            "n_train": result.n_train,
            "n_val": result.n_val,
        }
        _log(
            f"[{mode}] trained {variant} on {source}: val MRR "
            f"{result.best_metrics['MRR']:.3f} "
            f"in {time.perf_counter() - started:.1f}s"
        )
        return result.model

    def _summarise(
        self, mode: str, test: str, source: str, rows: dict[str, list[dict[str, float]]]
    ) -> None:
        """Each row's mean metrics into ``report["runs"]``, and a log line."""
        summary = {
            label: {m: float(np.mean([r[m] for r in rs])) for m in METRICS} | {"n": len(rs)}
            for label, rs in rows.items()
        }
        self.report["runs"][f"{mode}/{test}"] = {"trained_on": source, "metrics": summary}
        _log(
            f"[{mode}] {test}: "
            + "; ".join(f"{label} MRR {m['MRR']:.3f}" for label, m in summary.items())
        )


def _gcs_rows(qs: Any, examples: Any) -> list[dict[str, float]]:
    from dataclasses import replace

    from grapher_bench.grag.bench import query_metrics
    from grapher_core.edges.concepts import SharedConcepts
    from grapher_core.edges.graph import build_graph
    from grapher_core.enrich.concepts import encode_graph
    from grapher_core.ranking.propagation import gcs_scores

    scores = []
    for e in examples:
        k = qs.query_ids.index(e.query_id)
        cands = qs.candidates[k]
        # concept graphs as metadata, the way the enrichment stores them
        with_meta = [
            replace(c, metadata={"concepts": encode_graph(qs.doc_graphs[c.id])}) for c in cands
        ]
        graph = build_graph(with_meta, [SharedConcepts()])
        seeds = np.asarray([c.score for c in cands])
        scores.append(gcs_scores(graph.adjacency, seeds, 0.1))
    return query_metrics(qs, examples, scores)


def _orderings(
    rows: dict[str, dict[str, list[dict[str, float]]]], bootstrap: Any, mcnemar: Any
) -> list[dict[str, Any]]:
    """The paper's orderings, one paired test per set and metric."""
    pairs = [
        ("G-RAG-RL", "w/o reranker"),
        (UNTRAINED, "w/o reranker"),
        ("G-RAG", UNTRAINED),
        ("G-RAG-RL", UNTRAINED),
        ("MLP", "w/o reranker"),
        ("GCN", "w/o reranker"),
        ("GCN", "MLP"),
        ("G-RAG", "GCN"),
        ("G-RAG-RL", "G-RAG"),
        ("G-RAG-RL", "G-RAG-RL (question-free graph)"),
        ("G-RAG-RL", "GCS (concept graph)"),
    ]
    out = []
    for test, by_label in rows.items():
        for better, worse in pairs:
            if better not in by_label or worse not in by_label:
                continue
            a, b = by_label[better], by_label[worse]
            for metric in ("MRR", "MHits@10"):
                result = bootstrap([r[metric] for r in a], [r[metric] for r in b])
                out.append(
                    {"set": test, "claim": f"{better} > {worse}", "metric": metric, **result}
                )
            hits = mcnemar([r["PR@10"] for r in a], [r["PR@10"] for r in b])
            out.append(
                {
                    "set": test,
                    "claim": f"{better} > {worse}",
                    "metric": "PR@10 McNemar",
                    "diff": hits["only_a"] - hits["only_b"],
                    "p": hits["p"],
                }
            )
    return out


def render(report: dict[str, Any]) -> str:
    lines = []
    chosen = report["chosen"]
    lines.append(
        f"Hyper-parameters: hidden {chosen['hidden']}, lr {chosen['lr']}, dropout "
        f"{chosen['dropout']} (grid rows below when run)."
    )
    if report["grid"]:
        lines += [
            "",
            "| hidden | lr | val MRR (hotpotqa split) | best epoch | seconds |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {g['hidden']} | {g['lr']} | {100 * g['val_MRR']:.1f} | {g['epoch']} | "
            f"{g['seconds']:.0f} |"
            for g in report["grid"]
        ]
    for key, run in report["runs"].items():
        mode, test = key.split("/")
        first = next(iter(run["metrics"].values()))
        fraction = report.get("protocol", {}).get("in_domain")
        where = (
            (
                f"models trained in-domain on {100 * fraction:.0f}% of its questions, "
                f"evaluated on the other {first['n']}"
            )
            if fraction
            else f"models trained on {run['trained_on']} ({first['n']} questions)"
        )
        lines += [
            "",
            f"**{test}**, labels `{mode}`, {where}",
            "",
            "| ranker | " + " | ".join(METRICS) + " |",
            "|---|" + "---|" * len(METRICS),
        ]
        best = {m: max(v[m] for v in run["metrics"].values()) for m in METRICS}
        for label, m in run["metrics"].items():
            cells = [
                (f"**{100 * m[x]:.1f}**" if m[x] == best[x] else f"{100 * m[x]:.1f}")
                for x in METRICS
            ]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for mode, tests in report["tests"].items():
        lines += [
            "",
            f"Paired tests, labels `{mode}` (bootstrap: mean difference in points, "
            "95% interval, one-sided p; McNemar: questions only the first / only the "
            "second gets PR@10, two-sided p):",
            "",
            "| set | claim | metric | diff | 95% CI | p |",
            "|---|---|---|---|---|---|",
        ]
        for t in tests:
            if "low" in t:
                lines.append(
                    f"| {t['set']} | {t['claim']} | {t['metric']} | "
                    f"{100 * t['diff']:+.1f} | [{100 * t['low']:+.1f}, "
                    f"{100 * t['high']:+.1f}] | {t['p']:.3f} |"
                )
            else:
                lines.append(
                    f"| {t['set']} | {t['claim']} | {t['metric']} | "
                    f"{int(t['diff']):+d} q | | {t['p']:.3f} |"
                )
    times = report["training"]
    if times:
        lines += [
            "",
            "| training run | seconds | best epoch | train / val questions |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {k} | {v['seconds']:.1f} | {v['best_epoch']} | {v['n_train']} / {v['n_val']} |"
            for k, v in times.items()
        ]
    return "\n".join(lines) + "\n"


def _rl_vs_base(report: dict[str, Any]) -> str:
    """How often G-RAG-RL beats the retriever's order on MRR (computed, not asserted)."""
    pairs = [
        (run["metrics"].get("G-RAG-RL"), run["metrics"].get("w/o reranker"))
        for run in report["runs"].values()
    ]
    pairs = [(a, b) for a, b in pairs if a and b]
    wins = sum(a["MRR"] > b["MRR"] for a, b in pairs)
    return (
        f"G-RAG-RL beats the retriever's order on MRR in {wins} of {len(pairs)} set/label "
        "runs (point estimates; paired tests in docs/grag_study.md)."
    )


#: rows whose numbers depend on the concept text (the others are shared by every run)
CONCEPT_ROWS = (UNTRAINED, "G-RAG", "G-RAG-RL", "G-RAG-RL (question-free graph)")


def _text_label(report: dict[str, Any]) -> str:
    """The run's concept text, ``+doc-paths`` when ``a_i`` left out the question's concepts."""
    protocol = report["protocol"]
    label = str(protocol.get("concept_text", "concepts"))
    return label + ("+doc-paths" if protocol.get("path_concepts") == "document" else "")


def _merged(report: dict[str, Any], extra: list[dict[str, Any]]) -> dict[str, Any]:
    """``report`` with the concept-text rows of ``extra`` runs added, each row named with its
    run's concept text (``G-RAG [concepts]``); the first report's rows get theirs too."""
    if not extra:
        return report
    merged = {**report, "runs": {}}
    for key, run in report["runs"].items():
        text = _text_label(report)
        metrics = {
            (f"{label} [{text}]" if label in CONCEPT_ROWS else label): m
            for label, m in run["metrics"].items()
        }
        for other in extra:
            other_text = _text_label(other)
            for label, m in other["runs"].get(key, {}).get("metrics", {}).items():
                if label in CONCEPT_ROWS:
                    metrics[f"{label} [{other_text}]"] = m
        merged["runs"][key] = {**run, "metrics": metrics}
    return merged


def render_summary(report: dict[str, Any], extra: list[dict[str, Any]] | None = None) -> str:
    """One compact table per label mode: every ranker x set, MRR / MHits@10 / PR@5 / PR@10;
    ``extra`` runs add their concept-text rows (:func:`_merged`)."""
    texts = ", ".join(f"`{_text_label(r)}`" for r in [report, *(extra or [])])
    wins = " ".join(
        f"[{_text_label(r)}] {_rl_vs_base(r)}" if extra else _rl_vs_base(r)
        for r in [report, *(extra or [])]
    )
    report = _merged(report, extra or [])
    lines = [
        '## G-RAG (`ranker="g-rag"`) and its baselines (`grapher-bench grag-study`)',
        "",
        f"Dense MiniLM top-{report['protocol'].get('top_n')} candidates, models trained on "
        f"another set (transfer), G-RAG rows with the {texts} concept text; MRR / "
        "MHits@10 are G-RAG's (means over a question's positives). "
        f"{wins} Method, substitutions, protocol, paired tests and "
        "training times: [docs/grag.md](grag.md).",
    ]
    modes = sorted({key.split("/")[0] for key in report["runs"]}, key=["gold", "has_answer"].index)
    for mode in modes:
        runs = {
            key.split("/")[1]: run
            for key, run in report["runs"].items()
            if key.startswith(mode + "/")
        }
        labels = list(dict.fromkeys(label for run in runs.values() for label in run["metrics"]))
        lines += [
            "",
            f"Labels `{mode}`; cells: MRR / MHits@10 / PR@5 / PR@10 (%)",
            "",
            "| ranker | " + " | ".join(runs) + " |",
            "|---|" + "---|" * len(runs),
        ]
        for label in labels:
            cells = []
            for run in runs.values():
                m = run["metrics"].get(label)
                cells.append(
                    ""
                    if m is None
                    else " / ".join(
                        f"{100 * m[x]:.1f}" for x in ("MRR", "MHits@10", "PR@5", "PR@10")
                    )
                )
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _kept(examples: list[Any], held: set[str] | None, test_side: bool = True) -> list[Any]:
    """All examples (transfer), or those of the held-out (``test_side``) / training questions."""
    if held is None:
        return examples
    return [e for e in examples if (e.query_id in held) == test_side]


def held_out(query_ids: list[str], train_fraction: float, seed: int = 0) -> set[str]:
    """The questions an in-domain run evaluates on: a seeded shuffle of the set's question ids,
    the first ``train_fraction`` for training, the rest returned (held out by question)."""
    import random

    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"--in-domain must be a fraction in (0, 1), got {train_fraction!r}")
    order = list(query_ids)
    random.Random(seed).shuffle(order)
    return set(order[int(train_fraction * len(order)) :])


def run_compare(args: argparse.Namespace) -> int:
    """Paired bootstrap (MRR, MHits@10) and McNemar (PR@10) of the same rows of two runs on
    the same questions (runs with the same sets, limits and labels)."""
    import json

    from grapher_bench.grag.bench import mcnemar, paired_bootstrap

    first, second = (json.loads(p.read_text()) for p in (args.a, args.b))
    name_a, name_b = args.names.split(",")
    lines = [
        f"| labels | set | row | metric | {name_a} | {name_b} | diff | 95% CI | p |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for mode, tests in first.items():
        for test, by_label in tests.items():
            other = second.get(mode, {}).get(test, {})
            for row in [r for r in args.rows.split(",") if r in by_label and r in other]:
                a, b = by_label[row], other[row]
                if len(a) != len(b):
                    raise ValueError(
                        f"{mode}/{test}/{row}: {len(a)} vs {len(b)} questions; "
                        "the runs must use the same questions"
                    )
                for metric in ("MRR", "MHits@10"):
                    x, y = [r[metric] for r in a], [r[metric] for r in b]
                    t = paired_bootstrap(x, y)
                    lines.append(
                        f"| {mode} | {test} | {row} | {metric} | "
                        f"{100 * np.mean(x):.1f} | {100 * np.mean(y):.1f} | "
                        f"{100 * t['diff']:+.1f} | [{100 * t['low']:+.1f}, "
                        f"{100 * t['high']:+.1f}] | {t['p']:.3f} |"
                    )
                hits = mcnemar([r["PR@10"] for r in a], [r["PR@10"] for r in b])
                lines.append(
                    f"| {mode} | {test} | {row} | PR@10 McNemar | "
                    f"{100 * np.mean([r['PR@10'] for r in a]):.1f} | "
                    f"{100 * np.mean([r['PR@10'] for r in b]):.1f} | "
                    f"{hits['only_a'] - hits['only_b']:+d} q | | {hits['p']:.3f} |"
                )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.docs:
        _write_markers(args.docs, text, args.markers)
    return 0


def _write_markers(doc: Path, body: str, name: str = "grag") -> None:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = doc.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise ValueError(f"{doc} lacks the markers {start} ... {end}")
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    doc.write_text(f"{before}{start}\n{body.strip()}\n{end}{after}", encoding="utf-8")


def _ship(qs: Any, args: argparse.Namespace, hidden: int, lr: float) -> None:
    from grapher_bench.grag.bench import examples_for
    from grapher_core.embeddings import default_embedder
    from grapher_core.learned.grag.checkpoint import GRAG, GRAGConfig
    from grapher_core.learned.grag.model import GRAGSpec
    from grapher_core.learned.grag.train import train_grag

    examples = examples_for(qs, args.concept_text, "question", "gold")
    spec = GRAGSpec(hidden=hidden, dropout=args.dropout)
    started = time.perf_counter()
    # every epoch is scored and the best on validation kept (the untrained network included):
    # with the study's patience the run ends while epoch 0 still leads, before the epoch the
    # shipped checkpoint was chosen at
    loop = _loop_config("pairwise", args, lr, patience=args.epochs)
    result = train_grag(examples, spec, loop)
    config = GRAGConfig(
        spec=spec,
        embedding_model=default_embedder().name,
        embedding_dim=spec.embedding_dim,
        text=args.concept_text,
        graph="question",
        loss="pairwise",
        paths=args.path_concepts,
        training={
            "dataset": qs.name,
            "labels": "gold",
            "retriever": "dense",
            "top_n": args.top_n,
            "epochs": args.epochs,
            "lr": lr,
            "best_epoch": result.best_epoch,
            "seed": loop.seed,
            "seconds": round(time.perf_counter() - started, 1),
            "n_train": result.n_train,
            "n_val": result.n_val,
        },
        metrics={"validation": result.best_metrics},
    )
    GRAG.save(result.model, config, args.ship)
    _log(f"shipped checkpoint -> {args.ship} (val {result.best_metrics})")


def run_latency(args: argparse.Namespace) -> int:
    """Median rerank time of ``GraphReranker(ranker="g-rag")`` per text mode and size: the
    first call on a question (cold: its concepts may be new to the memo) and a repeat (warm)."""
    from dataclasses import replace

    from grapher_bench.cache import CachedEmbedder, EmbeddingCache
    from grapher_bench.data import default_benchmarks_root, load_dataset
    from grapher_bench.grag.data import parse_cached
    from grapher_bench.runner import prepare_candidates
    from grapher_core.embeddings import default_embedder
    from grapher_core.enrich.concepts import encode_graph
    from grapher_core.rerank import GraphReranker

    root = args.benchmarks or default_benchmarks_root()
    dataset = load_dataset(root / args.dataset, limit=args.queries + 1)
    sizes = [int(s) for s in args.sizes.split(",")]
    embedder = CachedEmbedder(default_embedder(), EmbeddingCache(), progress=False)
    metadata = [dict(o.metadata) for o in dataset.corpus]
    graphs = parse_cached([o.text for o in dataset.corpus])
    for meta, graph in zip(metadata, graphs, strict=True):
        meta["concepts"] = encode_graph(graph)
    candidates, vectors = prepare_candidates(
        dataset, "dense", metadata, embedder, max(sizes), progress=False
    )
    print(
        "| text mode | candidates | questions | cold median ms | warm median ms |\n"
        "|---|---|---|---|---|"
    )
    for text in ("plain", "fast", "concepts"):
        reranker = GraphReranker([], ranker="g-rag", text=text, explain=0)
        warm_up = dataset.queries[-1]  # model load, spaCy, first batch: not timed
        reranker.rerank(candidates[-1][:10], query=warm_up.text, query_embedding=vectors[-1])
        n = args.queries if text != "concepts" else min(args.queries, args.queries_concepts)
        for size in sizes:
            cold: list[float] = []
            warm: list[float] = []
            for k, q in enumerate(dataset.queries[:n]):
                chosen = [replace(c) for c in candidates[k][:size]]
                for times in (cold, warm):
                    started = time.perf_counter()
                    reranker.rerank(chosen, query=q.text, query_embedding=vectors[k])
                    times.append(1000 * (time.perf_counter() - started))
            print(
                f"| {text} | {size} | {n} | {np.median(cold):.0f} | {np.median(warm):.0f} |",
                flush=True,
            )
    return 0
