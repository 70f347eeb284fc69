"""Which systems answer: a ranker as the bench names it plus a context layout, and their top K.

A system is written ``RANKER[:STYLE]``: ``RANKER`` is any row label of ``grapher-bench bench``
(``baseline``, ``gcs[mentions]``, ``gat[entities-capped]``, ``expand-gcs``, ``llm-rerank``,
``llm-rerank+gcs[mentions]``, ...), ``STYLE`` is
``flat`` (default), ``graph`` or ``relation``. Retrieval goes through
:func:`grapher_bench.runner.run_dataset`, so the top K here is exactly the top K the retrieval
tables measure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from grapher_bench.data import Dataset
from grapher_bench.enrichment import LINK_GRAPH, proximities_for
from grapher_bench.peers.rankers import is_peer, peer_graph
from grapher_bench.qa_eval.prompts import (
    CONTEXT_STYLES,
    flat_context,
    graph_context,
    relation_context,
)
from grapher_bench.runner import GRAPH_FREE_RANKERS, RankerSpec, _enriched_metadata, run_dataset
from grapher_core.candidates import Candidate
from grapher_core.errors import ConfigError

__all__ = ["Retrieved", "System", "parse_system", "ranker_spec", "render_context", "retrieve"]

_LABEL = re.compile(r"^([a-z0-9_+-]+)(?:\[([a-z0-9+_=,.-]+)\])?$")
MAX_TOP = 20  # the bench keeps the top 20 ids per query


@dataclass(frozen=True)
class System:
    """A ranker label and the layout of its context in the answer prompt."""

    ranker: str
    style: str = "flat"

    @property
    def label(self) -> str:
        return self.ranker if self.style == "flat" else f"{self.ranker} + {self.style} context"

    @property
    def spec_text(self) -> str:
        return f"{self.ranker}:{self.style}"


def parse_system(text: str) -> System:
    """``"gcs[mentions]:graph"`` -> ``System("gcs[mentions]", "graph")``."""
    ranker, _, style = text.strip().partition(":")
    style = style.strip() or "flat"
    if style not in CONTEXT_STYLES:
        raise ConfigError(f"system {text!r}: context style must be one of {CONTEXT_STYLES}")
    if not _LABEL.match(ranker.strip()):
        raise ConfigError(
            f"system {text!r}: expected RANKER[GRAPH][:STYLE], e.g. gcs[mentions]:graph"
        )
    return System(ranker.strip(), style)


def ranker_spec(label: str, task_type: str) -> RankerSpec:
    """The bench spec behind a row label (``gcs`` alone takes the task's first graph)."""
    match = _LABEL.match(label)
    if match is None:
        raise ConfigError(f"not a ranker label: {label!r}")
    name, graph = match.group(1), match.group(2)
    if is_peer(label):
        return RankerSpec(label, label, peer_graph(label, task_type))
    if name in GRAPH_FREE_RANKERS:
        return RankerSpec(label, name, "none")
    if graph is None:
        from grapher_bench.enrichment import graphs_for

        graph = graphs_for(task_type)[0]
    proximities_for(graph)  # fail early on an unknown graph
    return RankerSpec(label, name, graph)


def context_graph(spec: RankerSpec, task_type: str) -> str:
    """The graph the ``graph`` layout follows: the system's own, or the task's link graph."""
    return spec.graph if spec.graph != "none" else LINK_GRAPH[task_type]


@dataclass
class Retrieved:
    """Top-K ids per ranker label, their PR@K, and the objects needed to render contexts."""

    top: dict[str, list[list[str]]]
    perfect_recall: dict[str, list[float]]
    objects: dict[str, Candidate]
    specs: dict[str, RankerSpec]
    notes: list[str] = field(default_factory=list)  # the retrieval run's (LLM reranker counts)


def retrieve(
    dataset: Dataset,
    systems: Sequence[System],
    *,
    k: int = 10,
    retriever: str = "hybrid",
    top_n: int = 200,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
) -> Retrieved:
    """Run every distinct ranker of ``systems`` once over ``dataset`` and keep its top K."""
    if not 1 <= k <= MAX_TOP:
        raise ConfigError(f"k must be between 1 and {MAX_TOP}, got {k}")
    specs = {s.ranker: ranker_spec(s.ranker, dataset.task_type) for s in systems}
    run = run_dataset(
        dataset,
        [],
        retriever=retriever,
        ks=(k,),
        top_n=top_n,
        progress=progress,
        log=log,
        specs=list(specs.values()),
    )
    context_specs = [
        RankerSpec(g, "gcs", g)
        for g in {context_graph(s, dataset.task_type) for s in specs.values()}
    ]
    metadata = _enriched_metadata(dataset, [*specs.values(), *context_specs], [], progress)
    objects = {
        o.id: Candidate(o.id, o.text, None, meta)
        for o, meta in zip(dataset.corpus, metadata, strict=True)
    }
    top: dict[str, list[list[str]]] = {}
    recall: dict[str, list[float]] = {}
    for label in specs:
        rows = run.results[label].per_query
        top[label] = [list(rows[q.id]["top"][:k]) for q in dataset.queries]
        recall[label] = [
            float(set(q.gold) <= set(ids))
            for q, ids in zip(dataset.queries, top[label], strict=True)
        ]
    return Retrieved(top, recall, objects, specs, list(run.notes))


def render_context(
    ids: Sequence[str], objects: dict[str, Candidate], style: str, graph: str | None = None
) -> str:
    """The ``{retrieved_objects}`` text of one question for one layout."""
    items = [objects[i] for i in ids]
    if style == "flat":
        return flat_context([c.text for c in items])
    if style in ("graph", "relation"):
        if graph is None:
            raise ConfigError(f"the {style} layout needs a graph name")
        render = graph_context if style == "graph" else relation_context
        return render(items, proximities_for(graph))
    raise ConfigError(f"unknown context style {style!r}; known: {CONTEXT_STYLES}")


def describe(retrieved: Retrieved) -> dict[str, Any]:
    """Spec of every ranker (for the run's metadata file)."""
    return {label: {"ranker": s.ranker, "graph": s.graph} for label, s in retrieved.specs.items()}
