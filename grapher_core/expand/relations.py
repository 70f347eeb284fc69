"""Relation text for an edge, from the metadata that made it (GRAG's edge attributes).

The GRAG text view and the ego-graph index both need a short phrase per edge:

* foreign key between tables -> the join columns, ``t1.c1 = t2.c2``, from ``fk_pairs``
  (``[[this_col, other_table_id, other_col], ...]``, the Spider/BIRD/Beaver metadata);
  ``foreign key`` when no pair names the other table;
* title mention -> ``mentions`` (or ``is mentioned by`` when the link goes the other way);
* chunk adjacency -> ``next chunk`` / ``previous chunk``;
* shared entities -> ``shares <entity>, <entity>``;
* anything else -> the proximity's ``kind``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from grapher_core.candidates import Candidate
from grapher_core.edges.entities import SharedEntities
from grapher_core.edges.keys import AdjacentChunks, ForeignKeys
from grapher_core.metadata import normalise_entity, read_int, read_list

__all__ = ["fk_join", "relation_text", "relations_between"]


def _name(candidate: Candidate) -> str:
    for key in ("table", "title", "name"):
        value = candidate.metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return candidate.id


def _pairs(metadata: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``fk_pairs`` as triples: a native list of lists or its JSON text (Chroma's form)."""
    value = metadata.get("fk_pairs")
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # malformed, or nested past the parser's stack
            return []
    if not isinstance(value, (list, tuple)):
        return []
    out = []
    for item in value:
        if isinstance(item, (list, tuple)) and len(item) == 3:
            out.append((str(item[0]), str(item[1]), str(item[2])))
    return out


def fk_join(a: Candidate, b: Candidate) -> str | None:
    """``a.col = b.col`` (several joined by ``and``) from either side's ``fk_pairs``."""
    found: dict[str, None] = {}
    for this, other, other_col in _pairs(a.metadata):
        if other == b.id:
            found[f"{_name(a)}.{this} = {_name(b)}.{other_col}"] = None
    for this, other, other_col in _pairs(b.metadata):
        if other == a.id:
            found[f"{_name(a)}.{other_col} = {_name(b)}.{this}"] = None
    return " and ".join(found) if found else None


def relation_text(a: Candidate, b: Candidate, proximity: Any) -> str | None:
    """The phrase for the edge ``a -- b`` that ``proximity`` draws, or ``None`` when it draws
    none (checked on the metadata, so it also serves edges built elsewhere)."""
    if isinstance(proximity, ForeignKeys):
        if proximity.target_field is None:
            linked = b.id in read_list(a.metadata.get(proximity.field)) or a.id in read_list(
                b.metadata.get(proximity.field)
            )
            if not linked:
                return None
            if proximity.kind == "contextual":
                return "adjacent chunk"
            return fk_join(a, b) or "foreign key"
        b_keys = set(read_list(b.metadata.get(proximity.target_field)))
        a_keys = set(read_list(a.metadata.get(proximity.target_field)))
        if b_keys & set(read_list(a.metadata.get(proximity.field))):
            return "mentions"
        if a_keys & set(read_list(b.metadata.get(proximity.field))):
            return "is mentioned by"
        return None
    if isinstance(proximity, AdjacentChunks):
        doc_a, doc_b = a.metadata.get(proximity.doc_field), b.metadata.get(proximity.doc_field)
        i, j = (
            read_int(a.metadata.get(proximity.index_field)),
            read_int(b.metadata.get(proximity.index_field)),
        )
        if doc_a is None or str(doc_a) != str(doc_b) or i is None or j is None:
            return None
        return {1: "next chunk", -1: "previous chunk"}.get(j - i)
    field = getattr(proximity, "field", None)
    if isinstance(proximity, SharedEntities) or (field and hasattr(proximity, "for_candidates")):
        names_b = {normalise_entity(e) for e in read_list(b.metadata.get(field or "entities"))}
        shared = [
            e
            for e in dict.fromkeys(read_list(a.metadata.get(field or "entities")))
            if normalise_entity(e) in names_b
        ]
        return f"shares {', '.join(map(str, shared[:3]))}" if shared else None
    return str(getattr(proximity, "kind", "linked"))


def relations_between(a: Candidate, b: Candidate, proximities: Sequence[Any]) -> list[str]:
    """Every phrase any of ``proximities`` gives the pair, each once."""
    out: dict[str, None] = {}
    for proximity in proximities:
        text = relation_text(a, b, proximity)
        if text:
            out[text] = None
    return list(out)
