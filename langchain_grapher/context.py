"""Graph-shaped context for a LangChain prompt: GRAG's text view as a ``format_docs`` runnable.

>>> format_docs = graph_context_formatter([ForeignKeys("mentions", target_field="title")])
>>> chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt

The documents (best first, as a retriever or :class:`~langchain_grapher.GraphERReranker`
returns them) are rendered from the first ``seeds`` documents along their links. Two styles:

* ``"tree"`` -- the indented forest plus the links the tree leaves out
  (:mod:`grapher_core.expand.textview`);
* ``"relations"`` -- GRAG's hierarchical description with relation text on every edge
  (``[ROOT] X.`` / ``X is connected to:`` / ``1.1 Y via t1.c1 = t2.c2.``;
  :mod:`grapher_core.expand.relview`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from grapher_core.errors import InputError
from grapher_core.expand.relview import format_relation_context
from grapher_core.expand.textview import format_graph_context
from langchain_grapher.convert import candidates_from_documents

__all__ = ["STYLES", "format_documents_as_graph", "graph_context_formatter"]

STYLES = ("tree", "relations")


def format_documents_as_graph(
    documents: Sequence[Document],
    proximities: Sequence[Any],
    *,
    seeds: int = 3,
    max_chars: int | None = 400,
    max_depth: int | None = None,
    style: str = "tree",
    max_children: int | None = None,
) -> str:
    """The documents as a hierarchical description (a plain function, for custom chains)."""
    if style not in STYLES:
        raise InputError(f"style must be one of {STYLES}, got {style!r}")
    candidates = candidates_from_documents(list(documents))
    if style == "relations":
        return format_relation_context(
            candidates, proximities, seeds=seeds, max_children=max_children, max_chars=max_chars
        )
    return format_graph_context(
        candidates, proximities, seeds=seeds, max_chars=max_chars, max_depth=max_depth
    )


def graph_context_formatter(
    proximities: Sequence[Any],
    *,
    seeds: int = 3,
    max_chars: int | None = 400,
    max_depth: int | None = None,
    style: str = "tree",
    max_children: int | None = None,
) -> RunnableLambda:
    """A runnable ``list[Document] -> str`` to use where chains put ``format_docs``."""
    if style not in STYLES:
        raise InputError(f"style must be one of {STYLES}, got {style!r}")
    links = list(proximities)

    def render(documents: Sequence[Document]) -> str:
        return format_documents_as_graph(
            documents,
            links,
            seeds=seeds,
            max_chars=max_chars,
            max_depth=max_depth,
            style=style,
            max_children=max_children,
        )

    return RunnableLambda(render, name="GraphContext")
