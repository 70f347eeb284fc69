"""Which objects synthetic questions are written about: pairs of linked objects and single
objects, drawn from the user's own corpus with a seed.

A pair is two objects an edge of the corpus joins -- foreign-key-joined tables, a chunk and the
chunk of another page it links to, consecutive chunks -- read by the same proximities the
reranker detects in the metadata (:func:`grapher_core.edges.detect.detect_proximities`), run
once over the whole corpus. A question written about a pair needs both objects; a question
written about one object is a control: it shows what the graph costs where no second object is
needed. Gold is known by construction: the pair's two ids, or the one id.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from grapher_core.candidates import Candidate, CorpusObject
from grapher_core.errors import ConfigError

__all__ = ["PAIR", "SINGLE", "LinkedPair", "Seed", "linked_pairs", "plan_seeds"]

PAIR = "pair"
"""A question that needs two linked objects."""
SINGLE = "single"
"""A control question answered by one object."""

MAX_PAIRS_PER_OBJECT = 2
"""An object takes part in at most this many pairs, so hubs (a ``users`` table, an index page)
do not write most of the questions."""


@dataclass(frozen=True)
class LinkedPair:
    """Two objects (positions in the corpus) joined by the edges of ``via``."""

    a: int
    b: int
    via: str


@dataclass(frozen=True)
class Seed:
    """What one question is written about: ``kind`` (``pair`` or ``single``), the objects'
    ids (the question's gold) and the edge that joins them (``""`` for a single object)."""

    kind: str
    ids: tuple[str, ...]
    via: str = ""


def _page_of(obj: CorpusObject, field: str | None) -> object:
    return None if field is None else obj.metadata.get(field)


def linked_pairs(
    objects: Sequence[CorpusObject], proximities: Sequence[object] | None = None
) -> list[LinkedPair]:
    """Every pair of objects an edge joins, each once, per proximity (detected from the
    metadata when none are given). Links between chunks of one page are left out: a link
    pair is two pages; consecutive chunks come from the chunk-order proximity."""
    from grapher_core.edges.detect import describe, detect_proximities
    from grapher_core.edges.graph import build_graph

    candidates = [Candidate(o.id, o.text, None, o.metadata) for o in objects]
    if proximities is None:
        proximities = detect_proximities(candidates)
    pairs: list[LinkedPair] = []
    for proximity in proximities:
        with warnings.catch_warnings():  # notes about one pool; here the pool is the corpus
            warnings.simplefilter("ignore")
            matrix = build_graph(candidates, [proximity]).adjacency  # type: ignore[list-item]
        upper = sp.triu(matrix + matrix.T, k=1).tocoo()
        page_field = getattr(proximity, "target_field", None)
        same_page_ok = type(proximity).__name__ != "ChunkLinks"
        via = describe([proximity])
        for a, b in zip(upper.row.tolist(), upper.col.tolist(), strict=True):
            if not same_page_ok and _page_of(objects[a], page_field) == _page_of(
                objects[b], page_field
            ):
                continue
            pairs.append(LinkedPair(a, b, via))
    return pairs


def _draw_pairs(pairs: Sequence[LinkedPair], count: int, rng: random.Random) -> list[LinkedPair]:
    """``count`` pairs, taken in turn from each kind of edge (so chunk order does not crowd
    out the fewer links), no object in more than :data:`MAX_PAIRS_PER_OBJECT`."""
    by_via: dict[str, list[LinkedPair]] = {}
    for pair in pairs:
        by_via.setdefault(pair.via, []).append(pair)
    queues = [rng.sample(group, len(group)) for group in by_via.values()]
    used: dict[int, int] = {}
    drawn: list[LinkedPair] = []
    while len(drawn) < count and any(queues):
        for queue in queues:
            while queue:
                pair = queue.pop()
                if max(used.get(pair.a, 0), used.get(pair.b, 0)) < MAX_PAIRS_PER_OBJECT:
                    used[pair.a] = used.get(pair.a, 0) + 1
                    used[pair.b] = used.get(pair.b, 0) + 1
                    drawn.append(pair)
                    break
            if len(drawn) == count:
                break
    return drawn


def plan_seeds(
    objects: Sequence[CorpusObject],
    n: int,
    *,
    pair_share: float = 2 / 3,
    seed: int = 0,
    pairs: Sequence[LinkedPair] | None = None,
    min_chars: int = 40,
) -> list[Seed]:
    """``n`` seeds: ``round(n * pair_share)`` linked pairs (fewer when the corpus has fewer),
    the rest single objects (those in no drawn pair first), none of them an object shorter
    than ``min_chars`` characters (nothing to ask about). The same corpus, ``n`` and ``seed``
    give the same seeds."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"the number of questions must be an integer >= 1, got {n!r}")
    if not 0.0 <= pair_share <= 1.0:
        raise ConfigError(f"pair_share must be between 0 and 1, got {pair_share!r}")
    rng = random.Random(seed)
    usable = np.array([len(o.text.strip()) >= min_chars for o in objects], dtype=bool)
    if pairs is None:
        pairs = linked_pairs(objects)
    pairs = [p for p in pairs if usable[p.a] and usable[p.b]]
    drawn = _draw_pairs(pairs, round(n * pair_share), rng)
    seeds = [Seed(PAIR, (objects[p.a].id, objects[p.b].id), p.via) for p in drawn]
    in_pairs = {i for p in drawn for i in (p.a, p.b)}
    free = [i for i in range(len(objects)) if usable[i] and i not in in_pairs]
    taken = [i for i in range(len(objects)) if usable[i] and i in in_pairs]
    rng.shuffle(free)
    rng.shuffle(taken)  # objects of the pairs only when the others run out
    seeds += [Seed(SINGLE, (objects[i].id,)) for i in (free + taken)[: n - len(seeds)]]
    return seeds
