"""Graph-shaped context for a LlamaIndex prompt: GRAG's text view of the retrieved nodes.

>>> nodes = retriever.retrieve(question)            # or a query engine's source_nodes
>>> context = format_nodes_as_graph(nodes, [ForeignKeys("foreign_keys")], style="relations")

Nodes (best first) are rendered from the first ``seeds`` nodes along their links; PREVIOUS /
NEXT relationships count as links when ``proximities`` is left out. Styles as in the LangChain
helper: ``"relations"`` (GRAG's hierarchical description with relation text on every edge,
:mod:`grapher_core.expand.relview`) or ``"tree"`` (:mod:`grapher_core.expand.textview`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import NodeWithScore

from grapher_core.errors import InputError
from grapher_core.expand.relview import format_relation_context
from grapher_core.expand.textview import format_graph_context
from llama_index_grapher.convert import candidates_from_nodes, relationship_proximity

__all__ = ["STYLES", "format_nodes_as_graph"]

STYLES = ("relations", "tree")


def format_nodes_as_graph(
    nodes: Sequence[NodeWithScore],
    proximities: Sequence[Any] | None = None,
    *,
    style: str = "relations",
    seeds: int = 3,
    max_chars: int | None = 400,
    max_depth: int | None = None,
    max_children: int | None = None,
) -> str:
    """The nodes as a hierarchical description, ready for a prompt."""
    if style not in STYLES:
        raise InputError(f"style must be one of {STYLES}, got {style!r}")
    links = [relationship_proximity()] if proximities is None else list(proximities)
    candidates = candidates_from_nodes(list(nodes))
    if style == "relations":
        return format_relation_context(
            candidates, links, seeds=seeds, max_children=max_children, max_chars=max_chars
        )
    return format_graph_context(
        candidates, links, seeds=seeds, max_chars=max_chars, max_depth=max_depth
    )
