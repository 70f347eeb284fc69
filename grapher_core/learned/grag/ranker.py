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
from grapher_core.learned.grag.checkpoint import (
    check_grag_embeddings,
    default_grag_checkpoint,
    load_grag,
)
from grapher_core.learned.grag.features import (
    DEFAULT_MAX_SCAN,
    GRAPH_MODES,
    PATH_MODES,
    TEXT_MODES,
    neighbour_weights,
    node_texts,
    path_concepts,
)
from grapher_core.learned.grag.model import NeighbourMean
from grapher_core.learned.inputs import (
    as_matrix,
    check_rank_inputs,
    default_embedder_checked,
    object_vectors,
    query_vector,
)
from grapher_core.ranking.base import RankContext
from grapher_core.utils.threads import torch_threads

NOT_EXPECTED_TO_HELP = (
    "g-rag is a faithful reproduction of G-RAG, not expected to improve a strong retriever: "
    "measured here the shipped checkpoint is -3.9 to +1.3 MRR against the retriever's own order "
    "on hotpotqa, 2wikimultihopqa, musique and squad_chunks, never significantly better "
    "(docs/grag.md); use ranker='gcs' or 'gat' to improve retrieval"
)
"""Said once when the shipped checkpoint is loaded: a user who picks g-rag from the README must
not lose to the retriever without being told."""


def _check_options(
    *,
    threads: object,
    concept_format: object,
    concept_field: object,
    text: object,
    graph: object,
    paths: object,
    strict: object,
) -> None:
    """Refuse a bad option before the checkpoint is loaded, naming it and what it may be
    (``threads=True`` would otherwise pass as 1, ``concept_format="xml"`` fail per query)."""
    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
    ):
        raise ConfigError(
            f"GRAGRanker: threads must be a positive integer or None, got {threads!r}"
        )
    if concept_format not in CONCEPT_FORMATS:
        raise ConfigError(
            f"GRAGRanker: concept_format must be one of {CONCEPT_FORMATS}, got {concept_format!r}"
        )
    if not isinstance(concept_field, str) or not concept_field:
        raise ConfigError(
            f"GRAGRanker: concept_field must be a metadata field name, got {concept_field!r}"
        )
    for option, value, allowed in (
        ("text", text, TEXT_MODES),
        ("graph", graph, GRAPH_MODES),
        ("paths", paths, PATH_MODES),
    ):
        if value is not None and value not in allowed:
            raise ConfigError(
                f"GRAGRanker: {option} must be one of {allowed} or None (the checkpoint's), "
                f"got {value!r}"
            )
    if not isinstance(strict, bool):
        raise ConfigError(f"GRAGRanker: strict must be True or False, got {strict!r}")


class GRAGRanker:
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
    """

    name: ClassVar[str] = "g-rag"
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
        _check_options(
            threads=threads,
            concept_format=concept_format,
            concept_field=concept_field,
            text=text,
            graph=graph,
            paths=paths,
            strict=strict,
        )
        if max_pairs is not None and (
            not isinstance(max_pairs, int) or isinstance(max_pairs, bool) or max_pairs < 1
        ):
            raise ConfigError(f"max_pairs must be a positive integer or None, got {max_pairs!r}")
        if (
            not isinstance(concept_cache_size, int)
            or isinstance(concept_cache_size, bool)
            or concept_cache_size < 0
        ):
            raise ConfigError(
                f"concept_cache_size must be a non-negative integer, got {concept_cache_size!r}"
            )
        path = default_grag_checkpoint() if checkpoint is None else checkpoint
        self.model, self.config = load_grag(path, device)
        if checkpoint is None:
            warn_once(NOT_EXPECTED_TO_HELP)
        self.text = self.config.text if text is None else text
        self.graph = self.config.graph if graph is None else graph
        if self.text not in TEXT_MODES:
            raise ConfigError(f"text must be one of {TEXT_MODES}, got {self.text!r}")
        if self.graph not in GRAPH_MODES:
            raise ConfigError(f"graph must be one of {GRAPH_MODES}, got {self.graph!r}")
        self.paths = self.config.paths if paths is None else paths
        if self.paths not in PATH_MODES:
            raise ConfigError(f"paths must be one of {PATH_MODES}, got {self.paths!r}")
        if embedder is not None:
            check_grag_embeddings(
                self.config, self.config.embedding_dim, getattr(embedder, "name", None)
            )
        self.concept_field = concept_field
        self.concept_format = concept_format
        self._embedder = embedder
        self._parser = parser
        self.device = device
        self.threads = threads
        self.strict = strict
        self.max_pairs = max_pairs
        self._concept_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._concept_cache_size = concept_cache_size
        self._questions: OrderedDict[str, ConceptGraph] = OrderedDict()

    # --- lazily built helpers ------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            dim = self.config.embedding_dim
            self._embedder = default_embedder_checked(
                lambda name: check_grag_embeddings(self.config, dim, name)
            )
        return self._embedder

    @property
    def parser(self) -> SpacyConceptParser:
        if self._parser is None:
            self._parser = SpacyConceptParser()
        return self._parser

    def describe(self) -> dict[str, Any]:
        return self.config.to_json()

    # --- ranking -----------------------------------------------------------------------------
    def rank(self, graph: CandidateGraph, seeds: np.ndarray, context: RankContext) -> np.ndarray:
        """One score ``y . x_i`` per candidate, in their order."""
        import torch

        candidates = context.candidates
        n = check_rank_inputs(graph, seeds, context)
        if n == 0:
            return np.zeros(0)
        needs_question = self.text != "plain" or self.graph == "question"
        if needs_question and not context.query:  # also narrows context.query for mypy
            raise InputError(
                f"the g-rag ranker (text={self.text!r}, graph={self.graph!r}) needs "
                "the question text: pass query= to rerank()"
            )
        query = self._query_vector(context)
        question = self.question_graph(context.query) if needs_question and context.query else None
        documents = None
        by_kind_ok = all(k in graph.by_kind for k in ("concept_nodes", "concept_edges"))
        if self.text != "plain" or self.graph == "question" or not by_kind_ok:
            documents = self.document_graphs(candidates)
        edges = neighbour_weights(
            n, documents, question, self.graph, graph.by_kind, max_pairs=self.max_pairs
        )
        x = self.node_features(candidates, documents, question)
        with torch_threads(self.threads, self.device), torch.inference_mode():
            scores = self.model(
                torch.from_numpy(x).to(self.device),
                NeighbourMean.from_weights(edges, self.device),
                None,
                torch.from_numpy(query).to(self.device).reshape(1, -1),
                torch.zeros(n, dtype=torch.long, device=self.device),
            )
        return scores.detach().cpu().numpy().astype(np.float64)

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
        plain = self._document_vectors(candidates)
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
        array = _numeric_rows(vectors, n)
        check_grag_embeddings(self.config, int(array.shape[1]))
        return as_matrix(array, self.config.embedding_dim, "the embedder's vectors", n)

    def _check_dimension(self, size: int) -> None:
        check_grag_embeddings(self.config, size)

    def _query_vector(self, context: RankContext) -> np.ndarray:
        return query_vector(context, lambda: self.embedder, self._check_dimension, "g-rag")

    def _document_vectors(self, candidates: Sequence[Candidate]) -> np.ndarray:
        return object_vectors(
            candidates, self.config.embedding_dim, lambda: self.embedder, self._check_dimension
        )


def _numeric_rows(vectors: Any, n: int) -> np.ndarray:
    """The embedder's answer for ``n`` texts as a 2-d array (its width is checked after)."""
    return as_matrix(vectors, None, f"the embedder's vectors for {n} texts", n)


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
