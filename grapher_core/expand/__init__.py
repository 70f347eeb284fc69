"""Expansion beyond the candidate list, and graph-shaped context for the prompt.

* :class:`NeighbourSource` / :class:`InMemorySource`: fetch objects by link keys, batched;
* :class:`GraphExpander` / :class:`ExpandingReranker`: GRAG-style k-hop ego-graph expansion of
  the top candidates, seed scores from query similarity, optional query-aware pruning, then
  any ranker on the enlarged set;
* :func:`text_view` / :func:`format_graph_context`: the final objects as a BFS tree from the
  seeds plus the extra edges (GRAG's text view).

See docs/expansion.md.
"""

from grapher_core.expand.expansion import (
    DEFAULT_BUDGET,
    DEFAULT_HOPS,
    DEFAULT_SEEDS,
    ExpandingReranker,
    ExpansionResult,
    GraphExpander,
    linkable,
)
from grapher_core.expand.source import InMemorySource, NeighbourSource, check_keys, field_values
from grapher_core.expand.textview import TextView, TextViewNode, format_graph_context, text_view

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_HOPS",
    "DEFAULT_SEEDS",
    "ExpandingReranker",
    "ExpansionResult",
    "GraphExpander",
    "InMemorySource",
    "NeighbourSource",
    "TextView",
    "TextViewNode",
    "check_keys",
    "field_values",
    "format_graph_context",
    "linkable",
    "text_view",
]
