"""``GRAGRanker``: the concept-graph GCN reranker behind ``ranker="g-rag"`` (G-RAG paper).

Per question: read each candidate's concept graph (metadata, written once at enrichment; parsed
on the fly with a warning when absent), parse the question, build node features (encoder of the
document text + the concept text of its shortest paths from ``question``), edge features
(common concepts / common concept pairs), run the 2-layer GCN and score ``y . x_i``.
The seed scores are not an input: G-RAG reranks the retriever's candidates from text and graph.

With no arguments the checkpoint shipped in the package is loaded (trained on hotpotqa for the
packaged MiniLM; docs/grag.md); it refuses embeddings of another model or dimension.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from grapher_core.candidates import Candidate
from grapher_core.edges.graph import CandidateGraph
from grapher_core.embeddings import Embedder
from grapher_core.enrich.concepts import (
    CONCEPT_FORMATS,
    ConceptGraph,
    SpacyConceptParser,
    read_graph,
    sanitise_texts,
    warn_once,
)
from grapher_core.errors import ConfigError, InputError
from grapher_core.learned.caveats import NOT_EXPECTED_TO_HELP, RankerUnfitWarning
from grapher_core.learned.grag.checkpoint import GRAG, GRAGConfig
from grapher_core.learned.grag.features import (
    DEFAULT_MAX_SCAN,
    GRAPH_MODES,
    PATH_MODES,
    TEXT_MODES,
    neighbour_weights,
    node_texts,
    path_concepts,
)
from grapher_core.learned.grag.model import GRAGNet, NeighbourMean
from grapher_core.learned.inputs import as_matrix
from grapher_core.learned.ranker import FamilyRanker, OnDevice, check_option
from grapher_core.ranking.base import RankContext


class GRAGRanker(FamilyRanker[GRAGNet, GRAGConfig]):
    """A trained G-RAG network as a ``Ranker`` (``ranker="g-rag"``).

    ``checkpoint``: a checkpoint stem (default: the shipped one). ``text``: ``"concepts"``
    (document + concept path text, one encoding per candidate per question: the paper's),
    ``"plain"`` or ``"fast"`` (cached document vectors plus memoised per-concept vectors: no
    per-candidate encoding at query time); default: the checkpoint's. ``graph``: ``"question"``
    (the paper's G_qp overlaps) or ``"documents"`` (question-free; reads the ``SharedConcepts``
    kinds from the candidate graph when present); default: the checkpoint's. ``paths``:
    ``"all"`` (the paper's ``a_i``) or ``"document"`` (the question's own concepts left out of
    ``a_i``); default: the checkpoint's.
    ``concept_field`` / ``concept_format``: where the enrichment stored each concept graph
    (``"concepts"`` list form, or ``"penman"`` AMR). ``strict=True`` raises instead of parsing
    candidates that lack a concept graph.
    ``max_pairs``: the most candidate pairs sharing a concept (counted once per shared concept)
    one question may scan (:data:`~grapher_core.learned.grag.features.DEFAULT_MAX_SCAN`;
    ``None``: no bound); past it ``rank`` raises before allocating. The question graph's edges
    are never listed: memory stays linear in the candidates (docs/reliability.md).
    ``embedder``, ``device`` and ``threads`` as for every learned ranker.
    """

    name: ClassVar[str] = "g-rag"
    caveat: ClassVar[str | None] = NOT_EXPECTED_TO_HELP
    caveat_category: ClassVar[type[Warning]] = RankerUnfitWarning
    #: the concept graph comes from the candidates' metadata, not from the proximities: an
    #: empty proximity graph does not leave the retriever's order (see ``rankers.builds_own_graph``)
    builds_own_graph: ClassVar[bool] = True

    def __init__(
        self,
        checkpoint: str | Path | None = None,
        *,
        text: str | None = None,
        graph: str | None = None,
        paths: str | None = None,
        concept_field: str = "concepts",
        concept_format: str = "concepts",
        embedder: Embedder | None = None,
        parser: SpacyConceptParser | None = None,
        device: str = "cpu",
        threads: int | None = 1,
        strict: bool = False,
        concept_cache_size: int = 100_000,
        max_pairs: int | None = DEFAULT_MAX_SCAN,
    ) -> None:
        owner = type(self).__name__  # options refused before the checkpoint is loaded
        check_option(owner, "concept_format", concept_format, "str", choices=CONCEPT_FORMATS,
                     optional=False)  # fmt: skip
        check_option(owner, "text", text, "str", choices=TEXT_MODES)
        check_option(owner, "graph", graph, "str", choices=GRAPH_MODES)
        check_option(owner, "paths", paths, "str", choices=PATH_MODES)
        if not isinstance(concept_field, str) or not concept_field:
            raise ConfigError(
                f"{owner}: concept_field must be a metadata field name, got {concept_field!r}"
            )
        if not isinstance(strict, bool):
            raise ConfigError(f"{owner}: strict must be True or False, got {strict!r}")
        check_option(owner, "max_pairs", max_pairs, low=1)
        check_option(owner, "concept_cache_size", concept_cache_size, low=0, optional=False)
        super().__init__(GRAG, checkpoint, embedder=embedder, device=device, threads=threads)
        self.text = self.config.text if text is None else text
        self.graph = self.config.graph if graph is None else graph
        self.paths = self.config.paths if paths is None else paths
        self.concept_field = concept_field
        self.concept_format = concept_format
        self._parser = parser
        self.strict = strict
        self.max_pairs = max_pairs
        self._concept_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._concept_cache_size = concept_cache_size
        self._questions: OrderedDict[str, ConceptGraph] = OrderedDict()

    @property
    def parser(self) -> SpacyConceptParser:
        if self._parser is None:
            self._parser = SpacyConceptParser()
        return self._parser

    def score(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        """One score ``y . x_i`` per candidate, in their order."""
        candidates = context.candidates
        n = len(candidates)
        needs_question = self.text != "plain" or self.graph == "question"
        if needs_question and not context.query:  # also narrows context.query for mypy
            raise InputError(
                f"the g-rag ranker (text={self.text!r}, graph={self.graph!r}) needs "
                "the question text: pass query= to rerank()"
            )
        query = self.query_vector(context)
        question = self.question_graph(context.query) if needs_question and context.query else None
        documents = None
        by_kind_ok = all(k in graph.by_kind for k in ("concept_nodes", "concept_edges"))
        if self.text != "plain" or self.graph == "question" or not by_kind_ok:
            documents = self.document_graphs(candidates)
        edges = neighbour_weights(
            n, documents, question, self.graph, graph.by_kind, max_pairs=self.max_pairs
        )
        x = self.node_features(candidates, documents, question)

        def run(tensor: OnDevice) -> Any:
            return self.model(
                tensor(x),
                NeighbourMean.from_weights(edges, self.device),
                None,
                tensor(query).reshape(1, -1),
                tensor(np.zeros(n, dtype=np.int64)),  # one question: every node's
            )

        return self.infer(run)

    def question_graph(self, question: str) -> ConceptGraph:
        cached = self._questions.get(question)
        if cached is None:
            cached = self.parser.parse([question], ["the question"])[0]
            self._questions[question] = cached
            if len(self._questions) > 1024:
                self._questions.popitem(last=False)
        return cached

    def document_graphs(self, candidates: Sequence[Candidate]) -> list[ConceptGraph]:
        """Stored concept graphs; candidates without one are parsed now (warned once)."""
        graphs: list[ConceptGraph | None] = []
        missing: list[int] = []
        for i, candidate in enumerate(candidates):
            value = candidate.metadata.get(self.concept_field)
            if value is None:
                missing.append(i)
                graphs.append(None)
            else:
                graphs.append(read_graph(value, self.concept_format))
        if missing:
            message = (
                f"g-rag: {len(missing)} of {len(candidates)} candidates have no concept "
                f"graph in metadata {self.concept_field!r}; parsing them at query time "
                "(slow: enrich once with `grapher enrich --extractor concepts`)"
            )
            if self.strict:
                raise InputError(message)
            warn_once(
                f"g-rag: candidates without a concept graph in metadata "
                f"{self.concept_field!r} are parsed at query time (slow: enrich once "
                "with `grapher enrich --extractor concepts`)"
            )
            parsed = self.parser.parse(
                [candidates[i].text for i in missing], [candidates[i].id for i in missing]
            )
            for i, parsed_graph in zip(missing, parsed, strict=True):
                graphs[i] = parsed_graph
        return [g if g is not None else ConceptGraph() for g in graphs]

    def node_features(
        self,
        candidates: Sequence[Candidate],
        documents: Sequence[ConceptGraph] | None,
        question: ConceptGraph | None,
    ) -> np.ndarray:
        if self.text == "concepts":
            documents, question = _both(documents, question)
            texts = node_texts([c.text for c in candidates], documents, question, self.paths)
            texts = sanitise_texts(texts, [c.id for c in candidates], "the g-rag ranker")
            return self._checked(self.embedder.embed_documents(texts), len(candidates))
        plain = self.object_vectors(candidates)
        if self.text == "plain":
            return plain
        documents, question = _both(documents, question)
        return fast_features(
            plain,
            [fast_concepts(path_concepts(question, d, self.paths)) for d in documents],
            self._concept_vector,
        )

    def _concept_vector(self, concepts: Sequence[str]) -> np.ndarray:
        """Vectors of concepts, memoised (LRU): repeated concepts cost no encoding."""
        todo = [c for c in dict.fromkeys(concepts) if c not in self._concept_vectors]
        if todo:
            texts = sanitise_texts(todo, None, "the g-rag ranker's concepts")
            vectors = self._checked(self.embedder.embed_documents(texts), len(todo))
            for concept, vector in zip(todo, vectors, strict=True):
                self._concept_vectors[concept] = vector
            while len(self._concept_vectors) > self._concept_cache_size:
                self._concept_vectors.popitem(last=False)
        return np.stack([self._concept_vectors[c] for c in concepts])

    def _checked(self, vectors: Any, n: int) -> np.ndarray:
        """The embedder's answer for ``n`` texts: finite rows of the checkpoint's width."""
        array = as_matrix(vectors, None, f"the embedder's vectors for {n} texts", n)
        self.check_dimension(int(array.shape[1]))
        return array


def _both(
    documents: Sequence[ConceptGraph] | None, question: ConceptGraph | None
) -> tuple[Sequence[ConceptGraph], ConceptGraph]:
    """The concept graphs the concept-text features read; ``rank`` builds both first."""
    if documents is None or question is None:
        raise InputError(
            "g-rag concept-text features need the documents' and the question's concept graphs"
        )
    return documents, question


#: ``text="fast"`` reads the first concepts of ``a_i`` only: the paths are listed shortest first,
#: so these are the concepts nearest the question (the paper's encoder truncates ``a_i`` too).
FAST_MAX_CONCEPTS = 16


def fast_concepts(concepts: Sequence[str]) -> list[str]:
    """The concepts of ``a_i`` the fast variant averages (``question`` left out, capped)."""
    return [c for c in concepts if c != "question"][:FAST_MAX_CONCEPTS]


def fast_features(
    documents: np.ndarray, paths: Sequence[Sequence[str]], concept_vectors: Any
) -> np.ndarray:
    """``normalise(v(p_i) + mean_c v(c))`` over the first :data:`FAST_MAX_CONCEPTS` concepts
    ``c`` of ``a_i``: the fast stand-in for encoding ``concat(p_i, a_i)``."""
    out = documents.astype(np.float32).copy()
    for i, concepts in enumerate(paths):
        chosen = fast_concepts(concepts)
        if chosen:
            out[i] += concept_vectors(chosen).mean(axis=0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms > 0, norms, 1.0)
