"""GraphER core: rerank a retriever's candidates with a graph built from their metadata.

Framework-free (numpy + scipy); the LangChain and LlamaIndex packages are thin layers on top.
"""

from grapher_core.allowed import register_embedding, register_proximity
from grapher_core.candidates import Candidate, Contribution, CorpusObject, RankedCandidate
from grapher_core.edges.base import Proximity
from grapher_core.edges.entities import SharedEntities
from grapher_core.edges.graph import CandidateGraph, build_graph
from grapher_core.edges.keys import AdjacentChunks, ForeignKeys
from grapher_core.edges.semantic import SemanticKNN
from grapher_core.embeddings import default_model_path
from grapher_core.errors import GraphERError
from grapher_core.metadata import encode_list, read_list
from grapher_core.ranking.base import BaselineRanker, RankContext, Ranker
from grapher_core.ranking.propagation import GCSRanker, PPRRanker, gcs_scores, ppr_scores
from grapher_core.ranking.registry import make_ranker, register_ranker
from grapher_core.rerank import GraphReranker
from grapher_core.utils.paths import cache_root

__version__ = "0.1.0"

__all__ = [
    "AdjacentChunks",
    "BaselineRanker",
    "Candidate",
    "CandidateGraph",
    "Contribution",
    "CorpusObject",
    "ForeignKeys",
    "GCSRanker",
    "GraphERError",
    "GraphReranker",
    "PPRRanker",
    "Proximity",
    "RankContext",
    "RankedCandidate",
    "Ranker",
    "SemanticKNN",
    "SharedEntities",
    "build_graph",
    "cache_root",
    "default_model_path",
    "encode_list",
    "gcs_scores",
    "make_ranker",
    "ppr_scores",
    "read_list",
    "register_embedding",
    "register_proximity",
    "register_ranker",
]
