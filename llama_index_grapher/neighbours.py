"""LlamaIndex stores as GraphER neighbour sources (expansion beyond the retrieved nodes).

>>> source = NodeSource(index.docstore)            # or a vector store with get_nodes (Chroma)
>>> expander = ExpandingReranker(GraphReranker([relationship_proximity()]), source)

Node ids (``PREVIOUS`` / ``NEXT`` relationships, foreign keys) are fetched with one
``get_nodes`` call per hop; metadata-field keys (title mentions) with one filtered
``get_nodes`` on a vector store (``IN`` filters) or a scan of a docstore's nodes. Fetched nodes
become candidates exactly as retrieved ones do (:func:`~llama_index_grapher.convert.
candidate_from_node`), relationship fields included, so a second hop can follow them.
``limit`` bounds the nodes returned: ids are cut before the call and a docstore scan stops
there; a vector store's ``get_nodes`` has no limit, so its answer is cut after the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode, NodeWithScore
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from grapher_core.candidates import Candidate
from grapher_core.edges.base import LinkKey
from grapher_core.errors import InputError, InputTypeError, NotFoundError
from grapher_core.expand.source import InMemorySource, check_keys, check_limit
from llama_index_grapher.convert import candidate_from_node

__all__ = ["NodeSource", "as_node_source"]


class NodeSource:
    """Fetch link neighbours from a LlamaIndex docstore or vector store, batched per hop.

    ``calls`` counts store calls (one per hop for id keys, one more when a hop also has
    metadata-field keys).
    """

    def __init__(self, store: BaseDocumentStore | BasePydanticVectorStore) -> None:
        if not isinstance(store, (BaseDocumentStore, BasePydanticVectorStore)):
            raise InputTypeError(
                f"expected a LlamaIndex docstore or vector store, got {type(store).__name__}"
            )
        self.store = store
        self.calls = 0
        self._nodes: dict[str, BaseNode] = {}

    def node(self, node_id: str) -> BaseNode:
        """A node this source fetched (to hand the caller the store's own node back)."""
        try:
            return self._nodes[node_id]
        except KeyError:
            raise NotFoundError(f"node {node_id!r} was not fetched by this source") from None

    def fetch(self, keys: Sequence[LinkKey], *, limit: int | None = None) -> list[Candidate]:
        """Nodes matching any key, as candidates (score ``None``); at most ``limit`` (ids
        first)."""
        keys = check_keys(keys)
        limit = check_limit(limit)
        ids = list(
            dict.fromkeys(v for key in keys if len(key) == 1 and key[0][0] is None for _f, v in key)
        )[:limit]
        fields = [key for key in keys if not (len(key) == 1 and key[0][0] is None)]
        nodes: list[BaseNode] = []
        if ids:
            self.calls += 1
            nodes.extend(self._get(ids))
        left = None if limit is None else limit - len(nodes)
        if fields and left != 0:
            self.calls += 1
            nodes.extend(self._by_fields(fields, left)[:left])
        for n in nodes:
            self._nodes[n.node_id] = n
        return [candidate_from_node(NodeWithScore(node=n, score=None)) for n in nodes]

    def _get(self, ids: list[str]) -> list[BaseNode]:
        if isinstance(self.store, BaseDocumentStore):
            found = self.store.get_nodes(ids, raise_error=False)
            return [n for n in found if n is not None]
        return list(self.store.get_nodes(node_ids=ids))

    def _by_fields(self, keys: list[LinkKey], limit: int | None) -> list[BaseNode]:
        if isinstance(self.store, BaseDocumentStore):
            nodes = list(self.store.docs.values())
            by_id = {n.node_id: n for n in nodes}
            scan = InMemorySource([Candidate(n.node_id, "", None, n.metadata) for n in nodes])
            return [by_id[c.id] for c in scan.fetch(keys, limit=limit)]
        if any(len(key) != 1 for key in keys):
            raise InputError(
                "a vector store source fetches by single metadata fields only; "
                "use relationship_proximity() for chunk neighbours"
            )
        values: dict[str, list[Any]] = {}
        for key in keys:
            field, value = key[0]
            if field is None:
                raise InputError("a vector store source fetches by metadata field, not by id")
            values.setdefault(field, []).append(value)
        filters = MetadataFilters(
            filters=[
                MetadataFilter(key=f, value=list(dict.fromkeys(v)), operator=FilterOperator.IN)
                for f, v in values.items()
            ],
            condition=FilterCondition.OR,
        )
        return list(self.store.get_nodes(node_ids=None, filters=filters))


def as_node_source(value: Any) -> Any:
    """A docstore / vector store becomes a :class:`NodeSource`; a ``NodeSource`` (or anything
    with ``fetch`` and ``node``) is used as given."""
    if isinstance(value, (BaseDocumentStore, BasePydanticVectorStore)):
        return NodeSource(value)
    if callable(getattr(value, "fetch", None)) and callable(getattr(value, "node", None)):
        return value
    raise InputTypeError(
        "neighbour_source must be a LlamaIndex docstore or vector store, or have "
        f"fetch(keys) and node(id); got {type(value).__name__}"
    )
