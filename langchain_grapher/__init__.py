"""LangChain integration: GraphER as a reranking compressor, a retriever and enrichment steps.

>>> from langchain_classic.retrievers import ContextualCompressionRetriever
>>> from langchain_grapher import GraphERReranker
>>> from grapher_core import ForeignKeys
>>> retriever = ContextualCompressionRetriever(
...     base_compressor=GraphERReranker(proximities=[ForeignKeys()], top_n=5),
...     base_retriever=store.as_retriever(search_kwargs={"k": 200}))

A thin layer: types in, :mod:`grapher_core` does the work, types out.
"""

try:  # the framework this layer translates to: say which extra brings it, not a bare error
    import langchain_core  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised in a subprocess by the tests
    from grapher_core.errors import MissingDependencyError

    raise MissingDependencyError(
        f"langchain_grapher needs langchain-core: pip install 'grapher-rerank[langchain]' ({error})"
    ) from error

from langchain_grapher.context import graph_context_formatter
from langchain_grapher.convert import (
    EXPLANATION_KEY,
    RELEVANCE_SCORE_KEY,
    RETRIEVAL_SCORE_KEY,
    candidates_from_documents,
)
from langchain_grapher.embeddings import GraphEREmbeddings
from langchain_grapher.evaluate import evaluate_retriever
from langchain_grapher.neighbours import EXPANDED_KEY, VectorStoreSource
from langchain_grapher.reranker import GraphERReranker
from langchain_grapher.retriever import GraphERRetriever
from langchain_grapher.schema_loader import SQLSchemaLoader
from langchain_grapher.stores import register_store_adapter, store_capabilities
from langchain_grapher.transformers import (
    ChunkLinkTransformer,
    EntityTransformer,
    LinkTransformer,
    MentionTransformer,
)

__all__ = [
    "EXPANDED_KEY",
    "EXPLANATION_KEY",
    "RELEVANCE_SCORE_KEY",
    "RETRIEVAL_SCORE_KEY",
    "ChunkLinkTransformer",
    "EntityTransformer",
    "GraphEREmbeddings",
    "GraphERReranker",
    "GraphERRetriever",
    "LinkTransformer",
    "MentionTransformer",
    "SQLSchemaLoader",
    "VectorStoreSource",
    "candidates_from_documents",
    "evaluate_retriever",
    "graph_context_formatter",
    "register_store_adapter",
    "store_capabilities",
]
