"""The result of an evaluation, as one value: what ``grapher eval`` prints and writes, and what
both wrappers' ``evaluate_retriever`` return -- the same object either way.

``str(result)`` is the report a person reads (the table, the latencies and the load they were
taken under, the notes, the choice with its reason and its cost budget, PR@K by source);
:meth:`Evaluation.to_dict` the machine report (``--json``); :meth:`Evaluation.records` one flat
dict per row, for ``pandas.DataFrame(result.records())``; :meth:`Evaluation.config` the config
of the choice -- or of any row -- that every door's ``from_config`` loads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grapher_core.errors import InputError, NotFoundError
from grapher_core.evaluation.choice import Choice, config_for, row_cost
from grapher_core.evaluation.cost import Load
from grapher_core.evaluation.measure import EvaluationScope, Measurement, ReembedCost
from grapher_core.evaluation.metrics import pct
from grapher_core.evaluation.report import gain_text, render_table, report_json
from grapher_core.evaluation.sources import SourceResult, losing

__all__ = ["SOURCE_TABLE_MAX", "Evaluation"]

SOURCE_TABLE_MAX = 25
"""More sources than this: only those below the retriever are listed."""


@dataclass(frozen=True)
class Evaluation:
    """One evaluation: the rows (the retriever's order first), the choice, what each row
    costs and the load it was timed under, the rerankers' notes (message -> configurations
    that said it), what was skipped and why, PR@K by source with the sources that had no
    edge, and what was evaluated (``retriever``, ``model``, ``graph``, ``gold_key``)."""

    scope: EvaluationScope
    rows: tuple[Measurement, ...]
    choice: Choice
    cost: ReembedCost
    load: Load
    notes: Mapping[str, int]
    skipped: Mapping[str, str]
    retriever: str
    model: str
    graph: str
    gold_key: str | None = None
    sources: tuple[SourceResult, ...] | None = None
    no_edges: frozenset[str] = frozenset()
    remarks: tuple[str, ...] = ()
    door: str = "GraphReranker"
    setup: tuple[str, ...] = ()
    _config: dict[str, Any] = field(default_factory=dict, repr=False)

    # -- what to deploy ---------------------------------------------------------------------
    @property
    def chosen(self) -> Measurement | None:
        """The recommended row (``None``: keep the retriever's order)."""
        return self.choice.row

    def row(self, name: str) -> Measurement:
        """The row labelled ``name`` (``"retriever"`` or a configuration's label)."""
        for row in self.rows:
            if row.name == name:
                return row
        raise NotFoundError(
            f"no row {name!r} in this evaluation; rows: {', '.join(r.name for r in self.rows)}"
        )

    def config(self, name: str | None = None) -> dict[str, Any]:
        """The config of the choice (default), or of the row labelled ``name``: what
        ``GraphReranker.from_config`` and both wrappers' ``from_config`` load."""
        if name is None:
            return dict(self._config)
        row = self.row(name)
        why = f"the row {name!r} of an evaluation (not necessarily its choice)"
        picked = Choice(row if row.setting is not None else None, self.choice.k, None, why)
        return config_for(picked, self.rows, self.scope)

    def write_config(self, path: str | Path, name: str | None = None) -> Path:
        """Write :meth:`config` (checked by the loader first) to ``path``."""
        from grapher_core.ranking.config import write_config

        write_config(Path(path), self.config(name))
        return Path(path)

    # -- what to read -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The machine report (``grapher eval --json``)."""
        report = report_json(
            self.rows,
            self.scope,
            config=self.config(),
            choice=self.choice,
            model=self.model,
            graph=self.graph,
            skipped=self.skipped,
            cost=self.cost,
            sources=None if self.sources is None else [r.to_dict() for r in self.sources],
        )
        report.update(
            retriever=self.retriever,
            gold_key=self.gold_key,
            timing=self.load.to_dict(),
            cost_budget_ms=self.choice.budget_ms,
            cost_budget=self.choice.budget,
            over_budget=dict(self.choice.over_budget),
            cost_note=self.choice.cost_note,
            sources_without_edges=sorted(self.no_edges),
            notes=dict(self.notes),
        )
        return report

    def write_json(self, path: str | Path) -> Path:
        try:
            Path(path).write_text(
                json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
        except OSError as error:
            raise InputError(f"{path}: cannot write ({error.strerror or error})") from None
        return Path(path)

    def records(self) -> list[dict[str, Any]]:
        """One flat dict per row (``pandas.DataFrame(result.records())``): the configuration,
        every metric, the latency and cost per query, and the mark the table gives it."""
        out = []
        for row in self.rows:
            setting = row.setting
            latency = row.latency()
            out.append(
                {
                    "name": row.name,
                    "ranker": "retriever" if setting is None else setting.ranker,
                    "alpha": None if setting is None else setting.alpha,
                    "seeds": None if setting is None else setting.seeds,
                    "graph": None if setting is None else setting.graph,
                    **row.metrics(self.scope.ks),
                    "ms_p50": None if latency is None else latency["median"],
                    "ms_per_query": row_cost(row, self.cost),
                    "chosen": row is self.choice.row,
                    "default": row is self.choice.default,
                    "warned": row.name in self.choice.excluded,
                    "over_budget": row.name in self.choice.over_budget,
                }
            )
        return out

    def table(self) -> str:
        """The table alone."""
        return render_table(self.rows, self.scope.ks, self.choice, self.cost)

    def __str__(self) -> str:
        return "\n".join([*self.setup, *self.lines()])

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # IPython / Jupyter
        printer.text(str(self))

    def lines(self) -> list[str]:
        """The report as the command prints it after its setup lines."""
        lines = ["", self.table(), *_latency_lines(self)]
        base = self.rows[0]
        lines.append(
            f"\ngold among the {self.scope.top_n} candidates: "
            f"{base.gold_at(self.scope.top_n):.1%} (no reranking goes above it)"
        )
        for message, count in self.notes.items():
            lines.append(f"note ({count} configuration{'s' if count > 1 else ''}): {message}")
        lines += list(self.remarks)
        for label, warning in self.choice.excluded.items():
            lines.append(
                f"not chosen: {label}: its ranker warned that it does not fit: {_first(warning)}"
            )
        lines += _choice_lines(self.choice, base, self.scope.ks)
        return lines + _source_lines(self)


def _first(message: str) -> str:
    """A warning's first sentence, for a one-line mention."""
    return message.split(". ")[0].rstrip(".") + "."


def _latency_lines(result: Evaluation) -> list[str]:
    """What the two latency columns mean, under which load, and how a wrapper avoids
    re-embedding."""
    cost, top_n = result.cost, result.scope.top_n
    lines = [
        "\nms p50: the median rerank call with the candidates' vectors at hand (or, when the "
        "retriever hands none, embedding them as the deployed wrapper does); ms re-embed: what "
        "a wrapper pays per query when its store does not hand the vectors back",
        f"timing: {result.load.text()}",
    ]
    if not cost.labels or not cost.ms:
        return lines
    lines.append(
        f"re-embedding the {top_n} candidates' texts costs {cost.ms:,.0f} ms per query "
        f"with the evaluation's model, for {len(cost.labels)} configuration"
        f"{'s' if len(cost.labels) > 1 else ''} whose ranker or graph reads vectors"
    )
    lines.append(
        "to avoid it, hand the store's vectors back: LangChain: GraphERRetriever over an "
        "InMemoryVectorStore or Chroma store embedded with the reranker's model; LlamaIndex: "
        "GraphERPostprocessor(vector_store=index.vector_store)"
    )
    return lines


def _choice_lines(choice: Choice, base: Measurement, ks: Sequence[int]) -> list[str]:
    lines = [f"\nchoice on PR@{choice.k}: {choice.reason}", f"cost: {choice.budget}"]
    if choice.over_budget:
        over = ", ".join(f"{name} ({ms:,.2f} ms)" for name, ms in choice.over_budget.items())
        lines[-1] += f"; above it: {over}"
    if choice.cost_note is not None:
        lines.append(f"set aside for cost: {choice.cost_note}")
    if choice.hint is not None:
        lines.append(f"more questions: {choice.hint}")
    if choice.row is not None:
        lines.append(f"best: {choice.row.name} ({gain_text(choice.row, base, ks, choice.k)})")
    return lines


def _source_lines(result: Evaluation) -> list[str]:
    """PR@K by source for the recommended row (the default when the advice is to keep the
    retriever's order), each source without any edge said so, and every source where the row
    is below the retriever named."""
    choice, results = result.choice, result.sources
    row = choice.row if choice.row is not None else choice.default
    if results is None or row is None:
        return []
    k = choice.k
    who = "chosen" if row is choice.row else "default"
    lines: list[str] = []
    if len(results) <= SOURCE_TABLE_MAX:
        lines.append(
            f"\nPR@{k} by source (retriever -> {who}; a question counts in each source of "
            "its gold):"
        )
        width = max(len(r.source) for r in results)
        for r in results:
            flat = (
                "  no edges: the graph cannot move anything here"
                if (r.source in result.no_edges)
                else ""
            )
            lines.append(
                f"  {r.source.ljust(width)}  {r.questions:>5} q  {pct(r.retriever):>5} -> "
                f"{pct(r.row):>5}  +{r.wins}/-{r.losses}{flat}"
            )
    elif result.no_edges:
        shown = ", ".join(sorted(result.no_edges)[:10])
        lines.append(f"sources with no edge in any question's graph: {shown}")
    below = losing(results)
    if not below:
        lines.append(f"no source where the {who} configuration is below the retriever on PR@{k}")
        return lines
    named = ", ".join(
        f"{r.source} ({pct(r.retriever)} -> {pct(r.row)}, -{r.losses}/+{r.wins} of {r.questions})"
        for r in below[:10]
    )
    more = f" and {len(below) - 10} more" if len(below) > 10 else ""
    lines.append(f"below the retriever on PR@{k} ({who}): {named}{more}")
    return lines
