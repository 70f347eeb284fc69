"""Concept graphs as AMR in PENMAN notation: the reader (real AMR, or what the writer wrote)
and the writer, which refuses what the reader would not give back.

Users with real AMR (G-RAG parses with AMRBART) store it in PENMAN and read it here; the
``penman`` package is imported on first use (``pip install 'grapher-rerank[grag]'``). The
reader refuses nesting deeper than :data:`MAX_PENMAN_DEPTH`.
"""

from __future__ import annotations

import re
from typing import Any

from grapher_core.enrich.concepts.escape import code, unescape
from grapher_core.enrich.concepts.graph import ConceptGraph, normalise_concept, united
from grapher_core.errors import InputError, MissingDependencyError

#: Deepest PENMAN nesting read; the ``penman`` decoder recurses once per level, and real AMR
#: graphs stay far below this.
MAX_PENMAN_DEPTH = 200
_QUOTED_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
#: Characters a PENMAN role cannot hold as they are (the lexer's role pattern, the comment
#: sign, this escape's ``%``); any whitespace or line break is escaped too.
_ROLE_UNSAFE = frozenset(' \t\r\n\v\f"()/:~#%')
#: Roles PENMAN itself reads as something else than an edge label.
_ROLE_RESERVED = frozenset({"instance"})
#: What ``str.splitlines`` breaks on: the PENMAN reader reads line by line.
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


# --- reader ----------------------------------------------------------------------------------


def penman_to_graph(text: str) -> ConceptGraph:
    """Read AMR in PENMAN notation: concepts of the instances (and constants) are the nodes,
    relations between them the edges, the top concept the root. Several AMRs (one per
    sentence) in one string are unioned. Malformed text, or nesting deeper than
    :data:`MAX_PENMAN_DEPTH`, raises :class:`~grapher_core.errors.InputError`."""
    try:
        import penman
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "reading AMR needs penman: pip install 'grapher-rerank[grag]'"
        ) from error
    depth = penman_depth(text)
    if depth > MAX_PENMAN_DEPTH:
        raise InputError(
            f"not valid PENMAN: nested {depth} levels deep, more than the {MAX_PENMAN_DEPTH} "
            "this reader follows (grapher_core.enrich.concepts.MAX_PENMAN_DEPTH)"
        )
    try:
        graphs = [_from_penman(amr) for amr in penman.iterdecode(text)]
    except penman.DecodeError as error:
        raise InputError(f"not valid PENMAN: {error}") from None
    except RecursionError:  # a nesting the depth scan did not see (it skips strings)
        raise InputError("not valid PENMAN: nested too deeply to read") from None
    return united(graphs)


def penman_depth(text: str) -> int:
    """The deepest parenthesis nesting of ``text`` outside quoted strings, in one pass."""
    depth = deepest = 0
    quoted = escaped = False
    for ch in text:
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth = max(depth - 1, 0)
    return deepest


def _from_penman(amr: Any) -> ConceptGraph:
    concept = {
        var: normalise_concept(_unquoted(str(label)))
        for var, _, label in amr.instances()
        if label is not None
    }
    nodes: dict[str, None] = dict.fromkeys(concept.values())
    edges: dict[tuple[str, str, str], None] = {}
    for source, role, target in amr.edges():
        if source in concept and target in concept:
            edges[(concept[source], _role_read(role), concept[target])] = None
    for source, role, value in amr.attributes():
        constant = normalise_concept(_unquoted(str(value)))
        if source in concept and constant:
            nodes.setdefault(constant, None)
            edges[(concept[source], _role_read(role), constant)] = None
    root = concept.get(amr.top)
    return ConceptGraph(tuple(nodes), tuple(edges), (root,) if root else ())


def _unquoted(value: str) -> str:
    """A PENMAN string's text: quotes off, each backslash escape read in one pass."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return _QUOTED_ESCAPE.sub(r"\1", value[1:-1])
    return value


def _role_read(role: str) -> str:
    """A role as read from PENMAN: the colon off, the writer's ``%XX`` escapes decoded (real
    AMR roles hold no ``%``)."""
    return unescape(role[1:] if role.startswith(":") else role)


# --- writer ----------------------------------------------------------------------------------


def graph_to_penman(graph: ConceptGraph) -> str:
    """Write a concept graph as PENMAN: one AMR per connected component (PENMAN graphs are
    connected), blank-line separated, one variable per concept, each component's top its first
    root (else its first node). :func:`penman_to_graph` reads back the same nodes and edges;
    the roots come back as the components' tops.

    What could not come back is refused here, naming it: a concept the reader would read as
    another (it normalises: upper case, a line break, doubled or edge spaces, a list
    delimiter -- pass it through :func:`normalise_concept` first), an empty concept or role,
    an edge or root naming a concept that is not a node. Roles are escaped where PENMAN would
    split or turn them (a space, ``:``, ``(``, a quote, a trailing ``-of`` that PENMAN reads as
    the inverse role) as ``%XX``, which :func:`penman_to_graph` decodes.
    """
    import penman

    _check_writable(graph)
    roles = {edge[1]: _role_written(edge[1], edge) for edge in graph.edges}
    variable = {node: f"c{i}" for i, node in enumerate(graph.nodes)}
    roots = set(graph.roots)
    out = []
    for members in _components(graph):
        member_set = set(members)
        top = next((n for n in members if n in roots), members[0])
        triples: list[tuple[str, str, str]] = [
            (variable[n], ":instance", _quoted(n)) for n in members
        ]
        triples += [
            (variable[s], f":{roles[r]}", variable[t]) for s, r, t in graph.edges if s in member_set
        ]
        out.append(penman.encode(penman.Graph(triples, top=variable[top]), indent=None))
    return "\n\n".join(out)


def _check_writable(graph: ConceptGraph) -> None:
    """Refuse, naming it, a graph whose nodes, edge ends or roots would not come back."""
    if not graph.nodes:
        raise InputError("an empty concept graph has no PENMAN form")
    for node in graph.nodes:
        _check_penman_concept(node)
    known = set(graph.nodes)
    for edge in graph.edges:
        for end in (edge[0], edge[2]):
            if end not in known:
                raise InputError(
                    f"cannot write PENMAN: edge {edge!r} names concept {end!r}, which is not "
                    "among the graph's nodes"
                )
    for root in graph.roots:
        if root not in known:
            raise InputError(f"cannot write PENMAN: root {root!r} is not among the graph's nodes")


def _check_penman_concept(concept: object) -> None:
    """Refuse a concept :func:`penman_to_graph` would not read back as itself."""
    if not isinstance(concept, str) or not concept:
        raise InputError(
            f"cannot write PENMAN: concepts must be non-empty strings, got {concept!r}"
        )
    normal = normalise_concept(concept)
    if normal != concept:
        raise InputError(
            f"cannot write PENMAN: concept {concept!r} would be read back as {normal!r} (the "
            "reader lower-cases, collapses whitespace and line breaks, drops list delimiters); "
            "write normalise_concept(concept) instead"
        )


def _role_written(role: object, edge: tuple[str, str, str]) -> str:
    """``role`` as a PENMAN role token reads it back exactly (without the colon)."""
    if not isinstance(role, str) or not role:
        raise InputError(
            f"cannot write PENMAN: edge {edge!r} has an empty role; roles must be non-empty strings"
        )
    out = "".join(
        code(ch) if ch in _ROLE_UNSAFE or ch.isspace() or ch in _LINE_BREAKS else ch for ch in role
    )
    if out.endswith("-of"):  # PENMAN reads ":x-of" as ":x" with the edge turned round
        out = out[: -len("-of")] + code("-") + "of"
    if out in _ROLE_RESERVED:
        out = code(out[0]) + out[1:]
    return out


def _quoted(concept: str) -> str:
    """PENMAN concepts are single symbols: a multi-word concept is written as a string."""
    if re.fullmatch(r"[^\s()/:~\"#]+", concept):  # "#" would open a PENMAN comment
        return concept
    return '"' + concept.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _components(graph: ConceptGraph) -> list[list[str]]:
    """The graph's connected components, each in node order, in order of their first node."""
    neighbours: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for s, _, t in graph.edges:
        neighbours[s].append(t)
        neighbours[t].append(s)
    position = {node: i for i, node in reversed(list(enumerate(graph.nodes)))}
    seen: set[str] = set()
    out = []
    for start in graph.nodes:
        if start in seen:
            continue
        seen.add(start)
        members, stack = [], [start]
        while stack:
            node = stack.pop()
            members.append(node)
            for other in neighbours[node]:
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        out.append(sorted(members, key=position.__getitem__))
    return out
