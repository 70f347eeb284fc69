"""Which candidates are related: edge builders (:class:`Proximity`) and the candidate graph.

Each builder reads one kind of metadata (foreign keys, links -- between chunked pages too --,
entities, chunk positions, vectors) and returns a sparse adjacency; :func:`build_graph`
validates, weights and sums them.
"""

from grapher_core.edges.base import LinkKey, Proximity, link_value, links_to_matrix
from grapher_core.edges.entities import SharedEntities
from grapher_core.edges.graph import CandidateGraph, build_graph
from grapher_core.edges.keys import AdjacentChunks, ForeignKeys
from grapher_core.edges.links import ChunkLinks
from grapher_core.edges.semantic import SemanticKNN

__all__ = [
    "AdjacentChunks",
    "CandidateGraph",
    "ChunkLinks",
    "ForeignKeys",
    "LinkKey",
    "Proximity",
    "SemanticKNN",
    "SharedEntities",
    "build_graph",
    "link_value",
    "links_to_matrix",
]
