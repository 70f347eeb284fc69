"""Expansion beyond the candidate list, and graph-shaped context for the prompt.

* :class:`NeighbourSource` / :class:`InMemorySource`: fetch objects by link keys, batched;
* :class:`GraphExpander` / :class:`ExpandingReranker`: GRAG-style k-hop ego-graph expansion of
  the top candidates, seed scores from query similarity, optional query-aware pruning, then
  any ranker on the enlarged set; how far it reaches, and at what cost per query (objects
  fetched, seconds, hub keys), is one :class:`Expansion` value;
* :func:`text_view` / :func:`format_graph_context`: the final objects as a BFS tree from the
  seeds plus the extra edges (GRAG's text view).

See docs/expansion.md.
"""

from grapher_core.expand.egograph import EgoGraphIndex, EgoGraphReranker, corpus_links
from grapher_core.expand.expansion import (
    DEFAULT_BUDGET,
    DEFAULT_HOPS,
    DEFAULT_MAX_FETCHED,
    DEFAULT_MAX_PER_KEY,
    DEFAULT_MAX_SECONDS,
    DEFAULT_SEEDS,
    SEED_RULES,
    ExpandingReranker,
    Expansion,
    ExpansionResult,
    GraphExpander,
    HubKeys,
)
from grapher_core.expand.links import EntityLinks, linkable
from grapher_core.expand.pruning import CosinePruner, SoftPruner
from grapher_core.expand.relations import fk_join, relation_text, relations_between
from grapher_core.expand.relview import RelationView, format_relation_context, relation_view
from grapher_core.expand.source import (
    InMemorySource,
    NeighbourSource,
    check_keys,
    check_limit,
    field_values,
)
from grapher_core.expand.textview import TextView, TextViewNode, format_graph_context, text_view

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_HOPS",
    "DEFAULT_MAX_FETCHED",
    "DEFAULT_MAX_PER_KEY",
    "DEFAULT_MAX_SECONDS",
    "DEFAULT_SEEDS",
    "SEED_RULES",
    "CosinePruner",
    "EgoGraphIndex",
    "EgoGraphReranker",
    "EntityLinks",
    "ExpandingReranker",
    "Expansion",
    "ExpansionResult",
    "GraphExpander",
    "HubKeys",
    "InMemorySource",
    "NeighbourSource",
    "RelationView",
    "SoftPruner",
    "TextView",
    "TextViewNode",
    "check_keys",
    "check_limit",
    "corpus_links",
    "field_values",
    "fk_join",
    "format_graph_context",
    "format_relation_context",
    "linkable",
    "relation_text",
    "relation_view",
    "relations_between",
    "text_view",
]
