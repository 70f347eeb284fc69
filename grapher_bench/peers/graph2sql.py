"""``graph2sql`` (PyPI, Apache-2.0): Personalized PageRank over a schema graph, personalised by
lexical matches of the question's tokens on table names, columns and attributes -- the closest
packaged table-side peer (no LLM, no vectors), run by ``grapher-bench bench --rankers graph2sql``.

It sees what GraphER sees: the retriever's candidate tables with their foreign keys (edges both
ways, as the metadata lists them). Tables it scores come first by its score; it returns only the
top ``k`` (all candidates here) with a score, so the rest keep the retriever's order below them,
and a question whose tokens match no table leaves the retriever's order unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grapher_core.candidates import Candidate
from grapher_core.errors import MissingDependencyError
from grapher_core.metadata import read_list

__all__ = ["graph2sql_order"]


def _ppr() -> Any:
    try:
        from graph2sql import personalized_page_rank
    except ImportError as error:
        raise MissingDependencyError(
            "the graph2sql peer needs the graph2sql package: pip install graph2sql"
        ) from error
    return personalized_page_rank


def graph2sql_order(query: str, candidates: Sequence[Candidate]) -> list[str]:
    """Candidate ids best first: graph2sql's PPR scores, then the unscored in retriever order."""
    ids = {c.id for c in candidates}  # foreign keys to tables outside the pool are dropped
    nodes = [
        {
            "id": c.id,
            "label": str(c.metadata.get("table") or c.id.rsplit(".", 1)[-1]),
            "content": c.text,
            # graph2sql returns nodes by label, which pooled schemas repeat: the position comes
            # back in the attributes (an int: its matching reads string attributes only)
            "attributes": {"position": i},
        }
        for i, c in enumerate(candidates)
    ]
    edges = [
        {"from": c.id, "to": target, "label": "foreign_key"}
        for c in candidates
        for target in read_list(c.metadata.get("foreign_keys"))
        if target in ids and target != c.id
    ]
    result = _ppr()(query, {"nodes": nodes, "edges": edges}, k=len(nodes))
    scored = sorted(
        (node for node in result.get("nodes", []) if "score" in node),
        key=lambda node: -float(node["score"]),
    )
    first = [candidates[int(node["attributes"]["position"])].id for node in scored]
    seen = set(first)
    return first + [c.id for c in candidates if c.id not in seen]
