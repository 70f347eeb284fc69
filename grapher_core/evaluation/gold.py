"""Gold at the level a user thinks in: object ids, or the values of one metadata key.

A user says "the answer is on these two pages"; their chunker decides the chunk ids. With a
gold key (``source`` for LangChain's loaders, ``file_path`` for LlamaIndex's readers, a
``doc_id``, a page URL, a table name), a gold id names a value of that key, and a ranked
object counts for each value it carries. The ranking itself is never collapsed: K still counts
objects (chunks), so

* a gold page's rank is the rank of its best-ranked chunk;
* PR@K is 1 when every gold page has at least one chunk in the top K;
* gold@K counts gold pages with a chunk in the top K (a page once, however many of its chunks
  are there);
* further chunks of a page already found take places in the top K and count for nothing: two
  chunks of one gold page in a top 5 leave three places for the other gold pages -- the
  crowding a chunk-level count cannot see;
* MRR reads the rank of the first chunk of any gold page.

One implementation for ``grapher eval``, ``grapher train`` and both wrappers'
``evaluate_retriever``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from grapher_core.errors import InputError
from grapher_core.evaluation.metrics import GoldRanks

__all__ = ["gold_values", "level_ranks", "members_of", "units_of"]


def units_of(object_id: str, metadata: Mapping[str, Any], gold_key: str | None) -> tuple[str, ...]:
    """What an object counts for: its id (no gold key), else its values of ``gold_key`` -- a
    scalar, or each item of a list -- as strings; none when it lacks the key."""
    if gold_key is None:
        return (object_id,)
    value = metadata.get(gold_key)
    if value is None or isinstance(value, bool):
        return ()
    items = value if isinstance(value, (list, tuple)) else [value]
    return tuple(dict.fromkeys(str(v) for v in items if v is not None and str(v) != ""))


def level_ranks(ranked: Sequence[tuple[str, ...]], gold: Iterable[str]) -> GoldRanks:
    """Each gold value's rank: the first place (from 1) of an object counting for it
    (``ranked``: each ranked object's units, best first); ``None`` when none is ranked."""
    wanted = dict.fromkeys(gold)
    if not wanted:
        raise InputError("gold must name at least one object")
    position: dict[str, int] = {}
    for rank, units in enumerate(ranked, start=1):
        for unit in units:
            if unit in wanted and unit not in position:
                position[unit] = rank
    return tuple(position.get(value) for value in wanted)


def members_of(pool_units: Mapping[str, tuple[str, ...]], gold: Iterable[str]) -> tuple[str, ...]:
    """The ids of a pool's objects that count for some gold value (``pool_units``: id ->
    units): the positives a learned ranker is trained on at this level."""
    wanted = set(gold)
    return tuple(i for i, units in pool_units.items() if wanted.intersection(units))


def gold_values(objects: Iterable[tuple[str, Mapping[str, Any]]], gold_key: str | None) -> set[str]:
    """Every value gold may name: the objects' ids, or their values of ``gold_key``; a key no
    object carries is refused, naming keys they do carry."""
    values: set[str] = set()
    keys: dict[str, None] = {}
    for object_id, metadata in objects:
        values.update(units_of(object_id, metadata, gold_key))
        if not values and gold_key is not None:
            keys.update(dict.fromkeys(str(k) for k in metadata))
    if gold_key is not None and not values:
        shown = ", ".join(repr(k) for k in list(keys)[:10]) or "none"
        raise InputError(
            f"gold key {gold_key!r}: no object carries this metadata key (keys found: {shown})"
        )
    return values
