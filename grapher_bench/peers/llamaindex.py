"""LlamaIndex's ``PrevNextNodePostprocessor`` as a peer on chunk sets (same retrieval, same
adjacency): the retriever's top ``top_k`` chunks plus their neighbours from a docstore.

Chunks become ``TextNode`` objects whose ``PREVIOUS`` / ``NEXT`` relationships come from
``doc_id`` / ``chunk_index`` -- the edges GraphER's ``AdjacentChunks`` reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.postprocessor import PrevNextNodePostprocessor
from llama_index.core.schema import NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore

from grapher_core.candidates import CorpusObject
from grapher_core.metadata import read_int

__all__ = ["PrevNextPeer"]


class PrevNextPeer:
    """``PrevNextNodePostprocessor`` (its defaults: ``num_nodes=1``, ``mode="next"``) over a
    docstore of the corpus; :meth:`rerank` returns ids in the postprocessor's order."""

    def __init__(
        self,
        corpus: Sequence[CorpusObject],
        metadata: Sequence[Mapping[str, Any]],
        *,
        top_k: int = 5,
        doc_field: str = "doc_id",
        index_field: str = "chunk_index",
        **options: Any,
    ) -> None:
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        where: dict[tuple[str, int], str] = {}
        for obj, meta in zip(corpus, metadata, strict=True):
            index = read_int(meta.get(index_field))
            if meta.get(doc_field) is not None and index is not None:
                where[(str(meta[doc_field]), index)] = obj.id
        nodes = []
        for obj, meta in zip(corpus, metadata, strict=True):
            node = TextNode(id_=obj.id, text=obj.text)
            index = read_int(meta.get(index_field))
            if meta.get(doc_field) is not None and index is not None:
                doc = str(meta[doc_field])
                for relation, k in (
                    (NodeRelationship.PREVIOUS, index - 1),
                    (NodeRelationship.NEXT, index + 1),
                ):
                    if (doc, k) in where:
                        node.relationships[relation] = RelatedNodeInfo(node_id=where[(doc, k)])
            nodes.append(node)
        self.docstore = SimpleDocumentStore()
        self.docstore.add_documents(nodes)
        self._nodes = {n.node_id: n for n in nodes}
        self.top_k = top_k
        self.postprocessor = PrevNextNodePostprocessor(docstore=self.docstore, **options)

    def rerank(self, ranked_ids: Sequence[str], scores: Sequence[float] | None = None) -> list[str]:
        """Apply the postprocessor to the first ``top_k`` retrieved ids."""
        top = list(ranked_ids[: self.top_k])
        values = [None] * len(top) if scores is None else list(scores[: self.top_k])
        nodes = [
            NodeWithScore(node=self._nodes[i], score=s) for i, s in zip(top, values, strict=True)
        ]
        return [n.node.node_id for n in self.postprocessor.postprocess_nodes(nodes)]
