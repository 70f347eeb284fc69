"""GraphER core: rerank a retriever's candidates with a graph built from their metadata.

Framework-free (numpy + scipy); the LangChain and LlamaIndex packages are thin layers on top.
"""

from grapher_core.candidates import Candidate, Contribution, CorpusObject, RankedCandidate
from grapher_core.embeddings import default_model_path
from grapher_core.errors import GraphERError
from grapher_core.graph import CandidateGraph, build_graph
from grapher_core.metadata import encode_list, read_list
from grapher_core.paths import cache_root
from grapher_core.proximity import (
    AdjacentChunks,
    ForeignKeys,
    Proximity,
    SemanticKNN,
    SharedEntities,
)
from grapher_core.rankers import (
    BaselineRanker,
    GCSRanker,
    PPRRanker,
    RankContext,
    Ranker,
    gcs_scores,
    make_ranker,
    ppr_scores,
    register_ranker,
)
from grapher_core.rerank import GraphReranker

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
    "register_ranker",
]
