"""Concept graphs for G-RAG (the G-RAG paper section 3): parse, store, read, combine, walk.

G-RAG parses every "question: <q> <document>" into one AMR graph with AMRBART; the offline
default here is a concept graph per *document* from spaCy's dependency parse, computed once at
enrichment, and the question's graph at query time; ``G_qp`` is their union plus a ``question``
node linked to the question's root concepts. Users with real AMR store it in PENMAN notation
and read it with :func:`penman_to_graph`.

One job per module: ``graph`` (the value, unions, ``G_qp``), ``spacy_parser`` (the offline
parser and its bounds), ``text`` (texts made safe and split for it), ``metadata`` (the
store-safe list form and the format-picking reader), ``escape`` (its ``%XX`` escapes),
``penman`` (AMR read and written), ``paths`` (node text along shortest paths), ``counting``
(pairwise shared concepts and their budget), ``log`` (the once-only warning).

The names this module had before it became a package are all importable from here; those that
were public but never in ``__all__`` are re-exported by alias (``name as name``) and stay out.
"""

from __future__ import annotations

from grapher_core.enrich.concepts.counting import (
    DEFAULT_MAX_PAIRS,
    check_pair_budget,
    concept_incidence,
    concept_overlaps,
)
from grapher_core.enrich.concepts.counting import concept_sets as concept_sets
from grapher_core.enrich.concepts.counting import pair_count as pair_count
from grapher_core.enrich.concepts.graph import QUESTION_NODE, ConceptGraph, question_graph
from grapher_core.enrich.concepts.graph import normalise_concept as normalise_concept
from grapher_core.enrich.concepts.log import warn_once
from grapher_core.enrich.concepts.metadata import (
    CONCEPT_FORMATS,
    decode_graph,
    encode_graph,
    read_graph,
)
from grapher_core.enrich.concepts.paths import path_text, shortest_paths
from grapher_core.enrich.concepts.penman import MAX_PENMAN_DEPTH, graph_to_penman, penman_to_graph
from grapher_core.enrich.concepts.penman import penman_depth as penman_depth
from grapher_core.enrich.concepts.spacy_parser import BATCH_CHARS as BATCH_CHARS
from grapher_core.enrich.concepts.spacy_parser import CONTENT_POS as CONTENT_POS
from grapher_core.enrich.concepts.spacy_parser import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_MAX_CHARS,
    SpacyConceptParser,
)
from grapher_core.enrich.concepts.spacy_parser import PARSER_VERSION as PARSER_VERSION
from grapher_core.enrich.concepts.spacy_parser import doc_to_graph as doc_to_graph
from grapher_core.enrich.concepts.text import sanitise_texts
from grapher_core.enrich.concepts.text import split_text as split_text

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
