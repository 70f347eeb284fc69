"""One score scale for ``relevance_score``: what it means does not depend on the pool.

Every ranker's raw score stays available (``RankedCandidate.score``, ``grapher_score`` in the
wrappers' metadata); ``RankedCandidate.relevance`` (``relevance_score``) is mapped onto one
documented scale by the ranker's declared ``score_scale``:

* ``"seeds"`` (GCS, baseline): the score is already on the seed scale -- rank seeds ``1/rank``
  by default, or base scores in [0, 1] (cosine similarities with negatives at 0, LangChain
  relevance scores, LlamaIndex vector similarities) under ``seed_transform="auto"``. A
  candidate without graph support keeps exactly its seed, one with support is lifted towards
  its neighbours' scores (the paper's row-normalised GCS: never above the best of them; the
  default degree-normalised one: above it only when several strong neighbours agree). Other
  base scales (BM25) are kept as they are (>= 0). Candidates with no link to it never change a
  candidate's value, so adding unrelated candidates (e.g. with negative cosines) leaves it
  unchanged.
* ``"probability"`` (PPR): the PageRank mass times the sum of the seeds, i.e. back on the seed
  scale (the mass is shared over the pool by construction, so it moves with the pool).
* ``"logit"`` (GAT, MLP): ``sigmoid(logit)``, in (0, 1) -- a probability of relevance for
  checkpoints trained with the BCE loss, an ordered score in (0, 1) for pairwise ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from grapher_core.errors import InputError

__all__ = ["SCORE_SCALES", "relevance_scores", "score_scale"]

SCORE_SCALES: tuple[str, ...] = ("seeds", "probability", "logit")
_BY_NAME = {"ppr": "probability", "gat": "logit", "mlp": "logit"}


def score_scale(ranker: Any) -> str:
    """The ranker's declared ``score_scale`` (default by name, else ``"seeds"``)."""
    declared = getattr(ranker, "score_scale", None)
    if declared is None:
        declared = _BY_NAME.get(str(getattr(ranker, "name", "")), "seeds")
    if declared not in SCORE_SCALES:
        raise InputError(
            f"ranker {getattr(ranker, 'name', ranker)!r} declares score_scale "
            f"{declared!r}; choose one of {SCORE_SCALES}"
        )
    return str(declared)


def relevance_scores(ranker: Any, scores: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """``scores`` (the ranker's raw output) on the documented relevance scale."""
    scale = score_scale(ranker)
    if scale == "logit":
        return 1.0 / (1.0 + np.exp(-np.clip(scores, -500.0, 500.0)))
    if scale == "probability":
        return scores * float(seeds.sum())
    return scores
