"""Type translation between LlamaIndex nodes and the core's candidates, and nothing else.

LlamaIndex node parsers record ``PREVIOUS`` / ``NEXT`` / ``SOURCE`` relationships on every
chunk, and those survive a vector-store round trip. The wrapper turns them into two reserved
metadata fields on the :class:`~grapher_core.Candidate` (never on the user's node):

* :data:`ADJACENT_FIELD` -- the ids of the previous and next chunks, read by
  ``ForeignKeys(field=ADJACENT_FIELD, kind="contextual")`` (:func:`relationship_proximity`),
  so chunk adjacency works with zero metadata configuration;
* :data:`SOURCE_FIELD` -- the id of the source document (``ref_doc_id``), one of the document
  fields zero-config detection reads (:data:`grapher_core.edges.detect.DOC_FIELDS`): a chunk's
  ``chunk_index`` / ``start_index`` is then read within it when no relationship states the order,
  and chunks of one document without any order get the fix named
  (:func:`grapher_core.edges.detect.missing_order_hint`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    RelatedNodeInfo,
)

from grapher_core import Candidate, ForeignKeys, RankedCandidate
from grapher_core.conventions import EDGES_KEY, GRAPHER_SCORE_KEY, RETRIEVAL_SCORE_KEY
from grapher_core.edges.detect import SOURCE_FIELD
from grapher_core.errors import InputTypeError

__all__ = [
    "ADJACENT_FIELD",
    "RETRIEVAL_SCORE_KEY",
    "SOURCE_FIELD",
    "candidate_from_node",
    "candidates_from_nodes",
    "node_from_ranked",
    "relationship_proximity",
]

ADJACENT_FIELD = "_grapher_adjacent"
# The key SentenceTransformerRerank uses for the same purpose.


def relationship_proximity(weight: float = 1.0) -> ForeignKeys:
    """Contextual edges between chunks that LlamaIndex marked as PREVIOUS / NEXT of each other."""
    return ForeignKeys(field=ADJACENT_FIELD, kind="contextual", weight=weight, symmetric=True)


def _related_ids(relation: Any) -> list[str]:
    """Node ids of one relationship entry; malformed entries give none (never an error)."""
    if isinstance(relation, RelatedNodeInfo):
        return [relation.node_id] if relation.node_id else []
    if isinstance(relation, list):
        return [r.node_id for r in relation if isinstance(r, RelatedNodeInfo) and r.node_id]
    return []


def candidate_from_node(item: NodeWithScore) -> Candidate:
    """One :class:`Candidate` from a retrieved node: id, text, score, metadata, embedding.

    The node's metadata is copied (the candidate is read-only anyway) and the reserved
    relationship fields are added to the copy when the node has relationships.
    """
    if not isinstance(item, NodeWithScore):
        raise InputTypeError(
            f"GraphERPostprocessor expects NodeWithScore items, got {type(item).__name__}"
        )
    node: BaseNode = item.node
    metadata: dict[str, Any] = dict(node.metadata)
    relationships = node.relationships
    if relationships:
        adjacent = _related_ids(relationships.get(NodeRelationship.PREVIOUS))
        adjacent += _related_ids(relationships.get(NodeRelationship.NEXT))
        if adjacent:
            metadata[ADJACENT_FIELD] = adjacent
        source = _related_ids(relationships.get(NodeRelationship.SOURCE))
        if source:
            metadata[SOURCE_FIELD] = source[0]
    embedding = None if node.embedding is None else np.asarray(node.embedding, dtype=np.float32)
    return Candidate(
        id=node.node_id,
        text=node.get_content(metadata_mode=MetadataMode.NONE),
        score=item.score,
        metadata=metadata,
        embedding=embedding,
    )


def candidates_from_nodes(nodes: Sequence[NodeWithScore]) -> list[Candidate]:
    """Candidates in the retriever's order (the order matters when no node has a score)."""
    return [candidate_from_node(item) for item in nodes]


def node_from_ranked(
    ranked: RankedCandidate,
    original: NodeWithScore,
    *,
    keep_retrieval_score: bool = False,
    edges: Mapping[str, int] | None = None,
) -> NodeWithScore:
    """A new ``NodeWithScore`` with the graph score, on a copy of the original node.

    ``NodeWithScore.score`` is the relevance on the documented scale
    (:mod:`grapher_core.ranking.calibration`), so ``similarity_cutoff`` thresholds keep their
    meaning;
    the raw ranker score is ``metadata["grapher_score"]`` and, when given, the graph's edge
    count per kind ``metadata["grapher_edges"]`` (both kept out of embedding/LLM text).

    The copy has its own metadata dict, relationship dict and excluded-key lists, so neither
    this postprocessor nor a later one can change the caller's nodes through it.
    """
    node = original.node
    metadata = dict(node.metadata)
    if keep_retrieval_score:
        metadata[RETRIEVAL_SCORE_KEY] = original.score
    metadata[GRAPHER_SCORE_KEY] = ranked.score
    added = [GRAPHER_SCORE_KEY]
    if edges is not None:
        metadata[EDGES_KEY] = dict(edges)
        added.append(EDGES_KEY)
    copied = node.model_copy(
        update={
            "metadata": metadata,
            "relationships": dict(node.relationships),
            "excluded_embed_metadata_keys": _with_keys(node.excluded_embed_metadata_keys, added),
            "excluded_llm_metadata_keys": _with_keys(node.excluded_llm_metadata_keys, added),
        }
    )
    score = ranked.score if ranked.relevance is None else ranked.relevance
    return NodeWithScore(node=copied, score=score)


def _with_keys(keys: Sequence[str], added: Sequence[str]) -> list[str]:
    return list(keys) + [k for k in added if k not in keys]
