"""Edges from ids written in the metadata: foreign keys / links (structural) and chunk
adjacency (contextual)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import scipy.sparse as sp

from grapher_core.candidates import Candidate
from grapher_core.edges.base import LinkKey, index_by, links_to_matrix
from grapher_core.edges.checks import check_weight
from grapher_core.metadata import read_int, read_list


@dataclass(frozen=True)
class ForeignKeys:
    """Structural proximity: ``metadata[field]`` lists the ids of the objects this one links to.

    Foreign keys between tables, hyperlinks between pages, title mentions, or any business rule
    written as a list of ids. Weight 1 per link. ``symmetric=True`` (default) makes a link in
    either direction an edge both ways, as a foreign key is. ``target_field`` matches the listed
    values against another metadata field instead of the candidate id (e.g. titles). Links to
    objects that are not among the candidates, and links to oneself, are ignored.
    """

    field: str = "foreign_keys"
    kind: str = "structural"
    weight: float = 1.0
    symmetric: bool = True
    target_field: str | None = None

    def __post_init__(self) -> None:
        check_weight("ForeignKeys", self.weight)

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


@dataclass(frozen=True)
class AdjacentChunks:
    """Contextual proximity: chunk ``k`` and chunks ``k ± 1`` of the same document, weight 1.

    Candidates without a document id or with a chunk index that is not an integer have no
    contextual edges.
    """

    doc_field: str = "doc_id"
    index_field: str = "chunk_index"
    kind: str = "contextual"
    weight: float = 1.0

    def __post_init__(self) -> None:
        check_weight("AdjacentChunks", self.weight)

    def adjacency(self, candidates: Sequence[Candidate]) -> sp.csr_matrix:
        keys: list[tuple[int, tuple[str, int]]] = []
        for i, candidate in enumerate(candidates):
            doc = candidate.metadata.get(self.doc_field)
            index = read_int(candidate.metadata.get(self.index_field))
            if doc is not None and str(doc) != "" and index is not None:
                keys.append((i, (str(doc), index)))
        positions = index_by(keys)
        rows: list[int] = []
        cols: list[int] = []
        for i, (doc, index) in keys:
            for j in positions.get((doc, index + 1), ()):
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
        if position is None:
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
        if position is None:
            return []
        return [((self.doc_field, position[0]), (self.index_field, str(position[1])))]

    def reverse_keys(self, candidate: Candidate) -> list[LinkKey]:
        """Adjacency is symmetric: the same keys as :meth:`link_keys`."""
        return self.link_keys(candidate)
