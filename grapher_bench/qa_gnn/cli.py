"""``grapher-bench qagnn-train`` and ``grapher-bench qagnn-eval``: the query-aware GNN's training
and its evaluation protocol (docs/qa_gnn.md).

Protocol (reduced for 2 shared CPU cores, stated in the doc): dense MiniLM retriever, top-50
candidates, candidate graph = chunk adjacency + the paper's semantic edges. Transfer between
hotpotqa_sentences and 2wikimultihopqa_sentences (train on one, test on the other) and k-fold
cross-validation by query within each; squad_chunks is evaluated with the model trained on both
sentence sets (the shipped checkpoint's recipe). Alg. 9's alpha is tuned on the training queries
only. Never the held-out data. Beside qa-gnn every part reports ``position-prior`` (a
logistic regression on dense score and "first sentence of its paragraph", fitted on the same
training queries), the trivial baseline that explained its one significant gain, and tests qa-gnn
against it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from grapher_bench.cli import int_argument, non_negative_int, positive_int
from grapher_core.cli.arguments import output_argument
from grapher_core.errors import ConfigError

__all__ = ["register"]

EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
ALPHAS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
PRIOR = "position-prior"
BUCKET_ROWS = ("dense", "qa-adjust", "qa-gnn")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def register(subparsers: Any) -> None:
    train = subparsers.add_parser(
        "qagnn-train",
        help="train the query-aware GNN (two stages + score fusion)",
        description="Train ranker='qa-gnn' on benchmark folders of chunked documents.",
    )
    train.add_argument("--data", action="append", required=True, metavar="DIR")
    output_argument(train, "--out", type=Path, required=True, help="checkpoint stem")
    _common(train)
    train.set_defaults(func=run_train)
    evaluate = subparsers.add_parser(
        "qagnn-eval",
        help="query-aware GNN protocol: transfer, k-fold CV, ablations, latency",
        description="Recall@5 / PR@5 / PR@10 of qa-gnn beside dense, qa-adjust, GCS and GAT.",
    )
    evaluate.add_argument("--root", type=Path, default=None, help="benchmarks root")
    evaluate.add_argument(
        "--parts",
        default="transfer,cv,ablations,squad,latency",
        help="comma list of transfer, cv, ablations, squad, latency",
    )
    evaluate.add_argument("--folds", type=int_argument(2), default=3)
    evaluate.add_argument(
        "--ablation-train",
        default="hotpotqa_sentences",
        help="training set of the ablations (tested on the other set)",
    )
    evaluate.add_argument(
        "--variants",
        default="full,mean,no-stage1,e2e,no-centre",
        help="ablation variants to run (results are merged into ablations.json)",
    )
    output_argument(evaluate, "--out", folder=True, type=Path, default=Path("bench_out/qagnn"))
    evaluate.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="model for squad/latency (default: train on both sentence sets)",
    )
    output_argument(evaluate, "--write-doc", type=Path, default=None, metavar="MD")
    evaluate.add_argument(
        "--from-results", action="store_true", help="only rebuild the doc section from --out/*.json"
    )
    _common(evaluate)
    evaluate.set_defaults(func=run_eval)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--top-n", type=positive_int, default=50)
    parser.add_argument("--limit", type=positive_int, default=None, help="first N queries per set")
    parser.add_argument("--epochs", type=positive_int, default=8)
    parser.add_argument("--stage1-epochs", type=non_negative_int, default=4)
    parser.add_argument("--patience", type=non_negative_int, default=2)
    parser.add_argument("--seed", type=non_negative_int, default=0)


# -- pieces -----------------------------------------------------------------------------------
def _config(args: argparse.Namespace, **overrides: Any) -> Any:
    from grapher_core.learned.qa_gnn.train import QATrainConfig

    return QATrainConfig(
        epochs=args.epochs,
        stage1_epochs=args.stage1_epochs,
        patience=args.patience,
        seed=args.seed,
        device="cpu",
        **overrides,
    )


def _base_config() -> Any:
    from grapher_core.learned.qa_gnn.checkpoint import QAGNNConfig
    from grapher_core.learned.qa_gnn.model import QAGNNSpec

    return QAGNNConfig(QAGNNSpec(), EMBEDDING_MODEL, 384)


def _load(root: Path, name: str, args: argparse.Namespace) -> Any:
    from grapher_bench.qa_gnn.data import build_qa_set

    tick = time.perf_counter()
    data = build_qa_set(root / name, _base_config(), top_n=args.top_n, limit=args.limit)
    _log(
        f"{name}: {len(data.examples)} queries, {data.objects.shape[0]} candidate vectors "
        f"({time.perf_counter() - tick:.0f}s)"
    )
    return data


def per_query(examples: Sequence[Any], scores: Sequence[np.ndarray]) -> dict[str, list[float]]:
    """Recall@5, PR@5, PR@10 of every query (gold outside the candidates counts as missed)."""
    out: dict[str, list[float]] = {"R@5": [], "PR@5": [], "PR@10": []}
    for e, values in zip(examples, scores, strict=True):
        order = np.lexsort((np.arange(len(values)), -np.asarray(values)))
        top5, top10 = e.labels[order[:5]].sum(), e.labels[order[:10]].sum()
        out["R@5"].append(float(top5) / e.n_gold)
        out["PR@5"].append(float(top5 >= e.n_gold))
        out["PR@10"].append(float(top10 >= e.n_gold))
    return out


def tune_alpha(examples: Sequence[Any]) -> float:
    """Alg. 9's alpha with the best mean Recall@5 on ``examples`` (ties: the larger alpha)."""
    best = (-1.0, 1.0)
    for alpha in ALPHAS:
        scores = [alpha * e.seeds + (1 - alpha) * e.support for e in examples]
        value = float(np.mean(per_query(examples, scores)["R@5"]))
        if value >= best[0]:
            best = (value, alpha)
    return best[1]


def paired_test(
    a: Sequence[float], b: Sequence[float], rounds: int = 20000, seed: int = 0
) -> dict[str, float]:
    """Two-sided paired sign-flip permutation test on per-query differences, and Wilcoxon."""
    diff = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    observed = abs(diff.mean())
    rng = np.random.default_rng(seed)
    signs = rng.choice((-1.0, 1.0), size=(rounds, diff.size))
    p_perm = float(
        ((np.abs((signs * diff).mean(axis=1)) >= observed - 1e-12).sum() + 1) / (rounds + 1)
    )
    try:
        from scipy.stats import wilcoxon

        p_w = float(wilcoxon(diff).pvalue) if np.any(diff) else 1.0
    except (ImportError, ValueError):
        p_w = float("nan")
    return {
        "p_permutation": p_perm,
        "p_wilcoxon": p_w,
        "better": float((diff > 0).sum()),
        "worse": float((diff < 0).sum()),
    }


def _train(train_set: Any, args: argparse.Namespace, **overrides: Any) -> dict[str, Any]:
    from grapher_bench.qa_gnn.data import with_alpha
    from grapher_bench.qa_gnn.prior import fit_position_prior
    from grapher_core.learned.qa_gnn.model import QAGNNSpec
    from grapher_core.learned.qa_gnn.train import train_qa_gnn

    spec_changes = {k: overrides.pop(k) for k in ("pooling", "centre") if k in overrides}
    spec = replace(QAGNNSpec(), **spec_changes)
    alpha = tune_alpha(train_set.examples)
    examples = with_alpha(train_set.examples, alpha)
    result = train_qa_gnn(
        examples, train_set.objects, _config(args, spec=spec, **overrides), log=_log
    )
    prior = fit_position_prior(train_set.examples, train_set.candidates)
    return {"result": result, "alpha": alpha, "spec": spec, "prior": prior}


def _scores(trained: dict[str, Any], test_set: Any, extra_rankers: bool) -> dict[str, Any]:
    """Per-variant score arrays on the test set."""
    from grapher_bench.qa_gnn.data import with_alpha
    from grapher_core.learned.loop import predict
    from grapher_core.learned.qa_gnn.checkpoint import QAGNNConfig
    from grapher_core.learned.qa_gnn.ranker import fused_scores
    from grapher_core.learned.qa_gnn.train import EgoAdapter
    from grapher_core.ranking.propagation import gcs_scores

    result = trained["result"]
    examples = with_alpha(test_set.examples, trained["alpha"])
    adapter = EgoAdapter(test_set.objects, frozen_encoder=False)
    gnn = predict(result.model, adapter, examples, result.device)
    config = QAGNNConfig(trained["spec"], EMBEDDING_MODEL, 384, result.fusion, trained["alpha"])
    scores: dict[str, Any] = {
        "dense": [e.seeds for e in examples],
        "qa-adjust": [e.adjusted for e in examples],
        "qa-gnn (gnn only)": gnn,
        "qa-gnn": [
            fused_scores(config, e.seeds, e.adjusted, g) for e, g in zip(examples, gnn, strict=True)
        ],
    }
    if extra_rankers:
        scores["gcs"] = [
            gcs_scores(g.adjacency, e.seeds) for e, g in zip(examples, test_set.graphs, strict=True)
        ]
        scores["gat (shipped)"] = _gat_scores(test_set, examples)
    if trained.get("prior") is not None:
        scores["position-prior"] = prior_scores(trained["prior"], test_set)
    return scores


def prior_scores(prior: Any, test_set: Any) -> list[np.ndarray]:
    """The fitted position prior's scores on every test query (its candidates' chunk index)."""
    return [
        prior.scores(e.seeds, cands)
        for e, cands in zip(test_set.examples, test_set.candidates, strict=True)
    ]


def _gat_scores(test_set: Any, examples: Sequence[Any]) -> list[np.ndarray]:
    from grapher_core.learned.gat.ranker import GATRanker
    from grapher_core.ranking.base import RankContext

    ranker = GATRanker()
    out = []
    for e, graph, cands in zip(examples, test_set.graphs, test_set.candidates, strict=True):
        out.append(ranker.rank(graph, e.seeds, RankContext(cands, query_embedding=e.query)))
    return out


def summarize(test_set: Any, examples: Sequence[Any], scores: dict[str, Any]) -> dict[str, Any]:
    """Mean metrics, paired tests against dense (every ranker) and of qa-gnn against the
    position prior (``tests_vs_prior``), and the complexity buckets."""
    rows = {name: per_query(examples, s) for name, s in scores.items()}
    out: dict[str, Any] = {
        "n": len(examples),
        "metrics": {},
        "buckets": {},
        "tests": {},
        "tests_vs_prior": {},
    }
    for name, row in rows.items():
        out["metrics"][name] = {k: float(np.mean(v)) for k, v in row.items()}
    for name in rows:
        if name != "dense":
            out["tests"][name] = paired_test(rows["dense"]["R@5"], rows[name]["R@5"])
    has_prior = PRIOR in rows
    if has_prior and "qa-gnn" in rows:
        out["tests_vs_prior"]["qa-gnn"] = paired_test(rows[PRIOR]["R@5"], rows["qa-gnn"]["R@5"])
    bucket_rows = ("dense", "qa-adjust", "qa-gnn", PRIOR) if has_prior else BUCKET_ROWS
    keys = sorted({k for b in test_set.buckets for k in b})
    for key in keys:
        for value in sorted({b[key] for b in test_set.buckets if key in b}):
            pick = [i for i, b in enumerate(test_set.buckets) if b.get(key) == value]
            if len(pick) < 5:
                continue
            bucket: dict[str, Any] = {
                "n": len(pick),
                **{
                    name: float(np.mean([rows[name]["R@5"][i] for i in pick]))
                    for name in bucket_rows
                },
                "test": paired_test(
                    [rows["dense"]["R@5"][i] for i in pick],
                    [rows["qa-gnn"]["R@5"][i] for i in pick],
                ),
            }
            if has_prior:
                bucket["test_vs_prior"] = paired_test(
                    [rows[PRIOR]["R@5"][i] for i in pick],
                    [rows["qa-gnn"]["R@5"][i] for i in pick],
                )
            out["buckets"][f"{key}={value}"] = bucket
    out["per_query_R@5"] = {name: row["R@5"] for name, row in rows.items()}
    return out


def cv_folds(n: int, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) query indices of each fold: one seeded permutation split ``folds`` ways."""
    if not 2 <= folds <= n:
        raise ConfigError(f"need 2 <= folds <= number of queries ({n}), got {folds}")
    order = np.random.default_rng(seed).permutation(n)
    return [(np.setdiff1d(order, test), test) for test in np.array_split(order, folds)]


def _fold_logger(name: str, folds: int) -> Callable[[int], None]:
    return lambda k: _log(f"{name}: fold {k}/{folds} done")


def cross_validate(
    data: Any,
    folds: int,
    seed: int,
    train: Callable[[Any], dict[str, Any]],
    score: Callable[[dict[str, Any], Any], dict[str, Any]],
    log: Callable[[int], None] | None = None,
) -> tuple[dict[str, list[Any]], list[dict[str, Any]]]:
    """Every ranker's scores for every query, each from the run trained on the other folds
    (qa-gnn, alpha and the position prior alike), and the runs' timings."""
    from grapher_bench.qa_gnn.data import subset

    merged: dict[str, list[Any]] = {}
    timings = []
    for k, (train_idx, test_idx) in enumerate(cv_folds(len(data.examples), folds, seed)):
        trained = train(subset(data, train_idx.tolist()))
        scores = score(trained, subset(data, test_idx.tolist()))
        for variant, values in scores.items():
            column = merged.setdefault(variant, [None] * len(data.examples))
            for i, v in zip(test_idx, values, strict=True):
                column[int(i)] = v
        if "result" in trained:
            timings.append(_timing(trained))
        if log is not None:
            log(k + 1)
    return merged, timings


def _timing(trained: dict[str, Any]) -> dict[str, Any]:
    r = trained["result"]
    out = {
        "alpha": trained["alpha"],
        "stage1": r.stage1,
        "stage2": r.stage2,
        "seconds": round(r.seconds, 1),
        "fusion": {"coef": list(r.fusion.coef), "intercept": r.fusion.intercept},
    }
    if trained.get("prior") is not None:
        out["prior"] = trained["prior"].as_dict()
    return out


def checkpoint_config(trained: dict[str, Any], training: dict[str, Any]) -> Any:
    """The config a trained model is saved with: what it was trained on (``training``, plus the
    retriever, graph and timing every run shares) and its stage-2 validation."""
    from grapher_core.learned.qa_gnn.checkpoint import QAGNNConfig

    result = trained["result"]
    shared = {"retriever": "dense", "graph": "adjacent+semantic", **_timing(trained)}
    return QAGNNConfig(
        trained["spec"],
        EMBEDDING_MODEL,
        384,
        result.fusion,
        trained["alpha"],
        training={**training, **shared},
        metrics={"validation": result.stage2["val"]},
    )


# -- commands ---------------------------------------------------------------------------------
def run_train(args: argparse.Namespace) -> int:
    from grapher_bench.qa_gnn.data import merge_sets
    from grapher_core.learned.qa_gnn.checkpoint import QA_GNN

    sets = [_load(Path(folder).parent, Path(folder).name, args) for folder in args.data]
    data = merge_sets(sets, "+".join(s.name for s in sets))
    trained = _train(data, args)
    training = {
        "datasets": [s.name for s in sets],
        "top_n": args.top_n,
        "queries": len(data.examples),
        "seed": args.seed,
    }
    weights, meta = QA_GNN.save(
        trained["result"].model, checkpoint_config(trained, training), args.out
    )
    print(f"wrote {weights} and {meta} ({trained['result'].seconds:.0f}s)")
    return 0


def run_eval(args: argparse.Namespace) -> int:
    from grapher_bench.data import default_benchmarks_root

    args.out.mkdir(parents=True, exist_ok=True)
    if not args.from_results:
        root = args.root or default_benchmarks_root()
        parts = {p.strip() for p in args.parts.split(",") if p.strip()}
        _run_parts(root, parts, args)
    if args.write_doc is not None:
        from grapher_bench.qa_gnn.report import write_section

        write_section(args.out, args.write_doc)
    return 0


def _save(args: argparse.Namespace, name: str, data: dict[str, Any]) -> None:
    (args.out / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")
    _log(f"wrote {args.out / (name + '.json')}")


def _run_parts(root: Path, parts: set[str], args: argparse.Namespace) -> None:
    names = ("hotpotqa_sentences", "2wikimultihopqa_sentences")
    sets = {}
    if parts & {"transfer", "cv", "ablations", "squad"}:
        sets = {name: _load(root, name, args) for name in names}
    if "transfer" in parts:
        out = {}
        for train_name, test_name in (names, names[::-1]):
            trained = _train(sets[train_name], args)
            scores = _scores(trained, sets[test_name], extra_rankers=True)
            out[f"{train_name} -> {test_name}"] = {
                **summarize(sets[test_name], sets[test_name].examples, scores),
                "training": _timing(trained),
            }
        _save(args, "transfer", out)
    if "ablations" in parts:
        train_name = args.ablation_train
        test_name = next(n for n in names if n != train_name)
        variants: dict[str, tuple[str, dict[str, Any]]] = {
            "full": ("full (stage 1 frozen, query pooling, centre)", {}),
            "mean": ("w/o query pooling (mean pool)", {"pooling": "mean"}),
            "no-stage1": ("w/o stage 1 (encoder trained in stage 2)", {"pretrain": False}),
            "e2e": ("end-to-end fine-tuning (§7.3)", {"end_to_end": True}),
            "no-centre": ("paper fusion input [g; q] (no centre)", {"centre": False}),
        }
        path = args.out / "ablations.json"
        saved = json.loads(path.read_text()) if path.is_file() else {}
        out = saved.setdefault(f"{train_name} -> {test_name}", {})
        for key in [v.strip() for v in args.variants.split(",") if v.strip()]:
            label, overrides = variants[key]
            trained = _train(sets[train_name], args, **dict(overrides))
            scores = _scores(trained, sets[test_name], extra_rankers=False)
            summary = summarize(sets[test_name], sets[test_name].examples, scores)
            out[label] = {
                "metrics": summary["metrics"],
                "tests": summary["tests"],
                "tests_vs_prior": summary["tests_vs_prior"],
                "training": _timing(trained),
            }
            _save(args, "ablations", saved)
    if "cv" in parts:
        out = {}
        for name in names:
            data = sets[name]
            merged, timings = cross_validate(
                data,
                args.folds,
                args.seed,
                lambda train_set: _train(train_set, args),
                lambda trained, test_set: _scores(trained, test_set, extra_rankers=True),
                log=_fold_logger(name, args.folds),
            )
            out[f"{name} ({args.folds}-fold CV)"] = {
                **summarize(data, data.examples, merged),
                "training": timings,
            }
        _save(args, "cv", out)
    if "squad" in parts:
        _squad(root, sets, args)
    if "latency" in parts:
        _latency(root, args)


def _shipped_model(sets: dict[str, Any], args: argparse.Namespace) -> Path:
    if args.checkpoint is not None:
        return Path(args.checkpoint)
    from grapher_bench.qa_gnn.data import merge_sets
    from grapher_core.learned.qa_gnn.checkpoint import QA_GNN, QAGNNConfig

    data = merge_sets(list(sets.values()), "sentences")
    trained = _train(data, args)
    result = trained["result"]
    config = QAGNNConfig(
        trained["spec"],
        EMBEDDING_MODEL,
        384,
        result.fusion,
        trained["alpha"],
        training={
            "datasets": list(sets),
            "top_n": args.top_n,
            "queries": len(data.examples),
            "seed": args.seed,
            **_timing(trained),
        },
        metrics={"validation": result.stage2["val"]},
    )
    stem = args.out / "qa_gnn_minilm"
    QA_GNN.save(result.model, config, stem)
    return stem


def _squad(root: Path, sets: dict[str, Any], args: argparse.Namespace) -> None:
    """squad_chunks through the real ranker (the checkpoint trained on both sentence sets); the
    position prior is fitted on both sentence sets too."""
    from grapher_bench.qa_gnn.data import build_qa_set, merge_sets
    from grapher_bench.qa_gnn.prior import fit_position_prior
    from grapher_core.learned.qa_gnn.ranker import QAGNNRanker

    stem = _shipped_model(sets, args)
    sentences = merge_sets(list(sets.values()), "sentences")
    ranker = QAGNNRanker(stem)
    data = build_qa_set(root / "squad_chunks", ranker.config, top_n=args.top_n, limit=args.limit)
    trained = {
        "result": _Result(ranker),
        "alpha": ranker.config.adjust_alpha,
        "spec": ranker.config.model,
        "prior": fit_position_prior(sentences.examples, sentences.candidates),
    }
    scores = _scores(trained, data, extra_rankers=True)
    _save(
        args,
        "squad",
        {
            "squad_chunks (model trained on both sentence sets)": summarize(
                data, data.examples, scores
            )
        },
    )


class _Result:
    """The bits of a training result ``_scores`` reads, from a loaded ranker."""

    def __init__(self, ranker: Any) -> None:
        self.model = ranker.model
        self.fusion = ranker.config.fusion


def _latency(root: Path, args: argparse.Namespace) -> None:
    """Median / p90 milliseconds of GraphReranker(ranker="qa-gnn") at 100 and 200 candidates."""
    from grapher_bench.data import load_dataset
    from grapher_bench.runner import prepare_candidates
    from grapher_core.edges.keys import AdjacentChunks
    from grapher_core.edges.semantic import SemanticKNN
    from grapher_core.learned.qa_gnn.ranker import QAGNNRanker
    from grapher_core.rerank import GraphReranker

    dataset = load_dataset(root / "hotpotqa_sentences", limit=40)
    metadata = [dict(o.metadata) for o in dataset.corpus]
    out: dict[str, Any] = {}
    ranker = QAGNNRanker(args.checkpoint)
    for n in (100, 200):
        candidates, vectors = prepare_candidates(dataset, "dense", metadata, None, n, False)
        for label, reranker in (
            ("qa-gnn", GraphReranker([AdjacentChunks()], ranker=ranker)),
            (
                "qa-adjust",
                GraphReranker([AdjacentChunks(), SemanticKNN.paper()], ranker="qa-adjust"),
            ),
        ):
            times = []
            for k, (cands, vector) in enumerate(zip(candidates, vectors, strict=True)):
                tick = time.perf_counter()
                reranker.rerank(cands, query_embedding=vector)
                if k >= 3:  # warm-up
                    times.append((time.perf_counter() - tick) * 1000)
            out[f"{label} n={n}"] = {
                "median_ms": float(np.median(times)),
                "p90_ms": float(np.percentile(times, 90)),
                "queries": len(times),
            }
            _log(f"{label} n={n}: {out[f'{label} n={n}']}")
    _save(args, "latency", out)
