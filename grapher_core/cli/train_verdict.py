"""What ``grapher train`` concludes from its held-out folds: the table of the retriever, the
default GCS, the shipped GAT and the fine-tuned one, the paired tests, and the decision -- the
fine-tuned model ships only when it beats both GCS and the shipped checkpoint on PR@K with the
exact McNemar test below the bar (0.05), winning more questions than it loses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grapher_core.evaluation.measure import Measurement
from grapher_core.evaluation.metrics import pct
from grapher_core.evaluation.paired import PairedComparison, compare_paired

__all__ = ["LEVEL", "NAMES", "Verdict", "decide", "held_out_json", "render"]

LEVEL = 0.05
"""The p-value a win must stay under (``--min-p`` changes it, for experiments only)."""
NAMES = {
    "retriever": "retriever (cosine)",
    "gcs": "GCS (the default)",
    "shipped": "GAT, shipped checkpoint",
    "finetuned": "GAT, fine-tuned",
}


@dataclass(frozen=True)
class Verdict:
    """The fine-tuned model against GCS and against the shipped checkpoint on PR@``k``."""

    k: int
    min_p: float
    versus_gcs: PairedComparison
    versus_shipped: PairedComparison

    @staticmethod
    def _beats(test: PairedComparison, min_p: float) -> bool:
        """More questions won than lost, and a p-value under the bar (a bar of 1 takes any
        win: for experiments, never for a decision)."""
        return test.wins > test.losses and (test.p < min_p or min_p >= 1.0)

    @property
    def ships(self) -> bool:
        return self._beats(self.versus_gcs, self.min_p) and self._beats(
            self.versus_shipped, self.min_p
        )

    def reason(self) -> str:
        """One sentence: why it ships, or why not, with the counts and p-values."""
        parts = [
            f"against {who} {_counts(test)}"
            for who, test in (("GCS", self.versus_gcs), ("the shipped GAT", self.versus_shipped))
        ]
        if self.ships:
            return f"the fine-tuned GAT beats both on PR@{self.k}: {'; '.join(parts)}"
        return (
            f"the fine-tuned GAT does not beat both GCS and the shipped GAT on PR@{self.k} "
            f"(it must win more held-out questions than it loses, McNemar p < {self.min_p:g}, "
            f"against each): {'; '.join(parts)}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "min_p": self.min_p,
            "ships": self.ships,
            f"PR@{self.k}_vs_gcs": self.versus_gcs.to_dict(),
            f"PR@{self.k}_vs_shipped": self.versus_shipped.to_dict(),
        }


def _counts(test: PairedComparison) -> str:
    return f"+{test.wins}/-{test.losses} questions, McNemar p={test.p:.2g}"


def decide(rows: Mapping[str, Measurement], k: int, min_p: float = LEVEL) -> Verdict:
    """The verdict on PR@``k`` over the pooled held-out questions."""
    mine = rows["finetuned"].perfect(k)
    return Verdict(
        k,
        min_p,
        compare_paired(mine, rows["gcs"].perfect(k)),
        compare_paired(mine, rows["shipped"].perfect(k)),
    )


def render(rows: Mapping[str, Measurement], ks: Sequence[int], k: int) -> str:
    """One line per ordering: gold@K and PR@K in percent, MRR, and the fine-tuned model's
    paired test on PR@``k`` against each of the others."""
    header = ["ordering"] + [f"gold@{q}" for q in ks] + [f"PR@{q}" for q in ks]
    header += ["MRR", f"fine-tuned vs it, PR@{k}"]
    mine = rows["finetuned"].perfect(k)
    lines = []
    for name, row in rows.items():
        metrics = row.metrics(ks)
        cells = [NAMES.get(name, name)] + [pct(metrics[f"gold@{q}"]) for q in ks]
        cells += [pct(metrics[f"PR@{q}"]) for q in ks] + [f"{metrics['MRR']:.3f}"]
        test = compare_paired(mine, row.perfect(k))
        cells.append("-" if name == "finetuned" else f"+{test.wins}/-{test.losses} p={test.p:.2g}")
        lines.append(cells)
    widths = [max(len(header[i]), *(len(line[i]) for line in lines)) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([fmt(header), "  ".join("-" * w for w in widths), *map(fmt, lines)])


def held_out_json(
    rows: Mapping[str, Measurement], ks: Sequence[int], verdict: Verdict, questions: int
) -> dict[str, Any]:
    """The held-out numbers a shipped checkpoint and its config record."""
    return {
        "held_out": "pooled over the cross-validation's held-out folds",
        "questions": questions,
        "metrics": {name: row.metrics(ks) for name, row in rows.items()},
        "decision": verdict.to_json(),
        "reason": verdict.reason(),
    }
