"""Markdown tables of `grapher-bench qagnn-eval` results (docs/qa_gnn.md, marked section).

Every table puts qa-gnn beside ``position-prior``, the trivial baseline that could explain its
gain; results written before the prior existed render with those cells empty.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grapher_bench import sections
from grapher_bench.sections import pct

__all__ = ["prior_table", "render", "write_section"]

START, END = "<!-- qagnn:start -->", "<!-- qagnn:end -->"
PRIOR = "position-prior"
MAIN_ROWS = ("dense", "qa-adjust", "gcs", "gat (shipped)", PRIOR, "qa-gnn (gnn only)", "qa-gnn")


def _rel(new: float, base: float) -> str:
    return "n/a" if base == 0 else f"{100 * (new - base) / base:+.1f} %"


def _p(test: dict[str, float] | None) -> str:
    if not test:
        return ""
    return f"{test['p_permutation']:.3g} ({int(test['better'])}↑ {int(test['worse'])}↓)"


def _vs_prior(run: dict[str, Any], name: str) -> tuple[str, str]:
    """Relative Recall@5 and paired p of ``name`` against the position prior ('' when none)."""
    metrics, test = run["metrics"], run.get("tests_vs_prior", {}).get(name)
    if PRIOR not in metrics or name not in metrics or not test:
        return "", ""
    return _rel(metrics[name]["R@5"], metrics[PRIOR]["R@5"]), _p(test)


def _main_table(runs: dict[str, Any]) -> list[str]:
    lines = [
        "| test set | ranker | Recall@5 | rel. vs dense | paired p (R@5) | PR@5 | PR@10 | "
        "rel. vs position-prior | paired p vs position-prior (R@5) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, run in runs.items():
        metrics = run["metrics"]
        base = metrics["dense"]["R@5"]
        for name in MAIN_ROWS:
            if name not in metrics:
                continue
            m = metrics[name]
            bold = "**" if name in ("qa-gnn", PRIOR) else ""
            rel_prior, p_prior = _vs_prior(run, name)
            lines.append(
                f"| {label} (n={run['n']}) | {bold}{name}{bold} | {pct(m['R@5'])} | "
                f"{'' if name == 'dense' else _rel(m['R@5'], base)} | "
                f"{_p(run['tests'].get(name))} | {pct(m['PR@5'])} | "
                f"{pct(m['PR@10'])} | {rel_prior} | {p_prior} |"
            )
    return lines


def prior_table(runs: dict[str, Any]) -> list[str]:
    """qa-gnn and the position prior side by side, with the paired test between them: the
    table a qa-gnn claim is read from (credited only where qa-gnn beats the prior)."""
    lines = [
        "| test set | n | position-prior R@5 / PR@5 / PR@10 | qa-gnn R@5 / PR@5 / PR@10 | "
        "dense R@5 | qa-gnn − prior R@5 (points) | paired p (R@5) |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, run in runs.items():
        metrics, test = run["metrics"], run.get("tests_vs_prior", {}).get("qa-gnn")
        if PRIOR not in metrics or "qa-gnn" not in metrics or not test:
            continue
        prior, gnn = metrics[PRIOR], metrics["qa-gnn"]
        lines.append(
            f"| {label} | {run['n']} | "
            + " / ".join(pct(prior[k]) for k in ("R@5", "PR@5", "PR@10"))
            + " | "
            + " / ".join(pct(gnn[k]) for k in ("R@5", "PR@5", "PR@10"))
            + f" | {pct(metrics['dense']['R@5'])} | "
            f"{100 * (gnn['R@5'] - prior['R@5']):+.1f} | {_p(test)} |"
        )
    return lines if len(lines) > 2 else []


def _bucket_table(runs: dict[str, Any]) -> list[str]:
    lines = [
        "| test set | bucket | n | dense R@5 | qa-adjust R@5 | position-prior R@5 | qa-gnn R@5 | "
        "rel. gain vs dense | paired p vs dense | paired p vs position-prior |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, run in runs.items():
        for bucket, row in run.get("buckets", {}).items():
            prior = pct(row[PRIOR]) if PRIOR in row else ""
            lines.append(
                f"| {label} | {bucket} | {row['n']} | {pct(row['dense'])} | "
                f"{pct(row['qa-adjust'])} | {prior} | {pct(row['qa-gnn'])} | "
                f"{_rel(row['qa-gnn'], row['dense'])} | {_p(row['test'])} | "
                f"{_p(row.get('test_vs_prior'))} |"
            )
    return lines


def _ablation_table(data: dict[str, Any]) -> list[str]:
    lines = [
        "| setting | variant | GNN alone R@5 | fused R@5 | fused rel. vs dense | paired p | "
        "fused PR@5 | position-prior R@5 | paired p vs position-prior | training s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for setting, variants in data.items():
        for label, run in variants.items():
            m = run["metrics"]
            prior = pct(m[PRIOR]["R@5"]) if PRIOR in m else ""
            lines.append(
                f"| {setting} | {label} | {pct(m['qa-gnn (gnn only)']['R@5'])} | "
                f"{pct(m['qa-gnn']['R@5'])} | "
                f"{_rel(m['qa-gnn']['R@5'], m['dense']['R@5'])} | "
                f"{_p(run['tests'].get('qa-gnn'))} | "
                f"{pct(m['qa-gnn']['PR@5'])} | {prior} | "
                f"{_p(run.get('tests_vs_prior', {}).get('qa-gnn'))} | "
                f"{run['training']['seconds']} |"
            )
    return lines


def _training_table(sources: dict[str, Any]) -> list[str]:
    lines = [
        "| run | alpha (Alg. 9) | stage 1 s (epoch, val AUC) | stage 2 s (epoch) | "
        "total s | fusion coef [retriever, adjusted, gnn] | position-prior coef [dense, first] |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, timing in sources.items():
        for k, t in enumerate(timing if isinstance(timing, list) else [timing]):
            s1 = t["stage1"]
            s1_text = (
                "skipped"
                if s1.get("skipped")
                else f"{s1['seconds']} ({s1['epochs']}, {s1['val_link_auc']:.3f})"
            )
            coef = ", ".join(f"{c:.2f}" for c in t["fusion"]["coef"])
            prior = (
                "[" + ", ".join(f"{c:.2f}" for c in t["prior"]["coef"]) + "]"
                if "prior" in t
                else ""
            )
            name = label if not isinstance(timing, list) else f"{label} fold {k + 1}"
            lines.append(
                f"| {name} | {t['alpha']} | {s1_text} | {t['stage2']['seconds']} "
                f"({t['stage2']['epochs']}) | {t['seconds']} | [{coef}] | {prior} |"
            )
    return lines


def render(out_dir: Path) -> str:
    """The whole section, markers included, from the JSON files present in ``out_dir``."""
    return f"{START}\n\n{_body(out_dir)}{END}\n"


def _body(out_dir: Path) -> str:
    """The section's text between its markers."""

    def read(name: str) -> dict[str, Any]:
        path = out_dir / f"{name}.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    transfer, cv, squad = read("transfer"), read("cv"), read("squad")
    ablations, latency = read("ablations"), read("latency")
    lines = ["_Written by `grapher-bench qagnn-eval --write-doc docs/qa_gnn.md`._", ""]
    runs = {**transfer, **cv, **squad}
    if runs:
        headline = prior_table(runs)
        if headline:
            lines += [
                "### qa-gnn against the position prior",
                "",
                "`position-prior`: logistic regression on the min-max scaled dense score and "
                '"first sentence of its paragraph", fitted on the same training queries as '
                "qa-gnn. qa-gnn is credited only where it beats this row.",
                "",
                *headline,
                "",
            ]
        lines += [
            "### Recall@5 (the paper's metric), PR@5, PR@10",
            "",
            "Paired test: two-sided sign-flip permutation test on per-query Recall@5 "
            "against dense (20 000 rounds), and of qa-gnn against position-prior; "
            "↑/↓ = queries better/worse.",
            "",
        ]
        lines += [*_main_table(runs), ""]
        lines += ["### By query complexity (Recall@5)", "", *_bucket_table(runs), ""]
    if ablations:
        lines += ["### Ablations", "", *_ablation_table(ablations), ""]
    timings = {
        **{k: v["training"] for k, v in transfer.items() if "training" in v},
        **{k: v["training"] for k, v in cv.items() if "training" in v},
    }
    if timings:
        lines += ["### Training (2 shared CPU cores; seconds depend on the machine's load)", ""]
        lines += [*_training_table(timings), ""]
    if latency:
        lines += [
            "### Latency (hotpotqa_sentences queries, dense top-n, one thread, "
            "shared 2-core machine; depends on its load)",
            "",
            "| ranker | candidates | median ms | p90 ms |",
            "|---|---|---|---|",
        ]
        for label, row in latency.items():
            name, n = label.split(" n=")
            lines.append(f"| {name} | {n} | {row['median_ms']:.1f} | {row['p90_ms']:.1f} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def write_section(out_dir: Path, doc: Path) -> None:
    """Render the results in ``out_dir`` into the marked section of ``doc`` (replaced, or
    appended when the markers are missing)."""
    sections.write_section(doc, START, END, _body(out_dir))
