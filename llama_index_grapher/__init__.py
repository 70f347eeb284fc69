"""LlamaIndex integration: GraphER reranking as a node postprocessor, enrichment as extractors.

>>> index.as_query_engine(node_postprocessors=[GraphERPostprocessor(top_n=5)])

Everything that ranks lives in :mod:`grapher_core`; this package only translates types.
"""

try:  # the framework this layer translates to: say which extra brings it, not a bare error
    import llama_index.core  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised in a subprocess by the tests
    from grapher_core.errors import MissingDependencyError

    raise MissingDependencyError(
        f"llama_index_grapher needs llama-index: pip install 'grapher-rerank[llamaindex]' ({error})"
    ) from error

from llama_index_grapher.context import format_nodes_as_graph
from llama_index_grapher.convert import (
    ADJACENT_FIELD,
    RETRIEVAL_SCORE_KEY,
    SOURCE_FIELD,
    candidate_from_node,
    candidates_from_nodes,
    relationship_proximity,
)
from llama_index_grapher.embeddings import GraphERLlamaEmbedding
from llama_index_grapher.evaluate import evaluate_retriever
from llama_index_grapher.extractors import (
    GraphEREntityExtractor,
    GraphERLinkExtractor,
    GraphERMentionExtractor,
)
from llama_index_grapher.postprocessor import EXPLANATION_KEY, GraphERPostprocessor
from llama_index_grapher.schema_reader import TABLE_ID_FIELD, GraphERSchemaReader
from llama_index_grapher.stores import register_store_adapter, store_capabilities

__all__ = [
    "ADJACENT_FIELD",
    "EXPLANATION_KEY",
    "RETRIEVAL_SCORE_KEY",
    "SOURCE_FIELD",
    "TABLE_ID_FIELD",
    "GraphEREntityExtractor",
    "GraphERLinkExtractor",
    "GraphERLlamaEmbedding",
    "GraphERMentionExtractor",
    "GraphERPostprocessor",
    "GraphERSchemaReader",
    "candidate_from_node",
    "candidates_from_nodes",
    "evaluate_retriever",
    "format_nodes_as_graph",
    "register_store_adapter",
    "relationship_proximity",
    "store_capabilities",
]
