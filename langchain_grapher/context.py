"""Graph-shaped context for a LangChain prompt: GRAG's text view as a ``format_docs`` runnable.

>>> format_docs = graph_context_formatter([ForeignKeys("mentions", target_field="title")])
>>> chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt

The documents (best first, as a retriever or :class:`~langchain_grapher.GraphERReranker`
returns them) are rendered as a tree grown from the first ``seeds`` documents along their links,
plus the links the tree leaves out -- see :mod:`grapher_core.expand.textview`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from grapher_core.expand.textview import format_graph_context
from langchain_grapher.convert import candidates_from_documents

__all__ = ["format_documents_as_graph", "graph_context_formatter"]


def format_documents_as_graph(documents: Sequence[Document], proximities: Sequence[Any], *,
                              seeds: int = 3, max_chars: int | None = 400,
                              max_depth: int | None = None) -> str:
    """The documents as a hierarchical description (a plain function, for custom chains)."""
    candidates = candidates_from_documents(list(documents))
    return format_graph_context(candidates, proximities, seeds=seeds, max_chars=max_chars,
                                max_depth=max_depth)


def graph_context_formatter(proximities: Sequence[Any], *, seeds: int = 3,
                            max_chars: int | None = 400,
                            max_depth: int | None = None) -> RunnableLambda:
    """A runnable ``list[Document] -> str`` to use where chains put ``format_docs``."""
    links = list(proximities)

    def render(documents: Sequence[Document]) -> str:
        return format_documents_as_graph(documents, links, seeds=seeds, max_chars=max_chars,
                                         max_depth=max_depth)

    return RunnableLambda(render, name="GraphContext")
