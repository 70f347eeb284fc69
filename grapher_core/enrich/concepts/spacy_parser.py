"""The offline concept parser: concept graphs from spaCy's dependency parse, bounded in the
characters it reads, and its form as an enrichment extractor.

G-RAG parses every "question: <q> <document>" into one AMR graph with AMRBART. No AMR parser
can be installed here, so the default is this substitute: a concept graph per *document*,
computed once at enrichment, and the question's graph at query time. That is not one AMR of the
concatenation (no coreference or re-entrancy across the two, no PropBank frames).

Bounds: the parser cuts texts at ``max_chars`` (:data:`DEFAULT_MAX_CHARS`, warned once) and
parses long ones in chunks of ``chunk_chars``, so time and memory follow the kept length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grapher_core.enrich.base import ExtractionResult, check_texts
from grapher_core.enrich.concepts.graph import ConceptGraph, normalise_concept, united
from grapher_core.enrich.concepts.log import log, warn_once
from grapher_core.enrich.concepts.metadata import encode_graph
from grapher_core.enrich.concepts.text import batches, sanitise_texts, split_text
from grapher_core.enrich.spacy_pipeline import DEFAULT_SPACY_MODEL, LazySpacy
from grapher_core.errors import ConfigError

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
        model: str = DEFAULT_SPACY_MODEL,
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
        self._spacy = LazySpacy(
            model, components=("parser", "lemmatizer"), purpose="concept graphs"
        )

    @property
    def nlp(self) -> Any:
        """The spaCy pipeline (all of it: the parse and lemmas make the graph), loaded on
        first use."""
        return self._spacy.load()

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
            log.info("concept parser: cut at %s characters: %s", cap, ", ".join(labels))
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
        for start, stop in batches([len(p) for p in pieces], self.batch_size, BATCH_CHARS):
            docs = nlp.pipe(pieces[start:stop], batch_size=stop - start)
            for k, doc in zip(range(start, stop), docs, strict=True):
                parts[owner[k]].append(doc_to_graph(doc))
        return [united(graphs) for graphs in parts]

    def extract_batch(self, texts: Sequence[str]) -> list[ExtractionResult]:
        """The enrichment-extractor form (``grapher enrich --extractor concepts``): each graph
        as its store-safe list of strings."""
        return [ExtractionResult(encode_graph(g)) for g in self.parse(texts)]


def _positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")


def doc_to_graph(doc: Any) -> ConceptGraph:
    """The concept graph of one parsed spaCy ``Doc`` (see :class:`SpacyConceptParser`)."""
    label = _labels(doc)
    order = sorted(label)
    nodes = dict.fromkeys(label[i] for i in order)
    edges = dict.fromkeys(e for e in (_edge(doc[i], label) for i in order) if e is not None)
    return ConceptGraph(tuple(nodes), tuple(edges), _roots(doc, label))


def _labels(doc: Any) -> dict[int, str]:
    """Each content token's concept by position: its entity span's text, else its lemma."""
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
    return label


def _edge(token: Any, label: dict[int, str]) -> tuple[str, str, str] | None:
    """The edge from ``token``'s nearest content head to it, its role the function words
    crossed (else the dependency label); none at a sentence root or within one concept."""
    crossed: list[str] = []
    head = token
    while head.head.i != head.i:
        head = head.head
        if head.i in label:
            break
        crossed.append(normalise_concept(head.lemma_ or head.text))
    else:
        return None  # reached the sentence root without meeting a content word
    source, target = label[head.i], label[token.i]
    if source == target:
        return None
    role = "_".join(w for w in crossed if w and " " not in w) or token.dep_ or "dep"
    return (source, role.replace(" ", "_"), target)


def _roots(doc: Any, label: dict[int, str]) -> tuple[str, ...]:
    """Each sentence's root concept, or its root's content children when the root is none."""
    roots: dict[str, None] = {}
    for sentence in doc.sents:
        root = sentence.root
        if root.i in label:
            roots[label[root.i]] = None
        else:
            for child in root.children:
                if child.i in label:
                    roots[label[child.i]] = None
    return tuple(roots)
