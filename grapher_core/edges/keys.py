"""Edges from ids written in the metadata: foreign keys / links (structural) and chunk
adjacency (contextual)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import ClassVar

import scipy.sparse as sp

from grapher_core.candidates import Candidate
from grapher_core.edges.base import LinkKey, index_by, links_to_matrix
from grapher_core.edges.checks import (
    FIELD_NAME,
    FLAG,
    KIND,
    OPTIONAL_FIELD_NAME,
    WEIGHT,
    check_proximity,
)
from grapher_core.metadata import read_int, read_list
from grapher_core.utils.schema import DeclaredFields, Schema, Spec


@dataclass(frozen=True)
class ForeignKeys(DeclaredFields):
    """Structural proximity: ``metadata[field]`` lists the ids of the objects this one links to.

    Foreign keys between tables, hyperlinks between pages, title mentions, or any business rule
    written as a list of ids. Weight 1 per link. ``symmetric=True`` (default) makes a link in
    either direction an edge both ways, as a foreign key is. ``target_field`` matches the listed
    values against another metadata field instead of the candidate id (e.g. titles). Links to
    objects that are not among the candidates, and links to oneself, are ignored.
    """

    FIELDS: ClassVar[Schema] = {
        "field": FIELD_NAME,
        "kind": KIND,
        "weight": WEIGHT,
        "symmetric": FLAG,
        "target_field": OPTIONAL_FIELD_NAME,
    }
    field: str = "foreign_keys"
    kind: str = "structural"
    weight: float = 1.0
    symmetric: bool = True
    target_field: str | None = None

    def __post_init__(self) -> None:
        check_proximity(self)

    def adjacency(self, candidates: Sequence[Candidate]) -> sp.csr_matrix:
        n = len(candidates)
        if self.target_field is None:
            targets = index_by((i, c.id) for i, c in enumerate(candidates))
        else:
            field = self.target_field
            targets = index_by(
                (i, key)
                for i, c in enumerate(candidates)
                for key in read_list(c.metadata.get(field))
            )
        rows: list[int] = []
        cols: list[int] = []
        for i, candidate in enumerate(candidates):
            for link in read_list(candidate.metadata.get(self.field)):
                for j in targets.get(link, ()):
                    rows.append(i)
                    cols.append(j)
        return links_to_matrix(rows, cols, n, symmetric=self.symmetric)

    # Expansion support (additive): where this candidate's links point, and how it is found.
    def link_keys(self, candidate: Candidate) -> list[LinkKey]:
        """The objects this candidate links to, as lookup keys (``target_field`` or the id)."""
        return [
            ((self.target_field, value),) for value in read_list(candidate.metadata.get(self.field))
        ]

    def own_keys(self, candidate: Candidate) -> list[LinkKey]:
        """The keys under which other objects' links find this candidate."""
        if self.target_field is None:
            return [((None, candidate.id),)]
        return [
            ((self.target_field, value),)
            for value in read_list(candidate.metadata.get(self.target_field))
        ]

    def reverse_keys(self, candidate: Candidate) -> list[LinkKey]:
        """Keys of the objects that link *to* this candidate (list field ``field`` holds one of
        its own values); only meaningful for a ``symmetric`` proximity."""
        return [((self.field, value),) for key in self.own_keys(candidate) for _f, value in key]


ORDERS: tuple[str, ...] = ("index", "offset")
"""How :class:`AdjacentChunks` reads its order field."""
MAX_GAP = 1 << 30
"""The largest ``max_gap`` (characters): anything larger links every chunk to the next."""


@dataclass(frozen=True)
class AdjacentChunks(DeclaredFields):
    """Contextual proximity: consecutive chunks of the same document, weight 1.

    ``order="index"`` (default): ``index_field`` numbers the chunks, and chunk ``k`` is linked
    to chunks ``k ± 1``. ``order="offset"``: ``index_field`` is where the chunk starts in its
    document (LangChain's ``start_index``, ``add_start_index=True``), and offsets are not
    consecutive numbers, so two chunks are linked when their spans meet: within a document,
    pooled chunks are sorted by start, and each is linked to the next one when that one
    starts after it and no later than its end (start + ``len(text)``) plus ``max_gap``
    characters. Splitters overlap chunks (``chunk_overlap``) or strip the whitespace between
    them (blank lines, indentation), so the next chunk starts at or a little before or after
    the end; a chunk missing from the pool leaves a gap as long as itself, so its neighbours
    stay apart. Only the next chunk *in the pool* is considered, so with overlap above half a
    chunk ``k`` and ``k + 2`` (which then share text) are linked when ``k + 1`` is absent. The
    length read is the text the ranker reads (cut by ``max_chars_per_doc``).

    Candidates without a document id or with an order value that is not an integer have no
    contextual edges. Expansion cannot guess a neighbour's offset: in ``"offset"`` order this
    proximity gives no lookup keys.
    """

    FIELDS: ClassVar[Schema] = {
        "doc_field": FIELD_NAME,
        "index_field": FIELD_NAME,
        "kind": KIND,
        "weight": WEIGHT,
        "order": Spec("str", choices=ORDERS),
        "max_gap": Spec("int", low=0, high=MAX_GAP, fix="characters between two chunks"),
    }
    doc_field: str = "doc_id"
    index_field: str = "chunk_index"
    kind: str = "contextual"
    weight: float = 1.0
    order: str = "index"
    max_gap: int = 32

    def __post_init__(self) -> None:
        check_proximity(self)

    def adjacency(self, candidates: Sequence[Candidate]) -> sp.csr_matrix:
        if self.order == "offset":
            return self._offset_adjacency(candidates)
        keys: list[tuple[int, tuple[str, int]]] = []
        for i, candidate in enumerate(candidates):
            position = self._position(candidate)
            if position is not None:
                keys.append((i, position))
        positions = index_by(keys)
        rows: list[int] = []
        cols: list[int] = []
        for i, (doc, index) in keys:
            for j in positions.get((doc, index + 1), ()):
                rows.append(i)
                cols.append(j)
        return links_to_matrix(rows, cols, len(candidates), symmetric=True)

    def _offset_adjacency(self, candidates: Sequence[Candidate]) -> sp.csr_matrix:
        """Spans that meet, within a document (the rule in the class docstring)."""
        spans: dict[str, list[tuple[int, int, int]]] = {}
        for i, candidate in enumerate(candidates):
            position = self._position(candidate)
            if position is not None and position[1] >= 0:
                doc, start = position
                spans.setdefault(doc, []).append((start, start + len(candidate.text), i))
        rows: list[int] = []
        cols: list[int] = []
        for members in spans.values():
            members.sort()
            for (start, end, i), (after, _end, j) in pairwise(members):
                if start < after <= end + self.max_gap:
                    rows.append(i)
                    cols.append(j)
        return links_to_matrix(rows, cols, len(candidates), symmetric=True)

    # Expansion support (additive): the previous and next chunk of the same document.
    def _position(self, candidate: Candidate) -> tuple[str, int] | None:
        doc = candidate.metadata.get(self.doc_field)
        index = read_int(candidate.metadata.get(self.index_field))
        if doc is None or str(doc) == "" or index is None:
            return None
        return str(doc), index

    def link_keys(self, candidate: Candidate) -> list[LinkKey]:
        """Chunks ``k - 1`` and ``k + 1`` of the candidate's document, as lookup keys."""
        position = self._position(candidate)
        if position is None or self.order == "offset":
            return []
        doc, index = position
        return [
            ((self.doc_field, doc), (self.index_field, str(k)))
            for k in (index - 1, index + 1)
            if k >= 0
        ]

    def own_keys(self, candidate: Candidate) -> list[LinkKey]:
        """The candidate's own (document, chunk index) key."""
        position = self._position(candidate)
        if position is None or self.order == "offset":
            return []
        return [((self.doc_field, position[0]), (self.index_field, str(position[1])))]

    def reverse_keys(self, candidate: Candidate) -> list[LinkKey]:
        """Adjacency is symmetric: the same keys as :meth:`link_keys`."""
        return self.link_keys(candidate)
