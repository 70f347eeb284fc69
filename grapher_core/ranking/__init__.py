"""How scores move along edges: the :class:`Ranker` protocol, GCS / PPR / baseline, the
registry of names, seeds from retriever scores, calibration and score adjustment."""

from grapher_core.ranking.base import (
    BaselineRanker,
    RankContext,
    Ranker,
    builds_own_graph,
    check_alpha,
    needs_embeddings,
)
from grapher_core.ranking.propagation import (
    DEFAULT_GCS_ALPHA,
    DEFAULT_PPR_ALPHA,
    GCSRanker,
    PPRRanker,
    gcs_scores,
    ppr_scores,
)
from grapher_core.ranking.registry import available_rankers, make_ranker, register_ranker

__all__ = [
    "DEFAULT_GCS_ALPHA",
    "DEFAULT_PPR_ALPHA",
    "BaselineRanker",
    "GCSRanker",
    "PPRRanker",
    "RankContext",
    "Ranker",
    "available_rankers",
    "builds_own_graph",
    "check_alpha",
    "gcs_scores",
    "make_ranker",
    "needs_embeddings",
    "ppr_scores",
    "register_ranker",
]
